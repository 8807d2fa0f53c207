//! Where a waiter's slot is served now, in a Redis Cluster. The server redirects its own
//! blocked clients when their slot moves or the cluster fails; a module's waiter is not
//! blocked on keys, so before it takes its units this module asks the way any command is
//! routed, and answers as the server would (`-MOVED slot endpoint`, `-CLUSTERDOWN …`),
//! writing nothing on a node that does not serve the slot.
//!
//! These questions are asked from a timer or a blocked client's reply callback, where no
//! client's command runs: every call here is one that every server it loads on answers
//! without the calling client's connection, which a module's call lacks (docs/design.md,
//! "Calls outside a client's command"). `CLUSTER SLOTS` is not one of them: Valkey 8.0 to
//! 9.0.0 build its reply through a recording client whose connection has no type, and crash.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};

use redis_module::raw;

/// Where the slot of a waiter's keys is served.
pub enum Serving {
    /// Here: the waiter may take its units.
    Here,
    /// Here, but not now: the slot is migrating away and some of the keys have gone already,
    /// or is being imported here. The waiter waits on until the move completes, as the
    /// server keeps its own blocked clients.
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
        // Who owns the slot, as the server routes by it: CLUSTER NODES lists each node's own
        // slots, from the server's table of owners. (CLUSTER SHARDS lists a shard's slots
        // from its first node, which after a failover can be the old primary, with none.)
        let nodes = Reply(call(
            ctx,
            c"CLUSTER".as_ptr(),
            c"c".as_ptr(),
            c"NODES".as_ptr(),
        ));
        match nodes.text().map(|nodes| slot_owner(&nodes, slot)) {
            // As the server keeps its own blocked clients while their slot migrates away, or
            // is being imported here.
            Some(Owner::Myself | Owner::Importing) => Serving::NotNow,
            Some(Owner::Node(id)) => moved(ctx, slot, &id),
            Some(Owner::Nobody) | None => Serving::Elsewhere(UNSERVED.to_owned()),
        }
    }
}

/// Who serves a slot, from this node's point of view.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// This node, though the key was refused: the slot is migrating away, the key gone.
    Myself,
    /// Another node, but this one is importing the slot from it.
    Importing,
    /// Another node, by its id.
    Node(Vec<u8>),
    /// No node: the slot is unassigned.
    Nobody,
}

/// Who owns `slot` in a `CLUSTER NODES` text: a line a node, `id address flags primary
/// ping pong epoch link slot…`, each slot a number or a range `first-last`; the line whose
/// flags say `myself` also lists the slots it migrates (`[slot->-id]`) and imports
/// (`[slot-<-id]`).
fn slot_owner(nodes: &[u8], slot: i64) -> Owner {
    let mut owner = Owner::Nobody;
    for line in nodes.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut fields = line.split(|&b| b == b' ');
        let (Some(id), Some(flags)) = (fields.next(), fields.nth(1)) else {
            continue;
        };
        let myself = flags.split(|&b| b == b',').any(|flag| flag == b"myself");
        for token in fields.skip(5) {
            if let Some(moving) = token.strip_prefix(b"[") {
                let this_slot = moving
                    .split(|&b| b == b'-')
                    .next()
                    .and_then(number)
                    .is_some_and(|moving| moving == slot);
                if myself && this_slot && moving.windows(3).any(|arrow| arrow == b"-<-") {
                    return Owner::Importing;
                }
                continue;
            }
            let mut bounds = token.splitn(2, |&b| b == b'-').map(number);
            let (first, last) = match (bounds.next(), bounds.next()) {
                (Some(Some(first)), None) => (first, first),
                (Some(Some(first)), Some(Some(last))) => (first, last),
                _ => continue,
            };
            if (first..=last).contains(&slot) {
                owner = if myself {
                    Owner::Myself
                } else {
                    Owner::Node(id.to_vec())
                };
            }
        }
    }
    owner
}

