//! Per-command counters since load, and the waits' counters: numbers only. resetstat.rs
//! decides when they are zeroed, info.rs shows them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::command::Command;
use crate::limiter::Request;

/// What became of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Allowed,
    Denied,
    /// A quantity of zero: neither allowed nor denied.
    Peek,
    /// Units given back (`REFUND`).
    Refund,
    /// An error reply.
    Error,
}

/// One command's counters. Commands run on the server's main thread; relaxed atomics make
/// the statics sound without costing more than a plain increment.
pub struct Counters {
    calls: AtomicU64,
    allowed: AtomicU64,
    denied: AtomicU64,
    peeks: AtomicU64,
    refunds: AtomicU64,
    errors: AtomicU64,
}

impl Counted {
    /// A call's count: a peek when it asked for nothing or only what a call would answer, a
    /// refund when it gave units back, else whether it was admitted.
    pub fn of(request: Request, admitted: bool) -> Counted {
        if request.peeks() || request.dry_run {
            Counted::Peek
        } else if request.refund {
            Counted::Refund
        } else if admitted {
            Counted::Allowed
        } else {
            Counted::Denied
        }
    }
}

impl Counters {
    const fn new() -> Counters {
        Counters {
            calls: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            peeks: AtomicU64::new(0),
            refunds: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    pub fn record(&self, counted: Counted) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let counter = match counted {
            Counted::Allowed => &self.allowed,
            Counted::Denied => &self.denied,
            Counted::Peek => &self.peeks,
            Counted::Refund => &self.refunds,
            Counted::Error => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Each counter with its INFO label.
    pub fn fields(&self) -> [(&'static str, &AtomicU64); 6] {
        [
            ("calls", &self.calls),
            ("allowed", &self.allowed),
            ("denied", &self.denied),
            ("peeks", &self.peeks),
            ("refunds", &self.refunds),
            ("errors", &self.errors),
        ]
    }
}

static THROTTLE: Counters = Counters::new();
static FIXED: Counters = Counters::new();
static WINDOW: Counters = Counters::new();
static ALL: Counters = Counters::new();
static LEASE: Counters = Counters::new();
static RELEASE: Counters = Counters::new();
static HOLDERS: Counters = Counters::new();
static SMOOTH: Counters = Counters::new();
static TOP: Counters = Counters::new();
static BAN: Counters = Counters::new();
static UNBAN: Counters = Counters::new();
/// A command's counters.
pub fn of(command: Command) -> &'static Counters {
    match command {
        Command::Throttle => &THROTTLE,
        Command::Fixed => &FIXED,
        Command::Window => &WINDOW,
        Command::All => &ALL,
        Command::Lease => &LEASE,
        Command::Release => &RELEASE,
        Command::Holders => &HOLDERS,
        Command::Smooth => &SMOOTH,
        Command::Top => &TOP,
        Command::Ban => &BAN,
        Command::Unban => &UNBAN,
    }
}

/// A step in a call's wait (BLOCK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// It began to wait.
    Parked,
    /// Its units fitted, and it took them.
    Admitted,
    /// Its deadline came first, or `CLIENT UNBLOCK … TIMEOUT` ended it: the denial, nothing
    /// taken.
    TimedOut,
    /// Its client went away (disconnected, `CLIENT UNBLOCK … ERROR`, a role change).
    Left,
}

/// The waits, over all commands.
pub struct Waits {
    waited: AtomicU64,
    admitted: AtomicU64,
    timed_out: AtomicU64,
    left: AtomicU64,
}

impl Waits {
    pub fn record(&self, step: Waited) {
        let counter = match step {
            Waited::Parked => &self.waited,
            Waited::Admitted => &self.admitted,
            Waited::TimedOut => &self.timed_out,
            Waited::Left => &self.left,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Each counter with its INFO label.
    pub fn fields(&self) -> [(&'static str, &AtomicU64); 4] {
        [
            ("waited", &self.waited),
            ("admitted", &self.admitted),
            ("timed_out", &self.timed_out),
            ("left", &self.left),
        ]
    }
}

pub static WAITS: Waits = Waits {
    waited: AtomicU64::new(0),
    admitted: AtomicU64::new(0),
    timed_out: AtomicU64::new(0),
    left: AtomicU64::new(0),
};

/// ATMOST's grants, over all commands: the calls that decided with it (not a look, not a
/// dry run), those granted anything, and the units granted.
pub struct Grants {
    calls: AtomicU64,
    grants: AtomicU64,
    units: AtomicU64,
}

impl Grants {
    pub fn record(&self, granted: i64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Ok(units @ 1..) = u64::try_from(granted) {
            self.grants.fetch_add(1, Ordering::Relaxed);
            self.units.fetch_add(units, Ordering::Relaxed);
        }
    }

    /// Each counter with its INFO label.
    pub fn fields(&self) -> [(&'static str, &AtomicU64); 3] {
        [
            ("calls", &self.calls),
            ("grants", &self.grants),
            ("units", &self.units),
        ]
    }
}

pub static GRANTS: Grants = Grants {
    calls: AtomicU64::new(0),
    grants: AtomicU64::new(0),
    units: AtomicU64::new(0),
};

/// The lockouts, over all commands: the keys a denial banned (`BAN`), those banned by hand
/// (`CL.BAN`), the bans lifted by hand (`CL.UNBAN`), and the calls a ban denied.
pub struct Bans {
    banned: AtomicU64,
    by_hand: AtomicU64,
    lifted: AtomicU64,
    denied: AtomicU64,
}

/// A step in a key's lockout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Banning {
    /// A denial with `BAN` locked the key out.
    Banned,
    /// `CL.BAN` locked it out.
    ByHand,
    /// `CL.UNBAN` let it in again.
    Lifted,
    /// A call on it was denied by its ban.
    Denied,
}

impl Bans {
    pub fn record(&self, step: Banning) {
        let counter = match step {
            Banning::Banned => &self.banned,
            Banning::ByHand => &self.by_hand,
            Banning::Lifted => &self.lifted,
            Banning::Denied => &self.denied,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Each counter with its INFO label.
    pub fn fields(&self) -> [(&'static str, &AtomicU64); 4] {
        [
            ("banned", &self.banned),
            ("by_hand", &self.by_hand),
            ("lifted", &self.lifted),
            ("denied", &self.denied),
        ]
    }
}

pub static BANS: Bans = Bans {
    banned: AtomicU64::new(0),
    by_hand: AtomicU64::new(0),
    lifted: AtomicU64::new(0),
    denied: AtomicU64::new(0),
};

/// Zeroes every counter, as CONFIG RESETSTAT zeroes the server's.
pub fn reset() {
    let waits = WAITS.fields();
    let grants = GRANTS.fields();
    let bans = BANS.fields();
    let counters = Command::ALL
        .iter()
        .flat_map(|&command| of(command).fields());
    for (_, counter) in counters.chain(waits).chain(grants).chain(bans) {
        counter.store(0, Ordering::Relaxed);
    }
}
