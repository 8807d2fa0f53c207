//! Limiter state in ordinary string keys, read and written through the low-level key API,
//! and the replication of exactly what a write changed.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use crate::args::parse_i64;
use crate::error::Error;
use crate::window::LogBuffer;

/// How a command means to use its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only looks (a peek): the key is opened read-only.
    Read,
    /// May write (a real call, even if it ends up denied).
    Write,
}

/// An open key, closed when dropped.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    /// `None` when a read-only open found no key.
    handle: Option<NonNull<raw::RedisModuleKey>>,
}

impl Key {
    /// Opens `name` in the command's context. `ctx` and `name` must be the live pointers of
    /// the running command.
    pub fn open(
        ctx: *mut raw::RedisModuleCtx,
        name: *mut raw::RedisModuleString,
        access: Access,
    ) -> Result<Key, Error> {
        let mode = match access {
            Access::Read => raw::REDISMODULE_READ,
            Access::Write => raw::REDISMODULE_READ | raw::REDISMODULE_WRITE,
        };
        let open = api(unsafe { raw::RedisModule_OpenKey })?;
        // SAFETY: ctx and name come from the running command; OpenKey returns NULL or a key
        // handle that stays valid until CloseKey (in Drop).
        let handle = NonNull::new(unsafe { open(ctx, name, mode as c_int) });
        Ok(Key { ctx, name, handle })
    }

    /// The key's value read as a decimal integer, `None` if the key does not exist.
    pub fn read_integer(&self) -> Result<Option<i64>, Error> {
        let Some(bytes) = self.read_bytes()? else {
            return Ok(None);
        };
        parse_i64(bytes).map(Some).ok_or(Error::CorruptState)
    }

    /// The key's absolute expiry in Unix milliseconds, `None` if it has none (or no key).
    pub fn expire_at_ms(&self) -> Result<Option<i64>, Error> {
        let Some(handle) = self.handle else {
            return Ok(None);
        };
        let get_expire = api(unsafe { raw::RedisModule_GetAbsExpire })?;
        // SAFETY: handle is an open key.
        let expire = unsafe { get_expire(handle.as_ptr()) };
        Ok((expire != i64::from(raw::REDISMODULE_NO_EXPIRE)).then_some(expire))
    }

