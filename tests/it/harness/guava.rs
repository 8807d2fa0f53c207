//! Guava's own `RateLimiter`, as the oracle CL.SMOOTH is held to: tests/oracle/guava.rs, which
//! src/smooth.rs's unit tests run too.

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/oracle/guava.rs"
));
