//! The raw module API's common ground, wrapped once: functions the server may lack, statuses
//! as results, a string's bytes, the context's flags and the server's log. The layers that
//! deal with the server (storage, propagation, replies, blocking, the entry points) call its
//! functions through these; values, pure cores and command bodies call none
//! (scripts/layers.py checks).

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::error::Error;

/// A module API function, or `Internal` if this server lacks it. Every one used here exists
/// on Redis 7.0 and later; the check keeps an unexpected server from crashing.
pub fn api<F>(function: Option<F>) -> Result<F, Error> {
    function.ok_or(Error::Internal)
}

/// A module API call's status as a result: anything but OK is a defect here, since every
/// call is made on a key and arguments already checked.
pub fn succeeded(status: c_int) -> Result<(), Error> {
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err(Error::Internal)
    }
}

/// The bytes of a string object, `None` for a null one or where the server cannot say.
///
/// # Safety
/// `string` must be null or a live string object that outlives `'a` and is not modified
/// meanwhile, as a command's arguments are for the length of the command.
pub unsafe fn string_bytes<'a>(string: *const raw::RedisModuleString) -> Option<&'a [u8]> {
    StringReader::get()?.bytes(string)
}

/// The server's reader of string bytes, looked up once for many strings (a command's
/// arguments): where `string_bytes` is called in a loop, each call would load it again.
#[derive(Clone, Copy)]
pub struct StringReader(
    unsafe extern "C" fn(*const raw::RedisModuleString, *mut usize) -> *const std::os::raw::c_char,
);

impl StringReader {
    #[inline(always)]
    pub fn get() -> Option<StringReader> {
        // SAFETY: reads an API pointer, filled in once at load.
        unsafe { raw::RedisModule_StringPtrLen }.map(StringReader)
    }

    /// As `string_bytes`.
    ///
    /// # Safety
    /// As `string_bytes`.
    #[inline(always)]
    pub unsafe fn bytes<'a>(self, string: *const raw::RedisModuleString) -> Option<&'a [u8]> {
        if string.is_null() {
            return None;
        }
        let mut len = 0usize;
        let ptr = (self.0)(string, &mut len);
        if ptr.is_null() {
            return None;
        }
        Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
    }
}

/// The flags of a context (`REDISMODULE_CTX_FLAGS_…`), 0 where the server cannot say.
pub fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    // SAFETY: ctx is a live context the server passed in.
    unsafe { raw::RedisModule_GetContextFlags.map_or(0, |flags| flags(ctx) as u32) }
}

/// A call from the primary over the replication link, or from the AOF.
pub const REPLAYED: u32 =
    raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;

/// Whether a call with these context flags may wait, as BLPOP may: not in a transaction, a
/// script or a function, not where the server denies blocking (a call from a module), not
/// replayed, and only on a primary (a writable replica's waiters could never write).
pub fn may_wait(flags: u32) -> bool {
    const NO_WAITING: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
        | REPLAYED;
    flags & NO_WAITING == 0 && flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
}

/// Writes a warning to the server's log.
pub fn log_warning(ctx: *mut raw::RedisModuleCtx, message: &str) {
    // A NUL would end the line early; a panic's message may hold one.
    let Ok(message) = std::ffi::CString::new(message.replace('\0', "\\0")) else {
        return;
    };
    // SAFETY: ctx is a live context or null (the module's own log line); "%s" takes the one
    // C string given.
    unsafe {
        if let Some(log) = raw::RedisModule_Log {
            log(ctx, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr());
        }
    }
}

/// One section of the server's INFO, read through the module API, for `read` to take its
/// fields from, and freed after; `None` where the server cannot give it.
pub fn with_info_section<T>(section: &CStr, read: impl FnOnce(&InfoSection) -> T) -> Option<T> {
    // SAFETY: GetServerInfo with no context returns data the caller frees, once, with
    // FreeServerInfo and no context; the section borrowed by `read` does not outlive it.
    unsafe {
        let get = raw::RedisModule_GetServerInfo?;
        let free = raw::RedisModule_FreeServerInfo?;
        let data = get(std::ptr::null_mut(), section.as_ptr());
        if data.is_null() {
            return None;
        }
        let value = read(&InfoSection(data));
        free(std::ptr::null_mut(), data);
        Some(value)
    }
}

/// A section of INFO that `with_info_section` holds.
pub struct InfoSection(*mut raw::RedisModuleServerInfoData);

impl InfoSection {
    /// A field's text; `None` where the section has no such field.
    pub fn text(&self, field: &CStr) -> Option<&[u8]> {
        let get = unsafe { raw::RedisModule_ServerInfoGetFieldC }?;
        // SAFETY: the data is live while self is borrowed; the text, if any, lives as long.
        unsafe {
            let text = get(self.0, field.as_ptr());
            (!text.is_null()).then(|| CStr::from_ptr(text).to_bytes())
        }
    }

    /// A field's value as an unsigned integer; `None` where there is none.
    pub fn unsigned(&self, field: &CStr) -> Option<u64> {
        let get = unsafe { raw::RedisModule_ServerInfoGetFieldUnsigned }?;
        let mut error: c_int = 0;
        // SAFETY: the data is live while self is borrowed; field a C string.
        let value = unsafe { get(self.0, field.as_ptr(), &mut error) };
        (error == 0).then_some(value)
    }
}

/// Has a panic report itself as one line in the server's log, with where it struck, and
/// nothing else. The default hook, under `RUST_BACKTRACE`, walks and symbolizes the stack
/// inside the server, which brings down servers linked with a system jemalloc (Debian's
/// Redis 8 and Valkey 8) before the panic can be caught. Set at load; the hook belongs to
/// this library's own copy of std, so no other module's panics are touched.
pub fn report_panics_in_the_log() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|at| format!(" at {}:{}", at.file(), at.line()))
            .unwrap_or_default();
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic");
        log_warning(
            std::ptr::null_mut(),
            &format!("redis-cell: panicked{location}: {message}"),
        );
    }));
}

/// Runs `body`, catching a panic before it can unwind into the server: logged, and `None`.
/// Every catch in the module is this one.
#[inline(always)]
pub fn catch_defect<T>(ctx: *mut raw::RedisModuleCtx, body: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => Some(value),
        Err(_) => {
            log_defect(ctx);
            None
        }
    }
}

#[cold]
#[inline(never)]
fn log_defect(ctx: *mut raw::RedisModuleCtx) {
    log_warning(
        ctx,
        "redis-cell: a defect in the module was caught before it could take the server down",
    );
}
