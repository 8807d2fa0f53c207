//! Argument vectors of any length and content, through every command's parser and, where
//! they parse, into the algorithms: nothing may panic, and every parse error names a reply.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_cell::args::{self, parse_i64};
use redis_cell::fixed::FixedWindow;
use redis_cell::gcra::Gcra;
use redis_cell::window::SlidingWindow;

const NOW_NS: i64 = 1_795_910_400_000_000_000;

fuzz_target!(|argv: Vec<Vec<u8>>| {
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    for arg in &argv {
        if let Some(value) = parse_i64(arg) {
            assert_eq!(value.to_string().as_bytes(), *arg);
        }
    }
    match args::throttle(&argv).and_then(|parsed| Gcra::new(&parsed).map(|g| (g, parsed))) {
        Ok((gcra, parsed)) => {
            let reply = gcra.decide(None, NOW_NS).outcome.to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::fixed(&argv) {
        Ok(parsed) => {
            let reply = FixedWindow::new(&parsed)
                .decide(None, NOW_NS / 1_000_000)
                .outcome
                .to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
    match args::window(&argv) {
        Ok(parsed) => {
            let decision = SlidingWindow::new(&parsed).decide(None, NOW_NS / 1_000_000);
            let reply = decision
                .expect("an empty log decodes")
                .outcome
                .to_reply(parsed.unit);
            assert!(reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0);
        }
        Err(error) => assert!(error.message().starts_with("ERR ")),
    }
});
