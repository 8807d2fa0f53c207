//! Argument vectors of any length and content, through every command's parser and, where
//! they parse, into the algorithms: nothing may panic, and every parse error names a reply.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::all;
use redis_cell::all_args::{self, LimiterArgs};
use redis_cell::args;
use redis_cell::decimal::parse_i64;
use redis_cell::error::Error;
use redis_cell::fixed::FixedWindow;
use redis_cell::gcra::Gcra;
use redis_cell::lease::Lease;
use redis_cell::limiter::{Reading, Verdict};
use redis_cell::time::Instant;
use redis_cell::window::SlidingWindow;

const NOW_NS: i64 = 1_795_910_400_000_000_000;

fuzz_target!(|argv: Vec<Vec<u8>>| {
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    for arg in &argv {
        if let Some(value) = parse_i64(arg) {
            assert_eq!(value.to_string().as_bytes(), *arg);
        }
    }
    match args::throttle(&argv)
        .and_then(|parsed| Gcra::new(&parsed.params, parsed.quantity).map(|g| (g, parsed)))
    {
        Ok((gcra, parsed)) => {
            let reply = gcra.decide(None, NOW_NS).outcome.to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::fixed(&argv) {
        Ok(parsed) => {
            let reply = FixedWindow::new(&parsed.params, parsed.quantity, parsed.count_denied)
                .decide(None, NOW_NS / 1_000_000)
                .outcome
                .to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::window(&argv) {
        Ok(parsed) => {
            let decision = SlidingWindow::new(&parsed.params, parsed.quantity)
                .decide(None, NOW_NS / 1_000_000);
            let reply = decision
                .expect("an empty log decodes")
                .outcome
                .to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::lease(&argv) {
        Ok(parsed) => {
            assert!((1..=255).contains(&parsed.holder.len()));
            let decision =
                Lease::new(&parsed.params).decide(None, parsed.holder, NOW_NS / 1_000_000);
            match decision {
                Ok(decision) => {
                    let reply = decision.outcome.to_reply(parsed.unit);
                    assert_eq!(reply[0], 0, "an empty set admits");
                    assert_eq!(reply[2], reply[1] - 1);
                }
                Err(error) => assert_eq!(error, Error::TooLarge("lease_time")),
            }
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::release(&argv) {
        Ok((holder, _)) => assert!((1..=255).contains(&holder.len())),
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::smooth(&argv) {
        Ok(parsed) => assert!((0..=args::MAX_SMOOTH_QUANTITY).contains(&parsed.quantity)),
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    if let Err(error) = args::holders(&argv) {
        assert!(error.message().starts_with("ERR "));
    }
    match all_args::all(&argv).and_then(|parsed| all_on_empty_keys(&parsed)) {
        Ok(()) => {}
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
});

/// CL.ALL over keys that hold nothing yet: every limiter decides, the binding answer is one
/// of theirs, and a request that can fit every limiter is admitted.
fn all_on_empty_keys(parsed: &all_args::AllArgs) -> Result<(), Error> {
    let now = Instant::from_ns(NOW_NS);
    let mut verdicts: Vec<Verdict> = Vec::new();
    for spec in &parsed.limiters {
        let empty = match &spec.args {
            LimiterArgs::Throttle(args) => {
                Reading::Throttle(Gcra::new(&args.params, args.quantity)?, None)
            }
            LimiterArgs::Fixed(args) => Reading::Fixed(
                FixedWindow::new(&args.params, args.quantity, args.count_denied),
                None,
            ),
            LimiterArgs::Window(args) => {
                Reading::Sliding(SlidingWindow::new(&args.params, args.quantity), None)
            }
            LimiterArgs::Lease(params) => Reading::Lease(
                Lease::new(params),
                parsed.holder.map(|(holder, _)| holder),
                None,
            ),
        };
        verdicts.push(empty.decide(now)?);
    }
    let combined = all::combine(verdicts.iter(), parsed.unit);
    assert!(combined.binding < verdicts.len());
    assert_eq!(combined.admitted, verdicts.iter().all(Verdict::admitted));
    Ok(())
}