    /// The key's string value, `None` if the key does not exist.
    pub fn read_bytes(&self) -> Result<Option<&[u8]>, Error> {
        let Some(handle) = self.handle else {
            return Ok(None);
        };
        let key_type = api(unsafe { raw::RedisModule_KeyType })?;
        let dma = api(unsafe { raw::RedisModule_StringDMA })?;
        // SAFETY: handle is an open key. StringDMA on a string key returns a pointer to its
        // `len` bytes, valid until the key is modified or closed; the returned slice borrows
        // self, so it cannot outlive the key or overlap a write (which takes &mut self).
        unsafe {
            match key_type(handle.as_ptr()) as isize {
                raw::REDISMODULE_KEYTYPE_EMPTY => Ok(None),
                raw::REDISMODULE_KEYTYPE_STRING => {
                    let mut len = 0usize;
                    let ptr = dma(handle.as_ptr(), &mut len, raw::REDISMODULE_READ as c_int);
                    if ptr.is_null() {
                        return Err(Error::Internal);
                    }
                    Ok(Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len)))
                }
                _ => Err(Error::WrongType),
            }
        }
    }

    /// CL.THROTTLE's write, made as `SET key value PXAT expire_at_ms` would make it: the value
    /// in decimal, the absolute expiry, and that very command propagated, so that replicas
    /// and the AOF hold identical bytes and expiry whatever their own clocks say. Its events
    /// are the caller's.
    pub fn set_integer(&mut self, value: i64, expire_at_ms: i64) -> Result<(), Error> {
        let mut digits = [0u8; 20];
        let text = decimal(value, &mut digits);
        let made = self.put(text)?;
        self.expire_at(expire_at_ms)?;
        let value = match &made {
            Some(string) => Value::Shared(string.0),
            None => Value::Bytes(text),
        };
        replicate_set_pxat(self.ctx, self.name, value, expire_at_ms)
    }

    /// Stores `value` in decimal with the given expiry. Events and propagation are the
    /// caller's.
    pub fn write_integer(&mut self, value: i64, expiry: Expiry) -> Result<(), Error> {
        let mut digits = [0u8; 20];
        self.put(decimal(value, &mut digits))?;
        match expiry {
            Expiry::At(ms) => self.expire_at(ms),
            Expiry::Unchanged => self.signal_modified(),
        }
    }

    /// Stores `value` as the key's string. An empty key gets a string object made for it,
    /// returned so that a propagation can share it: one allocation, where growing an empty
    /// key takes two and propagating its bytes a third. A key that holds a string is
    /// overwritten in place.
    fn put(&mut self, value: &[u8]) -> Result<Option<OwnedString>, Error> {
        let handle = self.handle.ok_or(Error::Internal)?;
        let key_type = api(unsafe { raw::RedisModule_KeyType })?;
        // SAFETY: handle is an open key.
        if unsafe { key_type(handle.as_ptr()) } as isize != raw::REDISMODULE_KEYTYPE_EMPTY {
            self.resize(value.len())?;
            self.bytes_mut()?.copy_from_slice(value);
            return Ok(None);
        }
        let string = OwnedString::new(value)?;
        let set = api(unsafe { raw::RedisModule_StringSet })?;
        // SAFETY: handle is an empty key opened for writing; the server takes its own
        // reference to the string.
        succeeded(unsafe { set(handle.as_ptr(), string.0) })?;
        Ok(Some(string))
    }

    /// Sets the absolute expiry of a key just written, and tells the server the key changed.
    pub fn expire_at(&mut self, expire_at_ms: i64) -> Result<(), Error> {
        let handle = self.handle.ok_or(Error::Internal)?;
        let set_expire = api(unsafe { raw::RedisModule_SetAbsExpire })?;
        // SAFETY: handle is a key opened for writing that holds a string (just written).
        succeeded(unsafe { set_expire(handle.as_ptr(), expire_at_ms) })?;
        self.signal_modified()
    }

    /// Tells the server the key changed (WATCH, client-side caching). Closes every write.
    fn signal_modified(&mut self) -> Result<(), Error> {
        let signal = api(unsafe { raw::RedisModule_SignalModifiedKey })?;
        // SAFETY: ctx and name are the running command's.
        unsafe { signal(self.ctx, self.name) };
        Ok(())
    }

    /// Fires a keyspace event on this key, as the server's own commands do after a write. It
    /// comes after the write and its propagation, and cannot undo either: a failure to notify
    /// is the server's to report, not a reason to fail a call that has taken its units.
    pub fn notify(&self, event: Event) {
        let (class, name) = event.class_and_name();
        // SAFETY: ctx and name are the running command's; the event name is a static C string.
        unsafe {
            if let Some(fire) = raw::RedisModule_NotifyKeyspaceEvent {
                fire(self.ctx, class, name.as_ptr(), self.name);
            }
        }
    }
}

/// The keyspace events a write fires: those of the server commands it stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `set`, as SET fires it.
    Set,
    /// `incrby`, as INCR and INCRBY fire it.
    IncrBy,
    /// `expire`, as EXPIRE and SET with an expiry fire it.
    Expire,
    /// `cl.window`: no server command keeps a sliding window log, so it is named after ours.
    WindowLog,
}

impl Event {
    fn class_and_name(self) -> (i32, &'static CStr) {
        match self {
            Event::Set => (raw::REDISMODULE_NOTIFY_STRING, c"set"),
            Event::IncrBy => (raw::REDISMODULE_NOTIFY_STRING, c"incrby"),
            Event::Expire => (raw::REDISMODULE_NOTIFY_GENERIC, c"expire"),
            Event::WindowLog => (raw::REDISMODULE_NOTIFY_STRING, c"cl.window"),
        }
    }
}

/// The expiry a write leaves on its key, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Expire at this instant.
    At(i64),
    /// Keep the expiry the key has: an in-place write keeps it, and setting it again would
    /// cost an expiry-table update for nothing.
    Unchanged,
}

