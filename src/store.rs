//! Limiter state in ordinary string keys, read and written through the low-level key API.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::NonNull;

use redis_module::raw;

use crate::bytes::{ByteBuffer, MAX_VALUE_LEN};
use crate::decimal::{decimal, parse_i64};
use crate::error::Error;
use crate::ffi::{api, succeeded};
use crate::strings::OwnedString;

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
    /// in decimal (formatted into `digits`) and the absolute expiry. Returns what was written,
    /// for the `SET` that propagates it; its events are the caller's.
    pub fn set_integer<'d>(
        &mut self,
        value: i64,
        expire_at_ms: i64,
        digits: &'d mut [u8; 20],
    ) -> Result<Written<'d>, Error> {
        self.set(decimal(value, digits), expire_at_ms)
    }

    /// A write made as `SET key value PXAT expire_at_ms` would make it. Returns what was
    /// written, for the `SET` that propagates it; its events are the caller's.
    pub fn set<'v>(&mut self, value: &'v [u8], expire_at_ms: i64) -> Result<Written<'v>, Error> {
        let made = self.put(value)?;
        self.expire_at(expire_at_ms)?;
        Ok(match made {
            Some(string) => Written::Made(string),
            None => Written::InPlace(value),
        })
    }

    /// The key's name, as the command holds it.
    pub fn name(&self) -> *mut raw::RedisModuleString {
        self.name
    }

    /// Stores `value` in decimal with the given expiry. Events and propagation are the
    /// caller's.
    pub fn write_integer(&mut self, value: i64, expiry: Expiry) -> Result<(), Error> {
        let mut digits = [0u8; 20];
        self.put(decimal(value, &mut digits))?;
        self.set_expiry(expiry)
    }

    /// Closes a write of the key's value: sets its expiry, or leaves it as it is, and tells
    /// the server the key changed.
    pub fn set_expiry(&mut self, expiry: Expiry) -> Result<(), Error> {
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
        succeeded(unsafe { set(handle.as_ptr(), string.as_ptr()) })?;
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

    /// Deletes the key, as the server deletes a container whose last element went.
    pub fn delete(&mut self) -> Result<(), Error> {
        let handle = self.handle.ok_or(Error::Internal)?;
        let delete = api(unsafe { raw::RedisModule_DeleteKey })?;
        // SAFETY: handle is a key opened for writing.
        succeeded(unsafe { delete(handle.as_ptr()) })?;
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

/// A value a write stored, for the command that propagates it: the string object made for an
/// empty key, which the propagation shares, or the bytes written into the one it held.
pub enum Written<'a> {
    Made(OwnedString),
    InPlace(&'a [u8]),
}

/// The keyspace events a write fires: those of the server commands it stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `set`, as SET fires it.
    Set,
    /// `incrby`, as INCR and INCRBY fire it.
    IncrBy,
    /// `decrby`, as DECRBY fires it.
    DecrBy,
    /// `expire`, as EXPIRE and SET with an expiry fire it.
    Expire,
    /// `cl.window`: no server command keeps a sliding window log, so it is named after ours.
    WindowLog,
    /// `cl.lease` and `cl.release`, for a set of leases, named after ours for the same reason.
    Lease,
    Release,
    /// `del`, as the server fires it for a container whose last element went.
    Del,
    /// `cl.ban` and `cl.unban`, for a key locked out and let in again, named after ours.
    Ban,
    Unban,
}

impl Event {
    fn class_and_name(self) -> (i32, &'static CStr) {
        match self {
            Event::Set => (raw::REDISMODULE_NOTIFY_STRING, c"set"),
            Event::IncrBy => (raw::REDISMODULE_NOTIFY_STRING, c"incrby"),
            Event::DecrBy => (raw::REDISMODULE_NOTIFY_STRING, c"decrby"),
            Event::Expire => (raw::REDISMODULE_NOTIFY_GENERIC, c"expire"),
            Event::WindowLog => (raw::REDISMODULE_NOTIFY_STRING, c"cl.window"),
            Event::Lease => (raw::REDISMODULE_NOTIFY_STRING, c"cl.lease"),
            Event::Release => (raw::REDISMODULE_NOTIFY_STRING, c"cl.release"),
            Event::Del => (raw::REDISMODULE_NOTIFY_GENERIC, c"del"),
            Event::Ban => (raw::REDISMODULE_NOTIFY_STRING, c"cl.ban"),
            Event::Unban => (raw::REDISMODULE_NOTIFY_STRING, c"cl.unban"),
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
impl ByteBuffer for Key {
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

    /// Makes the key's string exactly `len` bytes long, its allocation too: the server grows
    /// a string to twice what it asks for, and gives the room back only when cutting it
    /// leaves more than half free. So the string is first grown past twice `len` (when it is
    /// not that long already), then cut to `len`, which has the server reallocate it to its
    /// size. The same key and object throughout: its expiry, LRU/LFU and events stay as
    /// they are.
    fn reallocate(&mut self, len: usize) -> Result<(), Error> {
        let current = self.bytes_mut()?.len();
        // An empty key is made at its size.
        if current > 0 && current <= len.saturating_mul(2) {
            self.resize(len.saturating_mul(2).saturating_add(1).min(MAX_VALUE_LEN))?;
        }
        self.resize(len)
    }

    /// The empty key is given a string made of `bytes`, so that its `new` keyspace event
    /// comes with its value.
    fn fill_empty(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if !self.bytes_mut()?.is_empty() {
            return Err(Error::Internal);
        }
        let handle = self.handle.ok_or(Error::Internal)?;
        let set = api(unsafe { raw::RedisModule_StringSet })?;
        let string = OwnedString::new(bytes)?;
        // SAFETY: handle is an empty key opened for writing; the server takes its own
        // reference to the string.
        succeeded(unsafe { set(handle.as_ptr(), string.as_ptr()) })
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
