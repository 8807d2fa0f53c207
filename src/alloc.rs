//! The module's heap.

use std::alloc::{GlobalAlloc, Layout, System};

use redis_module::alloc::RedisAlloc;
use redis_module::raw;

/// Rust's heap inside the server is the server's own (so `used_memory` and `maxmemory` see
/// it); outside a server (unit tests, fuzzers linking the rlib) it is the system's. The choice
/// cannot flip while memory is live: the server's allocator appears with `RedisModule_Init`,
/// before this module allocates anything, and never goes away.
pub struct ModuleAlloc;

unsafe impl GlobalAlloc for ModuleAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let server_alloc = raw::RedisModule_Alloc;
        if server_alloc.is_some() {
            RedisAlloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let server_free = raw::RedisModule_Free;
        if server_free.is_some() {
            RedisAlloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }
}