/// A key opened for writing, holding a string or nothing (checked by the read that precedes
/// every write), seen as a resizable byte buffer.
impl LogBuffer for Key {
    fn bytes_mut(&mut self) -> Result<&mut [u8], Error> {
        let handle = self.handle.ok_or(Error::Internal)?;
        let dma = api(unsafe { raw::RedisModule_StringDMA })?;
        let mut len = 0usize;
        // SAFETY: StringDMA in write mode returns the key's `len` bytes, writable until the
        // key is resized or closed; the slice borrows self mutably, so neither can happen
        // while it lives.
        unsafe {
            let ptr = dma(handle.as_ptr(), &mut len, raw::REDISMODULE_WRITE as c_int);
            if ptr.is_null() {
                return Err(Error::Internal);
            }
            if len == 0 {
                return Ok(&mut []);
            }
            Ok(std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len))
        }
    }

    fn resize(&mut self, len: usize) -> Result<(), Error> {
        let handle = self.handle.ok_or(Error::Internal)?;
        let truncate = api(unsafe { raw::RedisModule_StringTruncate })?;
        // SAFETY: handle is a key opened for writing; StringTruncate creates the string if
        // the key is empty.
        succeeded(unsafe { truncate(handle.as_ptr(), len) })
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if let (Some(handle), Some(close)) = (self.handle, unsafe { raw::RedisModule_CloseKey }) {
            // SAFETY: handle came from OpenKey and is closed exactly once.
            unsafe { close(handle.as_ptr()) };
        }
    }
}

/// A word every propagated write of some kind carries, made once at load: made per call, it
/// costs a string object to build and to free each time. The server only takes references
/// to it, as it does to its own shared strings.
pub struct Word {
    text: &'static CStr,
    string: AtomicPtr<raw::RedisModuleString>,
}

