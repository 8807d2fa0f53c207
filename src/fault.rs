//! Test-only faults: in a debug build, a call on a key of one of these names panics where the
//! name says (for a waiter, its first key), so that the tests can show the entry layer's guard turning a defect into an error
//! reply while the server keeps serving. A release build has no such keys: `inject` is empty.

/// Where a fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// In a command's body, as it decides a key.
    Body,
    /// As a denied call that asked to wait is being parked, before its client is blocked.
    Park,
    /// Just after a waiter's client was blocked and it joined its lines.
    Parked,
    /// As a waiter's timer looks whether its units fit.
    Timer,
    /// As an admitted waiter takes its units, in its reply callback.
    Reply,
    /// As a denial is counted against its key for CL.TOP, after its reply was sent.
    Top,
}

impl Fault {
    /// The key whose calls strike this fault.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub const fn key(self) -> &'static [u8] {
        match self {
            Fault::Body => b"redis-cell:test-panic:body",
            Fault::Park => b"redis-cell:test-panic:park",
            Fault::Parked => b"redis-cell:test-panic:parked",
            Fault::Timer => b"redis-cell:test-panic:timer",
            Fault::Reply => b"redis-cell:test-panic:reply",
            Fault::Top => b"redis-cell:test-panic:top",
        }
    }
}

/// Panics when `key` is the fault's key, in a debug build.
#[cfg(debug_assertions)]
pub fn inject(fault: Fault, key: &[u8]) {
    if key == fault.key() {
        panic!("redis-cell: injected {fault:?} fault");
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn inject(_fault: Fault, _key: &[u8]) {}
