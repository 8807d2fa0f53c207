//! CL.SMOOTH's stored bytes, decoded and decided on at any instant with any parameters:
//! refused or decided, never a panic, never an out-of-range reply; and what an admission
//! writes is a state the next call reads. Values come raw, and as Guava states built from
//! fuzzed fields (any instant, any permits, any rate, either shape).
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::args::{SmoothParams, SmoothShape};
use redis_cell::smooth::state::KeyState;
use redis_cell::smooth::{Smooth, Timeout};
use redis_cell::time::TimeUnit;

const START_US: i64 = 1_795_910_400_000_000;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    raw: Vec<u8>,
    built: (i64, u64, u64, u64, bool),
    use_raw: bool,
    permits: u64,
    period: u32,
    span: u32,
    cold: u64,
    warm: bool,
    ms: bool,
    quantity: u32,
    /// 0: no BLOCK; u32::MAX: as long as it takes; else a timeout in ms.
    timeout: u32,
    /// µs since START_US, then again for a second call.
    now: (u32, u32),
}

fn check(reply: [i64; 5]) {
    assert!(reply[1] >= 1 && reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
    assert!(reply[3] == -1 || reply[3] >= 1);
    assert_eq!(reply[0] == 1, reply[3] >= 1);
}

fuzz_target!(|input: Input| {
    let value = if input.use_raw {
        input.raw.clone()
    } else {
        let (next_free, stored, max, cool, warming_up) = input.built;
        KeyState {
            next_free,
            stored: f64::from_bits(stored),
            max_permits: f64::from_bits(max),
            cool_down: f64::from_bits(cool),
            warming_up,
        }
        .encode()
        .to_vec()
    };
    let unit = if input.ms {
        TimeUnit::Milliseconds
    } else {
        TimeUnit::Seconds
    };
    // Spans within what the arguments accept: at least one unit, at most 2^62 ns.
    let span = |n: u32| i64::from(n.max(1)) % (4_611_686_018 * 1000 / unit.millis()) + 1;
    let params = SmoothParams {
        permits: (input.permits % i64::MAX as u64).max(1) as i64,
        period: span(input.period),
        unit,
        shape: if input.warm {
            SmoothShape::WarmingUp {
                warmup: span(input.span),
                cold: (input.cold % i64::MAX as u64).max(1) as i64,
            }
        } else {
            SmoothShape::Bursty {
                burst: span(input.span),
            }
        },
    };
    let timeout = match input.timeout {
        0 => Timeout::Micros(0),
        u32::MAX => Timeout::Forever,
        ms => Timeout::Micros(i64::from(ms) * 1000),
    };
    let quantity = i64::from(input.quantity % (i32::MAX as u32 + 1));
    let smooth = Smooth::new(&params, quantity, timeout);
    let now_ns = (START_US + i64::from(input.now.0)) * 1000;
    let Ok(decision) = smooth.decide(Some(&value), now_ns) else {
        return;
    };
    check(decision.outcome.to_reply(unit));
    if let Some(write) = decision.write {
        assert!(
            KeyState::decode(&write.value).is_ok(),
            "wrote what it cannot read"
        );
        let later = now_ns + i64::from(input.now.1) * 1000;
        let again = smooth
            .decide(Some(&write.value), later)
            .expect("decides on its own state");
        check(again.outcome.to_reply(unit));
    }
    // A new key decides too.
    check(
        smooth
            .decide(None, now_ns)
            .expect("a new key")
            .outcome
            .to_reply(unit),
    );
});
