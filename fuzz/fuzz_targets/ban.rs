//! Banned keys (src/ban.rs): any bytes are the banned form or not, never a panic; a form read
//! is the one its encoding makes again; and the limiter's own state beside a ban is read and
//! decided by every rate limiter at any instant, refused or answered in range, as a plain key
//! of its own is, with the ban's denial in range too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::args::{SmoothParams, SmoothShape, ThrottleParams, WindowParams};
use redis_cell::ban::{self, Banned};
use redis_cell::buckets::BucketedWindow;
use redis_cell::fixed::FixedWindow;
use redis_cell::gcra::Gcra;
use redis_cell::limiter::Limiter;
use redis_cell::smooth::{Smooth, Timeout};
use redis_cell::time::{Instant, TimeUnit};
use redis_cell::window::SlidingWindow;

const START_MS: i64 = 1_795_910_400_000;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    now_offset_ms: i32,
    limit: u16,
    quantity: u8,
    raw: Vec<u8>,
    /// A ban to wrap `raw` in: its end and the state's expiry, from START_MS.
    wrap: Option<(u32, u32)>,
}

fn check(reply: [i64; 5]) {
    assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
    assert!(reply[3] == -1 || reply[3] >= 0);
}

fuzz_target!(|input: Input| {
    let now = Instant::from_ns((START_MS + i64::from(input.now_offset_ms)) * 1_000_000);
    let limit = i64::from(input.limit.max(1));
    let quantity = i64::from(input.quantity % 64);
    let mut wrapped = Vec::new();
    let raw = match input.wrap {
        Some((until, expiry)) => {
            let own = (!input.raw.is_empty())
                .then(|| (input.raw.as_slice(), START_MS + i64::from(expiry) + 1));
            ban::encode(START_MS + i64::from(until) + 1, own, &mut wrapped);
            &wrapped
        }
        None => &input.raw,
    };
    let Some(banned) = Banned::parse(raw) else {
        assert!(input.wrap.is_none(), "an encoded ban did not parse");
        return;
    };
    let mut again = Vec::new();
    ban::encode(banned.until_ms, banned.own, &mut again);
    assert_eq!(&again, raw);
    assert!(banned.expire_at_ms() >= banned.until_ms);

    let window = WindowParams {
        limit,
        period_ms: 60_000,
    };
    let throttle = ThrottleParams {
        max_burst: limit - 1,
        count: 10,
        period_ns: 60_000_000_000,
    };
    let smooth = SmoothParams {
        permits: limit,
        period: 60,
        unit: TimeUnit::Seconds,
        shape: SmoothShape::Bursty { burst: 1 },
    };
    let limiters = [
        Limiter::Throttle(Gcra::new(&throttle, quantity).expect("valid parameters")),
        Limiter::Fixed(FixedWindow::new(&window, quantity, false)),
        Limiter::Sliding(SlidingWindow::new(&window, quantity)),
        Limiter::Bucketed(BucketedWindow::new(&window, 6, quantity)),
        Limiter::Smooth(Smooth::new(&smooth, quantity, Timeout::Micros(0))),
    ];
    let own = banned.own_at(now.ms);
    for limiter in limiters {
        let Ok(reading) = limiter.read(&own) else {
            continue;
        };
        if let Ok(verdict) = reading.decide(now) {
            check(verdict.outcome.to_reply(TimeUnit::Milliseconds));
        }
        if let Ok(look) = reading.peek().decide(now) {
            let denied = ban::denial(look.outcome, banned.until_ms, now.ms);
            check(denied.to_reply(TimeUnit::Milliseconds));
            assert!(denied.limited);
        }
    }
});