impl Word {
    const fn new(text: &'static CStr) -> Word {
        Word {
            text,
            string: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The word's string, made at load.
    pub fn get(&self) -> Result<*mut raw::RedisModuleString, Error> {
        let string = self.string.load(Ordering::Relaxed);
        if string.is_null() {
            Err(Error::Internal)
        } else {
            Ok(string)
        }
    }
}

pub static PXAT: Word = Word::new(c"PXAT");
pub static AT: Word = Word::new(c"AT");
const WORDS: [&Word; 2] = [&PXAT, &AT];

/// Makes the words, once, from OnLoad.
pub fn make_words() -> Result<(), String> {
    for word in WORDS {
        let string = OwnedString::new(word.text.to_bytes())
            .map_err(|_| format!("could not make the string {}", word.text.to_string_lossy()))?;
        // Kept until free_words takes it back.
        word.string.store(string.0, Ordering::Relaxed);
        std::mem::forget(string);
    }
    Ok(())
}

/// Frees the words, from OnUnload (and from a failed OnLoad).
pub fn free_words() {
    for word in WORDS {
        let string = word.string.swap(ptr::null_mut(), Ordering::Relaxed);
        if !string.is_null() {
            drop(OwnedString(string));
        }
    }
}

/// A string object this module made and frees.
struct OwnedString(*mut raw::RedisModuleString);

impl OwnedString {
    fn new(text: &[u8]) -> Result<OwnedString, Error> {
        let create = api(unsafe { raw::RedisModule_CreateString })?;
        // SAFETY: a NULL context makes a string the module owns until it frees it; text is a
        // live buffer of that length.
        let string = unsafe { create(ptr::null_mut(), text.as_ptr().cast(), text.len()) };
        if string.is_null() {
            return Err(Error::Internal);
        }
        Ok(OwnedString(string))
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        // SAFETY: made by CreateString with a NULL context, and freed once; whatever else
        // holds it (a key, a propagated command) holds its own reference.
        unsafe {
            if let Some(free) = raw::RedisModule_FreeString {
                free(ptr::null_mut(), self.0);
            }
        }
    }
}

/// A value to propagate: a string object the key holds too, or bytes to copy.
enum Value<'a> {
    Shared(*mut raw::RedisModuleString),
    Bytes(&'a [u8]),
}

fn replicate_set_pxat(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    value: Value,
    expire_at_ms: i64,
) -> Result<(), Error> {
    let replicate = api(unsafe { raw::RedisModule_Replicate })?;
    // The expiry goes as text formatted here: the server's own long-long argument costs it
    // two allocations, a buffer one.
    let mut digits = [0u8; 20];
    let expire_at = decimal(expire_at_ms, &mut digits);
    let pxat = PXAT.get()?;
    // SAFETY: the formats take, in order, a RedisModuleString (the key), the value (a
    // RedisModuleString for "s", a buffer and its length for "b"), a RedisModuleString, and
    // a buffer and its length, which is exactly what follows each.
    let status = unsafe {
        match value {
            Value::Shared(string) => replicate(
                ctx,
                PROPAGATED_AS.as_ptr(),
                c"sssb".as_ptr(),
                name,
                string,
                pxat,
                expire_at.as_ptr(),
                expire_at.len(),
            ),
            Value::Bytes(bytes) => replicate(
                ctx,
                PROPAGATED_AS.as_ptr(),
                c"sbsb".as_ptr(),
                name,
                bytes.as_ptr(),
                bytes.len(),
                pxat,
                expire_at.as_ptr(),
                expire_at.len(),
            ),
        }
    };
    succeeded(status)
}

/// What CL.THROTTLE's writes propagate as; the other commands propagate themselves.
const PROPAGATED_AS: &CStr = c"SET";

/// Checks at load time that the command writes are propagated as resolves, so that no write
/// can be made that replicas and the AOF would never see: `rename-command` in redis.conf
/// (applied before modules load, and fixed from then on) can rename or disable it. The check
/// calls it with no arguments, which the server refuses for its arity when the command exists
/// and as unknown when it does not, running nothing either way; `E` has the refusal come back
/// as an error reply to read.
pub fn check_propagation(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let no_api = |_| "the server lacks RedisModule_Call".to_owned();
    let call = api(unsafe { raw::RedisModule_Call }).map_err(no_api)?;
    let free = api(unsafe { raw::RedisModule_FreeCallReply }).map_err(no_api)?;
    let text = api(unsafe { raw::RedisModule_CallReplyStringPtr }).map_err(no_api)?;
    // SAFETY: called from OnLoad with the module's context; the format "E" takes no arguments.
    // The reply's text is read while the reply lives, and the reply freed once.
    let unknown = unsafe {
        let reply = call(ctx, PROPAGATED_AS.as_ptr(), c"E".as_ptr());
        if reply.is_null() {
            return Err("the server refused a probe of its SET command".to_owned());
        }
        let mut len = 0usize;
        let ptr = text(reply, &mut len);
        let unknown = !ptr.is_null()
            && std::slice::from_raw_parts(ptr.cast::<u8>(), len)
                .windows(b"unknown command".len())
                .any(|w| w.eq_ignore_ascii_case(b"unknown command"));
        free(reply);
        unknown
    };
    if unknown {
        let name = PROPAGATED_AS.to_string_lossy();
        return Err(format!(
            "the server has no {name} command (renamed or disabled by rename-command?), and CL.THROTTLE's writes reach replicas and the AOF as {name}"
        ));
    }
    Ok(())
}

/// `value` in decimal, written from the right end of `buf` (20 bytes hold any i64), two
/// digits at a time: every write formats two or three 13- to 19-digit numbers.
pub(crate) fn decimal(value: i64, buf: &mut [u8; 20]) -> &[u8] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut magnitude = value.unsigned_abs();
    let mut start = buf.len();
    while magnitude >= 10 {
        let pair = (magnitude % 100) as usize * 2;
        magnitude /= 100;
        start -= 2;
        buf[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if magnitude > 0 || start == buf.len() {
        start -= 1;
        buf[start] = b'0' + magnitude as u8;
    }
    if value < 0 {
        start -= 1;
        buf[start] = b'-';
    }
    &buf[start..]
}

/// A module API call's status as a result: anything but OK is a defect here, since every
/// call is made on a key and arguments already checked.
pub(crate) fn succeeded(status: c_int) -> Result<(), Error> {
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err(Error::Internal)
    }
}

/// A module API function, or `Internal` if this server lacks it. Every one used here exists
/// on Redis 7.0 and later; the check keeps an unexpected server from crashing.
pub(crate) fn api<F>(function: Option<F>) -> Result<F, Error> {
    function.ok_or(Error::Internal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn decimal_matches_the_standard_formatting_and_parses_back(value: i64) {
            let mut buf = [0u8; 20];
            let text = decimal(value, &mut buf);
            let expected = value.to_string();
            prop_assert_eq!(text, expected.as_bytes());
            prop_assert_eq!(parse_i64(text), Some(value));
        }
    }

    #[test]
    fn decimal_handles_the_extremes() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(i64::MIN, &mut buf), b"-9223372036854775808");
        assert_eq!(decimal(0, &mut buf), b"0");
    }
}
