//! Stored values, decoded as each command's state and decided on at any instant: refused or
//! decided, never a panic, never an out-of-range reply. Values come raw from the input, and
//! as sliding-window logs built by real calls (up to a few thousand, over many blocks, with
//! units large enough to lengthen merged entries) and then damaged byte by byte behind a
//! valid checksum; a log the window admitted into, or trimmed for a refund, must decode
//! again. Every refund is answered as admitted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::args::{ThrottleParams, WindowParams};
use redis_cell::decimal::parse_i64;
use redis_cell::fixed::{FixedWindow, OpenWindow};
use redis_cell::gcra::Gcra;
use redis_cell::time::TimeUnit;
use redis_cell::window::{reseal, SlidingWindow, Trim};

const START_MS: i64 = 1_795_910_400_000;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    now_offset_ms: u32,
    limit: u16,
    quantity: u8,
    expiry_ms: i64,
    raw: Vec<u8>,
    /// Calls that build a log: (ms since the previous one, quantity, in 7-bit digits
    /// shifted by the top two bits).
    calls: Vec<(u16, u8)>,
    /// Bytes to damage in the built log: (position, xor mask).
    damage: Vec<(u16, u8)>,
}

fn check(reply: [i64; 5]) {
    assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
    assert!(reply[3] == -1 || reply[3] >= 0);
}

fn check_refund(reply: [i64; 5]) {
    check(reply);
    assert_eq!((reply[0], reply[3]), (0, -1), "a refund answered as denied");
}

fn window(limit: i64, quantity: i64) -> SlidingWindow {
    sliding(limit, 60_000, quantity)
}

fn sliding(limit: i64, period_ms: i64, quantity: i64) -> SlidingWindow {
    SlidingWindow::new(&WindowParams { limit, period_ms }, quantity)
}

/// Decides on `log` and, if admitted, writes and decides on the result again. A log damaged
/// where no cheap check looks may be decided on and written; what comes of it must still be
/// refused or decided without a panic, and an intact log must stay intact.
fn exercise(log: &[u8], limit: i64, quantity: i64, now_ms: i64, intact: bool) {
    let sliding = window(limit, quantity);
    if let Ok(decision) = sliding.decide(Some(log), now_ms) {
        check(decision.outcome.to_reply(TimeUnit::Milliseconds));
        if let Some(append) = decision.append {
            let mut written = log.to_vec();
            if append.apply(&mut written).is_ok() {
                match sliding.decide(Some(&written), now_ms) {
                    Ok(again) => check(again.outcome.to_reply(TimeUnit::Milliseconds)),
                    Err(error) => {
                        assert!(!intact, "an intact log was written unreadable: {error:?}")
                    }
                }
            }
        }
    }
    if let Ok(refund) = sliding.refund(Some(log), now_ms) {
        check_refund(refund.outcome.to_reply(TimeUnit::Milliseconds));
        if let Some(Trim::Keep { plan, .. }) = refund.change {
            let mut written = log.to_vec();
            if plan.write(&mut written).is_ok() && intact {
                assert!(
                    sliding.decide(Some(&written), now_ms).is_ok(),
                    "an intact log was trimmed unreadable"
                );
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let now_ms = START_MS + i64::from(input.now_offset_ms);
    let limit = i64::from(input.limit.max(1));
    let quantity = i64::from(input.quantity % 64);

    if let Some(value) = parse_i64(&input.raw) {
        let throttle = ThrottleParams {
            max_burst: limit - 1,
            count: 10,
            period_ns: 60_000_000_000,
        };
        let gcra = Gcra::new(&throttle, quantity).expect("valid parameters");
        check(
            gcra.decide(Some(value), now_ms * 1_000_000)
                .outcome
                .to_reply(TimeUnit::Seconds),
        );
        check_refund(
            gcra.refund(Some(value), now_ms * 1_000_000)
                .outcome
                .to_reply(TimeUnit::Seconds),
        );
        let fixed = FixedWindow::new(
            &WindowParams {
                limit,
                period_ms: 60_000,
            },
            quantity,
            // The quantity's top bit, which its value leaves alone.
            input.quantity & 0x80 != 0,
        );
        let stored = OpenWindow {
            count: value.max(0),
            end_ms: input.expiry_ms,
        };
        check(
            fixed
                .decide(Some(stored), now_ms)
                .outcome
                .to_reply(TimeUnit::Milliseconds),
        );
        check_refund(
            fixed
                .refund(Some(stored), now_ms)
                .outcome
                .to_reply(TimeUnit::Milliseconds),
        );
    }
    exercise(&input.raw, limit, quantity, now_ms, false);

    let mut log: Option<Vec<u8>> = None;
    let mut at = START_MS;
    for &(gap, units) in input.calls.iter().take(4_000) {
        at += i64::from(gap);
        let quantity = i64::from(units & 0x3f) << (7 * (units >> 6));
        let decision = sliding(1 << 50, 3_600_000, quantity)
            .decide(log.as_deref(), at)
            .expect("own log");
        if let Some(append) = decision.append {
            let mut buffer = log.take().unwrap_or_default();
            append.apply(&mut buffer).expect("own log");
            log = Some(buffer);
        }
    }
    if let Some(mut log) = log {
        for &(position, mask) in &input.damage {
            let len = log.len();
            if let Some(byte) = log.get_mut(usize::from(position) % len) {
                *byte ^= mask;
            }
        }
        let intact = input.damage.iter().all(|&(_, mask)| mask == 0);
        reseal(&mut log);
        exercise(&log, limit, quantity, now_ms.max(at), intact);
    }
});
