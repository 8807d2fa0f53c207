//! Calling CL.THROTTLE from a service: the reply read into named fields, and a denied
//! request retried after the wait the limiter gives.
//!
//! `cargo run --example throttle` against redis://127.0.0.1:6379/, or set REDIS_URL.

use std::time::Duration;

/// CL.THROTTLE's reply, by name.
#[derive(Debug)]
struct Throttle {
    limited: bool,
    limit: i64,
    remaining: i64,
    /// When denied: how long until this request would be allowed (`None` if never).
    retry_after: Option<Duration>,
    /// How long until the limiter is full again.
    #[allow(dead_code)]
    reset_after: Duration,
}

/// One request against `count` per `period_ms` with bursts of `max_burst + 1`, waits in ms.
fn throttle(
    con: &mut redis::Connection,
    key: &str,
    max_burst: i64,
    count: i64,
    period_ms: i64,
) -> redis::RedisResult<Throttle> {
    let [limited, limit, remaining, retry_after, reset_after]: [i64; 5] = redis::cmd("CL.THROTTLE")
        .arg(key)
        .arg(max_burst)
        .arg(count)
        .arg(period_ms)
        .arg(1)
        .arg("MS")
        .query(con)?;
    let millis = |ms: i64| Duration::from_millis(ms.max(0) as u64);
    Ok(Throttle {
        limited: limited == 1,
        limit,
        remaining,
        retry_after: (retry_after >= 0).then(|| millis(retry_after)),
        reset_after: millis(reset_after),
    })
}

fn main() -> redis::RedisResult<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url)?.get_connection()?;
    // Five requests a second, in bursts of up to three.
    for request in 1..=5 {
        loop {
            let answer = throttle(&mut con, "example:user42", 2, 5, 1000)?;
            if !answer.limited {
                println!(
                    "request {request}: allowed, {} of {} left",
                    answer.remaining, answer.limit
                );
                break;
            }
            let Some(wait) = answer.retry_after else {
                println!("request {request}: larger than the limit, dropped");
                break;
            };
            println!(
                "request {request}: limited, retrying in {} ms",
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }
    Ok(())
}
