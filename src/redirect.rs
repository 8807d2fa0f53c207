//! Where a waiter's slot is served now, in a Redis Cluster. The server redirects its own
//! blocked clients when their slot moves or the cluster fails; a module's waiter is not
//! blocked on keys, so before it takes its units this module asks the way any command is
//! routed, and answers as the server would (`-MOVED slot endpoint`, `-CLUSTERDOWN …`),
//! writing nothing on a node that does not serve the slot.
//!
//! These questions are asked from a timer or a blocked client's reply callback, where the
//! server has no client of its own running: every call here is one that reads nothing of the
//! calling client's connection, which a module's call lacks (docs/design.md, "Calls outside a
//! client's command"). `CLUSTER SLOTS` is not one of them: Valkey 8.0 to 9.0.0 build its reply
//! through a recording client whose connection has no type, and crash.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};

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

const DOWN: &CStr = c"CLUSTERDOWN The cluster is down";
const UNSERVED: &CStr = c"CLUSTERDOWN Hash slot not served";

/// Asks where the slot of `keys` (a waiter's, all in one slot) is served.
pub fn serving(ctx: *mut raw::RedisModuleCtx, keys: &[*mut raw::RedisModuleString]) -> Serving {
    let Some(&first) = keys.first() else {
        return Serving::Here;
    };
    // SAFETY: ctx is a live module context outside a command (a timer's, a reply callback's),
    // the keys live strings; every reply is freed once, after its last use.
    unsafe {
        let Some(call) = raw::RedisModule_Call else {
            return Serving::Here;
        };
        // A failed cluster answers its blocked clients so, whatever reads it still allows.
        let info = Reply(call(
            ctx,
            c"CLUSTER".as_ptr(),
            c"c".as_ptr(),
            c"INFO".as_ptr(),
        ));
        if !info
            .text()
            .is_some_and(|info| info.windows(16).any(|line| line == b"cluster_state:ok"))
        {
            return Serving::Elsewhere(DOWN.to_owned());
        }
        // A module's own call is routed as a client's: it fails unless every key is served
        // here (a moved slot, a migration under way with some keys gone).
        let exists = Reply(call(
            ctx,
            c"EXISTS".as_ptr(),
            c"v".as_ptr(),
            keys.as_ptr(),
            keys.len(),
        ));
        if !exists.0.is_null() {
            return Serving::Here;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::PermissionDenied {
            return Serving::Elsewhere(DOWN.to_owned());
        }
        let slot = Reply(call(
            ctx,
            c"CLUSTER".as_ptr(),
            c"cs".as_ptr(),
            c"KEYSLOT".as_ptr(),
            first,
        ));
        let Some(slot) = slot.integer() else {
            return Serving::Elsewhere(UNSERVED.to_owned());
        };
        let shards = Reply(call(
            ctx,
            c"CLUSTER".as_ptr(),
            c"c".as_ptr(),
            c"SHARDS".as_ptr(),
        ));
        owner(ctx, &shards, slot)
    }
}

/// Who serves `slot`, from a `CLUSTER SHARDS` reply: `[{slots: [start, end, …], nodes:
/// [{id, endpoint, …}, …]}, …]`, each map a flat array of names and values in RESP2. The
/// shard whose ranges hold the slot serves it through its primary, which the server's own
/// view of the node names (as the MOVED it gives names the slot's owner); the endpoint is
/// the one the server names in its redirects, by `cluster-preferred-endpoint-type`.
fn owner(ctx: *mut raw::RedisModuleCtx, shards: &Reply, slot: i64) -> Serving {
    let unserved = || Serving::Elsewhere(UNSERVED.to_owned());
    let Some(shard) = shards
        .elements()
        .find(|shard| holds(&shard.field(b"slots"), slot))
    else {
        return unserved();
    };
    let primary = shard
        .field(b"nodes")
        .elements()
        .filter_map(|node| {
            let id = CString::new(node.field(b"id").text()?).ok()?;
            let endpoint = node.field(b"endpoint").text()?;
            let (port, flags) = node_info(ctx, &id)?;
            (flags & raw::REDISMODULE_NODE_MASTER as c_int != 0).then_some((endpoint, port, flags))
        })
        // A primary the cluster holds failed has handed its slots on, or soon will.
        .min_by_key(|&(_, _, flags)| flags & raw::REDISMODULE_NODE_FAIL as c_int != 0);
    let Some((endpoint, port, flags)) = primary else {
        return unserved();
    };
    if flags & raw::REDISMODULE_NODE_MYSELF as c_int != 0 {
        return Serving::NotNow;
    }
    let moved = format!("MOVED {slot} {}:{port}", String::from_utf8_lossy(&endpoint));
    CString::new(moved).map_or_else(|_| unserved(), Serving::Elsewhere)
}

/// Whether a shard's `slots`, pairs of first and last slot, hold `slot`.
fn holds(ranges: &impl Read, slot: i64) -> bool {
    let mut bounds = ranges.elements().map(|bound| bound.integer());
    while let (Some(Some(start)), Some(Some(end))) = (bounds.next(), bounds.next()) {
        if (start..=end).contains(&slot) {
            return true;
        }
    }
    false
}

/// The port a node serves clients on, as the server names it in its redirects from outside a
/// client's command (the TLS port under `tls-cluster`), and the node's flags
/// (`REDISMODULE_NODE_…`), from the server's own view of the node; `None` for a node it does
/// not know, or knows no address of yet.
fn node_info(ctx: *mut raw::RedisModuleCtx, id: &CStr) -> Option<(c_int, c_int)> {
    let info = unsafe { raw::RedisModule_GetClusterNodeInfo }?;
    let (mut port, mut flags) = (0, 0);
    // SAFETY: ctx is live, id a NUL-terminated node name; the address and primary are not
    // asked for (null), so no buffer is written.
    let status = unsafe {
        info(
            ctx,
            id.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut port,
            &mut flags,
        )
    };
    (status == raw::REDISMODULE_OK as c_int).then_some((port, flags))
}

/// A reply of the module's own call, freed when dropped; null where the call failed. Its
/// elements are borrowed views, freed with it.
struct Reply(*mut raw::RedisModuleCallReply);

impl Drop for Reply {
    fn drop(&mut self) {
        if let (false, Some(free)) = (self.0.is_null(), unsafe { raw::RedisModule_FreeCallReply }) {
            // SAFETY: the reply is the call's, freed once, here; its elements are not.
            unsafe { free(self.0) };
        }
    }
}

/// An element of a reply, alive as long as the reply.
#[derive(Clone, Copy)]
struct Element<'a>(
    *mut raw::RedisModuleCallReply,
    std::marker::PhantomData<&'a Reply>,
);