/// A slot number in decimal, as the server writes it.
fn number(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// The redirect to the node `id`, as the server words its own: `MOVED slot endpoint:port`.
/// The endpoint is the one `CLUSTER SHARDS` gives the node, by
/// `cluster-preferred-endpoint-type` (an address, a hostname or `?`); the port the one the
/// server names from outside a client's command (the TLS port under `tls-cluster`).
fn moved(ctx: *mut raw::RedisModuleCtx, slot: i64, id: &[u8]) -> Serving {
    let unserved = || Serving::Elsewhere(UNSERVED.to_owned());
    let Some(call) = (unsafe { raw::RedisModule_Call }) else {
        return unserved();
    };
    // SAFETY: ctx is a live module context; the reply is freed when dropped.
    let shards =
        Reply(unsafe { call(ctx, c"CLUSTER".as_ptr(), c"c".as_ptr(), c"SHARDS".as_ptr()) });
    let endpoint = shards.elements().find_map(|shard| {
        shard
            .field(b"nodes")
            .elements()
            .find(|node| node.field(b"id").text().as_deref() == Some(id))
            .and_then(|node| node.field(b"endpoint").text())
    });
    let port = CString::new(id).ok().and_then(|id| port(ctx, &id));
    let (Some(endpoint), Some(port)) = (endpoint, port) else {
        // A node in the owners' table that no shard lists, or whose address the server does
        // not know yet: there is nowhere to send the client.
        return unserved();
    };
    let moved = format!("MOVED {slot} {}:{port}", String::from_utf8_lossy(&endpoint));
    CString::new(moved).map_or_else(|_| unserved(), Serving::Elsewhere)
}

/// The port the node `id` serves clients on, from the server's own view of it; `None` for a
/// node it does not know, or knows no address of yet.
fn port(ctx: *mut raw::RedisModuleCtx, id: &CStr) -> Option<c_int> {
    let info = unsafe { raw::RedisModule_GetClusterNodeInfo }?;
    let mut port = 0;
    // SAFETY: ctx is live, id a NUL-terminated node name; the address, primary and flags are
    // not asked for (null), so no buffer is written.
    let status = unsafe {
        info(
            ctx,
            id.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut port,
            std::ptr::null_mut(),
        )
    };
    (status == raw::REDISMODULE_OK as c_int).then_some(port)
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

#[cfg(test)]
mod tests {
    use super::{slot_owner, Owner};

    const ME: &str = "07c37dfeb235213a872192d90877d0cd55635b91";
    const OTHER: &str = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";

    /// Two primaries and a replica, as `CLUSTER NODES` prints them, with `myself` on the
    /// first; `mine` is the rest of this node's line (its slots, and what it moves).
    fn nodes(mine: &str) -> String {
        format!(
            "{ME} 127.0.0.1:30001@40001 myself,master - 0 0 1 connected {mine}\n\
             {OTHER} 127.0.0.1:30002@40002,host-b master - 0 1700000000000 2 connected 5461-10922 16000\n\
             67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30003@40003 slave {OTHER} 0 0 2 connected\n"
        )
    }

    #[test]
    fn the_owner_is_the_node_whose_line_lists_the_slot() {
        let text = nodes("0-5460");
        assert_eq!(slot_owner(text.as_bytes(), 0), Owner::Myself);
        assert_eq!(slot_owner(text.as_bytes(), 5460), Owner::Myself);
        assert_eq!(slot_owner(text.as_bytes(), 5461), Owner::Node(OTHER.into()));
        assert_eq!(
            slot_owner(text.as_bytes(), 10922),
            Owner::Node(OTHER.into())
        );
        assert_eq!(
            slot_owner(text.as_bytes(), 16000),
            Owner::Node(OTHER.into())
        );
        assert_eq!(slot_owner(text.as_bytes(), 10923), Owner::Nobody);
        assert_eq!(slot_owner(text.as_bytes(), 16383), Owner::Nobody);
    }

    #[test]
    fn a_slot_imported_here_is_this_node_s_to_wait_on_and_a_migrating_one_still_its_own() {
        let importing = nodes(&format!("0-5460 [5461-<-{OTHER}]"));
        assert_eq!(slot_owner(importing.as_bytes(), 5461), Owner::Importing);
        assert_eq!(
            slot_owner(importing.as_bytes(), 5462),
            Owner::Node(OTHER.into())
        );
        let migrating = nodes(&format!("0-5460 [42->-{OTHER}]"));
        assert_eq!(slot_owner(migrating.as_bytes(), 42), Owner::Myself);
    }

    #[test]
    fn a_line_it_cannot_read_names_no_owner() {
        for text in [
            "",
            "\n\n",
            "garbage",
            "id addr",
            "a b c d e f g h x-y 12-",
            "a b c d e f g h -5",
        ] {
            assert_eq!(slot_owner(text.as_bytes(), 5), Owner::Nobody, "{text:?}");
        }
        assert_eq!(
            slot_owner(b"a b master d e f g h 99999999999999999999 5", 5),
            Owner::Node(b"a".to_vec())
        );
    }
}
