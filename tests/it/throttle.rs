//! What is particular to CL.THROTTLE, on real Redis 7.0 and Valkey 9 servers with the module
//! loaded. The contract all three commands share is in contract.rs.

use crate::harness::run;
use crate::harness::{error_of, limiter, server_now_ns, snapshot, Flavor, Server};

both_servers!(
    the_worked_example_replies_exactly,
    ms_periods_and_waits_are_in_milliseconds,
    state_is_redis_cells_tat_expiring_at_itself,
    keys_written_by_redis_cell_keep_working,
    corrupt_state_gets_an_error_and_stays_as_it_was,
);

fn the_worked_example_replies_exactly(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // Real time moves on between calls, by far less than the second these waits round up
    // to, so the replies are those of one instant.
    for i in 1..=16 {
        assert_eq!(
            limiter(&mut con, "CL.THROTTLE", &["user123", "15", "30", "60", "1"]),
            [0, 16, 16 - i, -1, 2 * i]
        );
    }
    for _ in 0..2 {
        assert_eq!(
            limiter(&mut con, "CL.THROTTLE", &["user123", "15", "30", "60", "1"]),
            [1, 16, 0, 2, 32]
        );
    }
}

fn ms_periods_and_waits_are_in_milliseconds(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // 5 per 1000 ms: T = 200 ms, τ = 1000 ms.
    let first = limiter(&mut con, "CL.THROTTLE", &["k", "4", "5", "1000", "MS"]);
    assert_eq!(first, [0, 5, 4, -1, 200]);
    let mut pipe = redis::pipe();
    for _ in 0..5 {
        pipe.cmd("CL.THROTTLE")
            .arg(&["k", "4", "5", "1000", "1", "ms"]);
    }
    let replies: Vec<Vec<i64>> = pipe.atomic().query(&mut con).unwrap();
    assert_eq!(&replies[3][..4], [0, 5, 0, -1]);
    let denied = &replies[4];
    assert_eq!(&denied[..3], [1, 5, 0]);
    // Milliseconds of real time may have passed since the first call.
    assert!((190..=200).contains(&denied[3]), "{denied:?}");
    assert!((990..=1000).contains(&denied[4]), "{denied:?}");
}

fn state_is_redis_cells_tat_expiring_at_itself(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let before = server_now_ns(&mut con);
    limiter(&mut con, "CL.THROTTLE", &["tat", "9", "10", "1", "3"]);
    let after = server_now_ns(&mut con);
    let (value, expiry) = snapshot(&mut con, b"tat");
    let tat: i64 = String::from_utf8(value.unwrap()).unwrap().parse().unwrap();
    // Three units of T = 100 ms after the call's instant, in nanoseconds since the epoch.
    let slack = if flavor == Flavor::Redis {
        1_000_000
    } else {
        1_000
    };
    assert!(
        tat >= before - slack + 300_000_000 && tat <= after + 300_000_000,
        "{tat}"
    );
    // The key expires at the TAT, rounded up to the millisecond.
    assert_eq!(expiry, (tat + 999_999) / 1_000_000);
}

fn keys_written_by_redis_cell_keep_working(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // redis-cell leaves the TAT as a decimal string; 39.5 s ahead with T = 2 s and τ = 32 s
    // means the next unit fits in 9.5 s. (The half second keeps the rounded waits clear of
    // the millisecond by which the module's clock may trail TIME on Redis 7.0.)
    let tat = server_now_ns(&mut con) + 39_500_000_000;
    run::<()>(&mut con, ("SET", "legacy", tat.to_string(), "PX", 40_000));
    let reply = limiter(&mut con, "CL.THROTTLE", &["legacy", "15", "30", "60"]);
    assert_eq!(reply, [1, 16, 0, 10, 40]);
    run::<()>(
        &mut con,
        ("SET", "legacy", (tat - 20_000_000_000).to_string()),
    );
    let reply = limiter(&mut con, "CL.THROTTLE", &["legacy", "15", "30", "60"]);
    assert_eq!(reply, [0, 16, 5, -1, 22]);
}

fn corrupt_state_gets_an_error_and_stays_as_it_was(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for value in [
        &b"not a number"[..],
        b"",
        b"12.5",
        b" 1",
        b"99999999999999999999",
        &[0xff, 0x31],
    ] {
        run::<()>(&mut con, ("SET", "bad", value));
        for quantity in ["1", "0"] {
            let error = error_of(
                &mut con,
                "CL.THROTTLE",
                &[b"bad", b"1", b"1", b"1", quantity.as_bytes()],
            );
            assert!(
                error.starts_with("ERR") && error.contains("not a valid state"),
                "{error}"
            );
        }
        assert_eq!(snapshot(&mut con, b"bad"), (Some(value.to_vec()), -1));
    }
}

/// Its wall clock frozen where the test puts it. The server's reading of the frozen clock
/// still drifts by a fraction of a millisecond, so the instants below sit well inside their
/// rounding units.
#[test]
fn refill_and_expiry_follow_the_server_clock_under_a_controlled_clock() {
    const BASE: i64 = 1_900_000_000_000; // 2030-03-17T17:46:40Z, in ms
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let mut at = |offset_ms: i64, quantity: &str| {
        server.set_clock_ms(BASE + offset_ms);
        limiter(
            &mut con,
            "CL.THROTTLE",
            &["clocked", "2", "1", "10", quantity],
        )
    };
    // limit 3, T = 10 s, τ = 30 s.
    assert_eq!(at(0, "1"), [0, 3, 2, -1, 10]);
    assert_eq!(at(250, "1"), [0, 3, 1, -1, 20]);
    assert_eq!(at(500, "1"), [0, 3, 0, -1, 30]);
    assert_eq!(at(750, "1"), [1, 3, 0, 10, 30]);
    assert_eq!(at(9_900, "1"), [1, 3, 0, 1, 21]);
    assert_eq!(at(10_100, "1"), [0, 3, 0, -1, 30]);
    assert_eq!(at(25_300, "0"), [0, 3, 1, -1, 15]);

    let mut con = server.connection();
    // The TAT is 40 s after the first call, which read the frozen clock a few µs late.
    let (value, expiry) = snapshot(&mut con, b"clocked");
    let tat: i64 = String::from_utf8(value.unwrap()).unwrap().parse().unwrap();
    assert!(
        (0..1_000_000).contains(&(tat - (BASE + 40_000) * 1_000_000)),
        "{tat}"
    );
    assert_eq!(expiry, (tat + 999_999) / 1_000_000);
    server.set_clock_ms(BASE + 39_990);
    let exists: i64 = run(&mut con, ("EXISTS", "clocked"));
    assert_eq!(exists, 1);
    server.set_clock_ms(BASE + 40_010);
    let exists: i64 = run(&mut con, ("EXISTS", "clocked"));
    assert_eq!(exists, 0);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["clocked", "2", "1", "10", "0"]),
        [0, 3, 3, -1, 0]
    );
}
