//! Bucketed windows' values (`CL.WINDOW … BUCKETS n`): raw bytes, and values built by real
//! calls on one grid and then damaged byte by byte, decided and given back on another grid at
//! any instant: refused or decided, never a panic, never an out-of-range reply. A value
//! written from an intact one must decode again; a refund is always answered as admitted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::args::WindowParams;
use redis_cell::buckets::{BucketedWindow, CellsChange};
use redis_cell::time::TimeUnit;

const START_MS: i64 = 1_795_910_400_000;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    raw: Vec<u8>,
    limit: u32,
    /// The grid the calls build on, and the one the last call reads with: (n, width in ms).
    built: (u16, u16),
    read: (u16, u16),
    /// Calls that build a value: (ms since the previous one, quantity).
    calls: Vec<(u16, u16)>,
    /// Bytes to damage in the built value: (position, xor mask).
    damage: Vec<(u16, u8)>,
    /// The last call: how far on, and its quantity.
    now_offset_ms: u32,
    quantity: u32,
}

fn limiter(limit: u32, (n, width): (u16, u16), quantity: i64) -> BucketedWindow {
    let n = 2 + i64::from(n) % 1023;
    let width_ms = 1 + i64::from(width);
    let params = WindowParams {
        limit: 1 + i64::from(limit),
        period_ms: n * width_ms,
    };
    BucketedWindow::new(&params, n, quantity)
}

fn check(reply: [i64; 5], refund: bool) {
    assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
    assert!(reply[3] == -1 || reply[3] >= 0);
    if refund {
        assert_eq!((reply[0], reply[3]), (0, -1), "a refund answered as denied");
    }
}

/// Decides and refunds on `value`, writes what each changes, and decides on that again.
fn exercise(value: &[u8], window: BucketedWindow, now_ms: i64, intact: bool) {
    let decisions = [
        (window.decide(Some(value), now_ms), false),
        (window.refund(Some(value), now_ms), true),
    ];
    for (decision, refund) in decisions {
        let Ok(decision) = decision else {
            assert!(!intact, "an intact value was refused");
            continue;
        };
        check(decision.outcome.to_reply(TimeUnit::Milliseconds), refund);
        if let Some(CellsChange::Write(plan)) = decision.change {
            let mut written = value.to_vec();
            match plan.apply(&mut written) {
                Ok(()) => {
                    let again = window.peek().decide(Some(&written), now_ms);
                    assert!(again.is_ok() || !intact, "an intact value was written unreadable");
                }
                Err(error) => assert!(!intact, "an intact value failed to write: {error:?}"),
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let now_ms = START_MS + i64::from(input.now_offset_ms);
    let quantity = i64::from(input.quantity);
    let read = limiter(input.limit, input.read, quantity);
    exercise(&input.raw, read, now_ms, false);

    let mut value: Option<Vec<u8>> = None;
    let mut at_ms = START_MS;
    for &(gap, quantity) in input.calls.iter().take(200) {
        at_ms += i64::from(gap);
        let window = limiter(input.limit, input.built, i64::from(quantity));
        let decision = window
            .decide(value.as_deref(), at_ms)
            .expect("a value built by calls decodes");
        if let Some(CellsChange::Write(plan)) = decision.change {
            let mut buffer = value.take().unwrap_or_default();
            plan.apply(&mut buffer).expect("a planned write succeeds");
            value = Some(buffer);
        }
    }
    let Some(mut value) = value else { return };
    exercise(&value, read, now_ms, true);
    let intact = input.damage.is_empty();
    for &(position, mask) in &input.damage {
        let len = value.len();
        if let Some(byte) = value.get_mut(usize::from(position) % len) {
            *byte ^= mask;
        }
    }
    exercise(&value, read, now_ms, intact);
});
