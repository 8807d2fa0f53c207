//! The node's most denied keys (CL.TOP): one list (top.rs), fed as denied calls are answered,
//! read by CL.TOP, emptied by CONFIG RESETSTAT, freed when the module unloads, and sized by
//! the `redis-cell.top-keys` configuration.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use redis_module::raw;

use crate::clock;
use crate::fault::{self, Fault};
use crate::ffi::StringReader;
use crate::time::NANOS_PER_MILLI;
use crate::top::{Listed, Top};

/// The entries a minute's list keeps, unless configured otherwise.
pub const DEFAULT_SIZE: usize = 1024;
/// The most: two minutes of 65,536 entries are about 20 MB.
pub const MAX_SIZE: usize = crate::top::MAX_ENTRIES;

/// Made at the first denial, at the size configured then.
static LIST: Mutex<Option<Top>> = parking_lot::const_mutex(None);
static SIZE: AtomicUsize = AtomicUsize::new(DEFAULT_SIZE);

/// Counts a denied call against the keys whose limiters denied it: `args` are the call's
/// arguments (its name first), `first` where its keys start, and `mask` a bit for each denying
/// key, in key order. Out of line: admissions never come here, and the answering path they
/// share stays as short as before CL.TOP.
///
/// # Safety
/// `args` must be live argument strings.
#[cold]
#[inline(never)]
pub unsafe fn record(args: &[*mut raw::RedisModuleString], first: usize, mut mask: u16) {
    let (Some(reader), Ok(now_ns)) = (StringReader::get(), clock::last_ns()) else {
        return;
    };
    let now_ms = now_ns / NANOS_PER_MILLI;
    let mut list = LIST.lock();
    let top = list.get_or_insert_with(|| Top::new(size()));
    while mask != 0 {
        let bit = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let key = first.checked_add(bit).and_then(|at| args.get(at));
        if let Some(bytes) = key.and_then(|&key| reader.bytes(key)) {
            fault::inject(Fault::Top, bytes);
            top.record(bytes, now_ms);
        }
    }
}

pub fn list(n: usize, now_ms: i64) -> Vec<Listed> {
    LIST.lock()
        .as_mut()
        .map(|top| top.top(n.min(top.k()), now_ms))
        .unwrap_or_default()
}

/// The entries a minute's list keeps.
pub fn size() -> usize {
    SIZE.load(Ordering::Relaxed)
}

/// A new size (CONFIG SET): the list as it stood is forgotten.
pub fn resize(k: usize) {
    SIZE.store(k.clamp(1, MAX_SIZE), Ordering::Relaxed);
    if let Some(top) = LIST.lock().as_mut() {
        top.resize(size());
    }
}

/// Forgets every denial (CONFIG RESETSTAT).
pub fn reset() {
    if let Some(top) = LIST.lock().as_mut() {
        top.clear();
    }
}

/// Frees the list (MODULE UNLOAD).
pub fn free() {
    *LIST.lock() = None;
}
