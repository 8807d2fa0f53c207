//! String objects this module owns: made and freed by it (`OwnedString`), or the server's,
//! retained for as long as it holds them (`Held`).

use std::ops::Range;
use std::os::raw::c_int;
use std::ptr;

use redis_module::raw;

use crate::decimal::decimal;
use crate::error::Error;
use crate::ffi::api;

/// A string object this module made and frees.
pub struct OwnedString(*mut raw::RedisModuleString);

impl OwnedString {
    pub fn new(text: &[u8]) -> Result<OwnedString, Error> {
        let create = api(unsafe { raw::RedisModule_CreateString })?;
        // SAFETY: a NULL context makes a string the module owns until it frees it; text is a
        // live buffer of that length.
        let string = unsafe { create(ptr::null_mut(), text.as_ptr().cast(), text.len()) };
        if string.is_null() {
            return Err(Error::Internal);
        }
        Ok(OwnedString(string))
    }

    /// The decimal text of `value`, as Redis writes an integer.
    pub fn integer(value: i64) -> Result<OwnedString, Error> {
        let mut digits = [0u8; 20];
        OwnedString::new(decimal(value, &mut digits))
    }

    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// Gives up ownership: the string lives on until `from_raw` takes it back.
    pub fn into_raw(self) -> *mut raw::RedisModuleString {
        let string = self.0;
        std::mem::forget(self);
        string
    }

    /// Takes back a string `into_raw` gave up.
    ///
    /// # Safety
    /// `string` must come from `into_raw`, and be taken back once.
    pub unsafe fn from_raw(string: *mut raw::RedisModuleString) -> OwnedString {
        OwnedString(string)
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

/// A call's arguments, retained for as long as this lives: by a waiter until it leaves, and
/// once more (`again`) for as long as a try uses them, so that a client killed meanwhile (by a
/// keyspace event's listener, say) cannot free them under it.
pub struct Held(Vec<*mut raw::RedisModuleString>);

impl Held {
    pub fn again(&self) -> Held {
        Held::new(&self.0)
    }

    pub fn new(argv: &[*mut raw::RedisModuleString]) -> Held {
        if let Some(retain) = unsafe { raw::RedisModule_RetainString } {
            for &arg in argv {
                // SAFETY: each is a live string the waiter holds.
                unsafe { retain(ptr::null_mut(), arg) };
            }
        }
        Held(argv.to_vec())
    }

    pub fn as_ptr(&self) -> *mut *mut raw::RedisModuleString {
        self.0.as_ptr().cast_mut()
    }

    pub fn argc(&self) -> c_int {
        c_int::try_from(self.0.len()).unwrap_or(0)
    }

    pub fn get(&self, range: Range<usize>) -> Option<&[*mut raw::RedisModuleString]> {
        self.0.get(range)
    }

    /// Every argument, the command's name first.
    pub fn all(&self) -> &[*mut raw::RedisModuleString] {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            for &arg in &self.0 {
                // SAFETY: each was retained once, by `new`.
                unsafe { free(ptr::null_mut(), arg) };
            }
        }
    }
}