/// Reading a reply or one of its elements: its kind, its elements, its integer or text.
trait Read {
    fn raw(&self) -> *mut raw::RedisModuleCallReply;

    /// How many elements an array has; 0 for anything else, or none.
    fn length(&self) -> usize {
        let reply = self.raw();
        // SAFETY: reads a live reply, or none.
        unsafe {
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
    }

    fn elements(&self) -> impl Iterator<Item = Element<'_>> {
        let reply = self.raw();
        let element = unsafe { raw::RedisModule_CallReplyArrayElement };
        (0..self.length()).filter_map(move |index| {
            // SAFETY: index is below the array's length.
            let element = unsafe { element?(reply, index) };
            (!element.is_null()).then_some(Element(element, std::marker::PhantomData))
        })
    }

    /// The value after `name` in a map sent as a flat array of names and values; a null
    /// element where there is none.
    fn field(&self, name: &[u8]) -> Element<'_> {
        let mut elements = self.elements();
        while let (Some(key), Some(value)) = (elements.next(), elements.next()) {
            if key.text().as_deref() == Some(name) {
                return value;
            }
        }
        Element(std::ptr::null_mut(), std::marker::PhantomData)
    }

    fn integer(&self) -> Option<i64> {
        let reply = self.raw();
        // SAFETY: reads a live reply, or none.
        unsafe {
            let (Some(kind), Some(integer)) = (
                raw::RedisModule_CallReplyType,
                raw::RedisModule_CallReplyInteger,
            ) else {
                return None;
            };
            (!reply.is_null() && kind(reply) as isize == raw::REDISMODULE_REPLY_INTEGER)
                .then(|| integer(reply))
        }
    }

    /// The bytes of a string, simple or bulk (and an error's text).
    fn text(&self) -> Option<Vec<u8>> {
        let reply = self.raw();
        let ptr_len = unsafe { raw::RedisModule_CallReplyStringPtr }?;
        if reply.is_null() {
            return None;
        }
        let mut len = 0usize;
        // SAFETY: reads a live reply; the bytes are copied while it lives.
        unsafe {
            let ptr: *const c_char = ptr_len(reply, &mut len);
            (!ptr.is_null()).then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec())
        }
    }
}

impl Read for Reply {
    fn raw(&self) -> *mut raw::RedisModuleCallReply {
        self.0
    }
}

impl Read for Element<'_> {
    fn raw(&self) -> *mut raw::RedisModuleCallReply {
        self.0
    }
}
