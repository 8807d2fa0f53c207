//! What a write sends to replicas and the AOF: exactly what it changed, deterministically.
//! CL.THROTTLE's and CL.SMOOTH's writes go as the `SET … PXAT` they amount to; the window
//! commands and CL.LEASE go as themselves with the primary's instant (`AT unix-ms`), so that
//! replicas decide as they did.

use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use parking_lot::Mutex;
use redis_module::raw;

use crate::decimal::decimal;
use crate::error::Error;
use crate::ffi::{api, succeeded};
use crate::store::Written;
use crate::strings::OwnedString;
use crate::time::Instant;

/// A call's own form, for the writes that reach replicas and the AOF as their command (the
/// windows', the leases', CL.RELEASE's).
pub enum Propagate<'a> {
    /// As the call came: it carries its instant already.
    Verbatim,
    /// As the command with these arguments after its name, and the instant: `AT <unix-ms>`.
    WithInstant(&'a [*mut raw::RedisModuleString]),
}

/// Propagates a window command with the instant it was decided at. Replicas hold the same
/// state, so they make the same decision, write the same bytes and fire the same events; for
/// CL.WINDOW that is also far cheaper than sending a long log. The arguments are the
/// client's own strings, shared, not copied, each named by its own `s` in the format: the
/// server sizes its argument array by the format, and a vector (`v`) makes it grow that array
/// again, about 450 instructions a call.
pub fn replicate_window(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    propagate: Propagate,
    now: Instant,
) -> Result<(), Error> {
    let args = match propagate {
        Propagate::Verbatim => {
            let verbatim = api(unsafe { raw::RedisModule_ReplicateVerbatim })?;
            // SAFETY: ctx is the running command's context.
            return succeeded(unsafe { verbatim(ctx) });
        }
        Propagate::WithInstant(args) => args,
    };
    let replicate = api(unsafe { raw::RedisModule_Replicate })?;
    let at_word = AT.get()?;
    let mut last = LAST_INSTANT.lock();
    let at = last.string(now.ms)?;
    // The format's letters take, in order: one RedisModuleString per `s`, an array of them
    // and its length for `v`, then the word AT and the instant (`s` each).
    macro_rules! replicate_with {
        ($format:literal $(, $arg:expr)*) => {
            replicate(ctx, command.as_ptr(), $format.as_ptr(), $($arg,)* at_word, at)
        };
    }
    // SAFETY: each format names exactly the arguments that follow it (see above); the
    // strings are the command's live arguments, and the two this module keeps.
    let status = unsafe {
        match *args {
            [key, first] => replicate_with!(c"ssss", key, first),
            [key, first, second] => replicate_with!(c"sssss", key, first, second),
            [key, first, second, third] => replicate_with!(c"ssssss", key, first, second, third),
            [key, first, second, third, fourth] => {
                replicate_with!(c"sssssss", key, first, second, third, fourth)
            }
            _ => replicate_with!(c"vss", args.as_ptr(), args.len()),
        }
    };
    succeeded(status)
}

/// The instant the last propagated call carried, as a string kept between calls. Every call
/// propagated within one millisecond carries the same `AT` text, so it is made once and then
/// shared as the words are: made per call, the module formatted it and the server made a
/// string of it and freed it again, about 330 instructions a `CL.WINDOW`.
struct LastInstant {
    ms: i64,
    string: Option<OwnedString>,
}

// SAFETY: the string is a server object, used only where the server runs commands: on its
// main thread, where every command, timer and callback of this module runs, or on a thread
// that holds the server's lock to call commands; the mutex orders those too.
unsafe impl Send for LastInstant {}

static LAST_INSTANT: Mutex<LastInstant> = parking_lot::const_mutex(LastInstant {
    ms: 0,
    string: None,
});

impl LastInstant {
    /// The decimal text of `ms`, made anew when it is not the last one's. The server takes
    /// its own reference to what it propagates, so the one given up here lives on there.
    fn string(&mut self, ms: i64) -> Result<*mut raw::RedisModuleString, Error> {
        match &self.string {
            Some(string) if self.ms == ms => Ok(string.as_ptr()),
            _ => {
                let made = OwnedString::integer(ms)?;
                let string = made.as_ptr();
                self.string = Some(made);
                self.ms = ms;
                Ok(string)
            }
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
static WORDS: [&Word; 2] = [&PXAT, &AT];

/// Makes the words, once, from OnLoad.
pub fn make_words() -> Result<(), String> {
    for word in WORDS {
        let string = OwnedString::new(word.text.to_bytes())
            .map_err(|_| format!("could not make the string {}", word.text.to_string_lossy()))?;
        // Kept until free_words takes it back.
        word.string.store(string.into_raw(), Ordering::Relaxed);
    }
    Ok(())
}

/// Frees the words and the last instant, from OnUnload (and from a failed OnLoad).
pub fn free_words() {
    LAST_INSTANT.lock().string = None;
    for word in WORDS {
        let string = word.string.swap(ptr::null_mut(), Ordering::Relaxed);
        if !string.is_null() {
            // SAFETY: made by make_words, and swapped out of its word once.
            drop(unsafe { OwnedString::from_raw(string) });
        }
    }
}

/// A key deleted outright (a ban lifted from a key whose own state is gone), as `DEL`.
pub fn replicate_del(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
) -> Result<(), Error> {
    let replicate = api(unsafe { raw::RedisModule_Replicate })?;
    // SAFETY: the format takes one RedisModuleString, the key's name, which is the command's.
    succeeded(unsafe { replicate(ctx, c"DEL".as_ptr(), c"s".as_ptr(), name) })
}

/// Propagates CL.THROTTLE's write as the `SET key value PXAT expire_at_ms` it amounts to, so
/// that replicas and the AOF hold identical bytes and expiry whatever their own clocks say.
pub fn replicate_set_pxat(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    value: &Written,
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
            Written::Made(string) => replicate(
                ctx,
                PROPAGATED_AS.as_ptr(),
                c"sssb".as_ptr(),
                name,
                string.as_ptr(),
                pxat,
                expire_at.as_ptr(),
                expire_at.len(),
            ),
            Written::InPlace(bytes) => replicate(
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
pub const PROPAGATED_AS: &CStr = c"SET";

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
