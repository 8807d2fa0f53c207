//! Where a waiter's slot is served now, in a Redis Cluster. The server redirects its own
//! blocked clients when their slot moves or the cluster fails; a module's waiter is not
//! blocked on keys, so before it takes its units this module asks the way any command is
//! routed, and answers as the server would (`-MOVED slot endpoint`, `-CLUSTERDOWN …`),
//! writing nothing on a node that does not serve the slot.

use std::ffi::CString;
use std::os::raw::c_char;

use redis_module::raw;

/// Where the slot of a waiter's keys is served.
pub enum Serving {
    /// Here: the waiter may take its units.
    Here,
    /// Here, but not now: the slot is being migrated and some of the keys have gone already.
    /// The waiter waits on, as the server's own blocked clients do until the move completes.
    NotNow,
    /// Elsewhere, or nowhere: the error the client gets, `MOVED …` or `CLUSTERDOWN …`, as the
    /// server answers its own blocked clients.
    Elsewhere(CString),
}

const DOWN: &std::ffi::CStr = c"CLUSTERDOWN The cluster is down";
const UNSERVED: &std::ffi::CStr = c"CLUSTERDOWN Hash slot not served";

/// Asks where the slot of `keys` (a waiter's, all in one slot) is served.
pub fn serving(ctx: *mut raw::RedisModuleCtx, keys: &[*mut raw::RedisModuleString]) -> Serving {
    let Some(&first) = keys.first() else {
        return Serving::Here;
    };
    // SAFETY: ctx is a live module context outside a command (a timer's), the keys live
    // strings; every reply is freed once, after its last use.
    unsafe {
        let (Some(call), Some(free)) = (raw::RedisModule_Call, raw::RedisModule_FreeCallReply)
        else {
            return Serving::Here;
        };
        // A failed cluster answers its blocked clients so, whatever reads it still allows.
        let info = call(ctx, c"CLUSTER".as_ptr(), c"c".as_ptr(), c"INFO".as_ptr());
        let up =
            text(info).is_some_and(|info| info.windows(16).any(|line| line == b"cluster_state:ok"));
        if !info.is_null() {
            free(info);
        }
        if !up {
            return Serving::Elsewhere(DOWN.to_owned());
        }
        // A module's own call is routed as a client's: it fails unless every key is served
        // here (a moved slot, a migration under way with some keys gone).
        let exists = call(
            ctx,
            c"EXISTS".as_ptr(),
            c"v".as_ptr(),
            keys.as_ptr(),
            keys.len(),
        );
        if !exists.is_null() {
            free(exists);
            return Serving::Here;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::PermissionDenied {
            return Serving::Elsewhere(DOWN.to_owned());
        }
        let slot = call(
            ctx,
            c"CLUSTER".as_ptr(),
            c"cs".as_ptr(),
            c"KEYSLOT".as_ptr(),
            first,
        );
        let slots = call(ctx, c"CLUSTER".as_ptr(), c"c".as_ptr(), c"SLOTS".as_ptr());
        let serving = match integer(slot) {
            Some(slot) => owner(slots, slot),
            None => Serving::Elsewhere(UNSERVED.to_owned()),
        };
        for reply in [slot, slots] {
            if !reply.is_null() {
                free(reply);
            }
        }
        serving
    }
}

/// The owner of `slot` in a `CLUSTER SLOTS` reply: `[[start, end, [endpoint, port, id, …],
/// replicas…], …]`.
unsafe fn owner(slots: *mut raw::RedisModuleCallReply, slot: i64) -> Serving {
    let down = || Serving::Elsewhere(UNSERVED.to_owned());
    for index in 0..length(slots) {
        let range = element(slots, index);
        let (Some(start), Some(end)) = (integer(element(range, 0)), integer(element(range, 1)))
        else {
            continue;
        };
        if !(start..=end).contains(&slot) {
            continue;
        }
        let primary = element(range, 2);
        let (Some(endpoint), Some(port), Some(id)) = (
            text(element(primary, 0)),
            integer(element(primary, 1)),
            text(element(primary, 2)),
        ) else {
            return down();
        };
        if is_myself(&id) {
            return Serving::NotNow;
        }
        let moved = format!("MOVED {slot} {}:{port}", String::from_utf8_lossy(&endpoint));
        return CString::new(moved).map_or_else(|_| down(), Serving::Elsewhere);
    }
    down()
}

/// How many elements an array reply has; 0 for anything else, or none.
unsafe fn length(reply: *mut raw::RedisModuleCallReply) -> usize {
    let (Some(kind), Some(length)) = (
        raw::RedisModule_CallReplyType,
        raw::RedisModule_CallReplyLength,
    ) else {
        return 0;
    };
    if reply.is_null() || kind(reply) as isize != raw::REDISMODULE_REPLY_ARRAY {
        return 0;
    }
    length(reply)
}

/// The array reply's element at `index`, or null when there is none.
unsafe fn element(
    reply: *mut raw::RedisModuleCallReply,
    index: usize,
) -> *mut raw::RedisModuleCallReply {
    match raw::RedisModule_CallReplyArrayElement {
        Some(element) if index < length(reply) => element(reply, index),
        _ => std::ptr::null_mut(),
    }
}

fn is_myself(id: &[u8]) -> bool {
    // SAFETY: the node's id is 40 bytes, whether or not a NUL follows them.
    unsafe {
        let Some(my_id) = raw::RedisModule_GetMyClusterID.map(|get| get()) else {
            return false;
        };
        !my_id.is_null() && std::slice::from_raw_parts(my_id.cast::<u8>(), 40) == id
    }
}

unsafe fn integer(reply: *mut raw::RedisModuleCallReply) -> Option<i64> {
    let (Some(kind), Some(integer)) = (
        raw::RedisModule_CallReplyType,
        raw::RedisModule_CallReplyInteger,
    ) else {
        return None;
    };
    (!reply.is_null() && kind(reply) as isize == raw::REDISMODULE_REPLY_INTEGER)
        .then(|| integer(reply))
}

unsafe fn text(reply: *mut raw::RedisModuleCallReply) -> Option<Vec<u8>> {
    let ptr_len = raw::RedisModule_CallReplyStringPtr?;
    if reply.is_null() {
        return None;
    }
    let mut len = 0usize;
    let ptr: *const c_char = ptr_len(reply, &mut len);
    (!ptr.is_null()).then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec())
}
