//! CL.LEASE's stored set of leases: values come raw from the input, and as sets built by real
//! calls (leases, renewals, releases, time passing) and then damaged byte by byte. Every
//! call is refused or answered, never a panic; an answer stays in range; and a set a call
//! wrote into still reads as one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::lease::{apply, empty, release, Lease, LeaseSet};
use redis_cell::time::TimeUnit;

const START_MS: i64 = 1_795_910_400_000;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    raw: Vec<u8>,
    /// Calls that build a set: (holder id, lease ms, ms since the previous call, release?).
    calls: Vec<(u8, u16, u16, bool)>,
    limit: u8,
    /// Bytes to damage in the built set: (position, xor mask).
    damage: Vec<(u16, u8)>,
    holder: u8,
}

fn holder(id: u8) -> Vec<u8> {
    format!("job:{id}").into_bytes()
}

fn call(set: &mut Vec<u8>, lease: Lease, name: &[u8], now: i64) {
    let Ok(decision) = lease.decide(Some(set), name, now) else {
        return;
    };
    let reply = decision.outcome.to_reply(TimeUnit::Milliseconds);
    assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
    assert!(reply[3] == -1 || reply[3] >= 0);
    if let Some(change) = decision.change {
        let mut written = set.clone();
        if apply(&mut written, name, change, now).is_ok() {
            assert!(LeaseSet::parse(&written).is_ok(), "a write left no set");
            *set = written;
        }
    }
}

fuzz_target!(|input: Input| {
    let limit = i64::from(input.limit.max(1));
    let mut now = START_MS;
    let mut set = empty().to_vec();
    for &(id, lease_ms, wait_ms, releases) in input.calls.iter().take(2_000) {
        now += i64::from(wait_ms);
        let name = holder(id);
        if releases {
            let _ = release(&mut set, &name, now);
        } else {
            let lease = Lease {
                limit,
                lease_ms: i64::from(lease_ms.max(1)),
            };
            call(&mut set, lease, &name, now);
        }
    }
    for &(position, mask) in &input.damage {
        if let Some(byte) = set.get_mut(position as usize) {
            *byte ^= mask;
        }
    }
    let lease = Lease { limit, lease_ms: 100 };
    for mut value in [set, input.raw] {
        let name = holder(input.holder);
        call(&mut value, lease, &name, now);
        let _ = release(&mut value, &name, now);
    }
});
