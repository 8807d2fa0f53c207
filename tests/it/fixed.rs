//! What is particular to CL.FIXED, on real Redis 7.0 and Valkey 9 servers. The contract all
//! three commands share is in contract.rs.

use crate::harness::run;
use crate::harness::{error_of, limiter, server_now_ns, snapshot, Flavor, Server};

both_servers!(
    the_key_holds_the_count_and_expires_at_the_window_end,
    keys_left_by_the_incr_expire_recipe_keep_working,
    a_count_without_an_expiry_is_refused,
    ms_periods_and_waits_are_in_milliseconds,
);

fn the_key_holds_the_count_and_expires_at_the_window_end(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let before_ms = server_now_ns(&mut con) / 1_000_000;
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60"]),
        [0, 5, 4, -1, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60", "3"]),
        [0, 5, 1, -1, 60]
    );
    let after_ms = server_now_ns(&mut con) / 1_000_000;
    let (count, end) = snapshot(&mut con, b"f");
    assert_eq!(count.as_deref(), Some(&b"4"[..]));
    // The window opened at the first call and lasts 60 s.
    assert!(
        (before_ms + 60_000..=after_ms + 60_000).contains(&end),
        "{end}"
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60", "2"]),
        [1, 5, 1, 60, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60"]),
        [0, 5, 0, -1, 60]
    );
    assert_eq!(snapshot(&mut con, b"f"), (Some(b"5".to_vec()), end));
}

fn keys_left_by_the_incr_expire_recipe_keep_working(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    run::<()>(&mut con, ("INCRBY", &["recipe", "3"]));
    run::<()>(&mut con, ("PEXPIRE", &["recipe", "30500"]));
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["recipe", "4", "60"]),
        [0, 4, 0, -1, 31]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["recipe", "4", "60"]),
        [1, 4, 0, 31, 31]
    );
}

fn a_count_without_an_expiry_is_refused(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // What the INCR + EXPIRE recipe leaves when it dies between its two commands: a window
    // that never ends. Refusing it shows the problem instead of locking users out forever.
    run::<()>(&mut con, ("SET", &["stuck", "2"]));
    let error = error_of(&mut con, "CL.FIXED", &[b"stuck", b"5", b"60"]);
    assert!(error.contains("not a valid state"), "{error}");
    run::<()>(&mut con, ("SET", &["negative", "-2", "PX", "5000"]));
    let error = error_of(&mut con, "CL.FIXED", &[b"negative", b"5", b"60"]);
    assert!(error.contains("not a valid state"), "{error}");
    assert_eq!(snapshot(&mut con, b"stuck"), (Some(b"2".to_vec()), -1));
}

fn ms_periods_and_waits_are_in_milliseconds(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let first = limiter(&mut con, "CL.FIXED", &["m", "2", "60000", "2", "MS"]);
    assert_eq!(first, [0, 2, 0, -1, 60000]);
    let denied = limiter(&mut con, "CL.FIXED", &["m", "2", "60000", "MS"]);
    assert_eq!(denied[..3], [1, 2, 0]);
    // A few milliseconds of real time may have passed.
    assert!((59_900..=60_000).contains(&denied[3]), "{denied:?}");
    assert_eq!(denied[3], denied[4]);
}

/// Its clock frozen where the test puts it.
#[test]
fn the_window_ends_exactly_one_period_after_it_opened_under_a_controlled_clock() {
    const BASE: i64 = 1_900_000_000_000;
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let mut at = |offset_ms: i64, quantity: &str| {
        server.set_clock_ms(BASE + offset_ms);
        limiter(&mut con, "CL.FIXED", &["w", "2", "1000", quantity, "MS"])
    };
    assert_eq!(at(0, "1"), [0, 2, 1, -1, 1000]);
    assert_eq!(at(500, "1"), [0, 2, 0, -1, 500]);
    assert_eq!(at(999, "1"), [1, 2, 0, 1, 1]);
    assert_eq!(at(999, "0"), [0, 2, 0, -1, 1]);
    // At the end the window is over, though the server keeps its key through this
    // millisecond: a new window opens here.
    assert_eq!(at(1_000, "0"), [0, 2, 2, -1, 0]);
    assert_eq!(at(1_000, "1"), [0, 2, 1, -1, 1000]);
    let mut con = server.connection();
    assert_eq!(
        snapshot(&mut con, b"w"),
        (Some(b"1".to_vec()), BASE + 2_000)
    );
}

/// With ALIGN the windows are the multiples of the period since the epoch: a window opened
/// mid-minute ends on the minute, the key expires there, and a key opened by the other form
/// keeps its count and its end until that window is over.
#[test]
fn aligned_windows_end_on_the_multiples_of_the_period_under_a_controlled_clock() {
    // A whole minute since the epoch, then 30.5 s into it.
    const MINUTE: i64 = 31_666_666 * 60_000;
    let server = Server::with_fake_clock(MINUTE + 30_500);
    let mut con = server.connection();
    let mut other = server.connection();
    let mut at = |offset_ms: i64, key: &str, align: bool| {
        server.set_clock_ms(MINUTE + offset_ms);
        let mut args = vec![key, "2", "60000", "1", "MS"];
        if align {
            args.push("ALIGN");
        }
        limiter(&mut con, "CL.FIXED", &args)
    };
    assert_eq!(at(30_500, "aligned", true), [0, 2, 1, -1, 29_500]);
    assert_eq!(at(59_999, "aligned", true), [0, 2, 0, -1, 1]);
    assert_eq!(at(60_000, "aligned", true), [0, 2, 1, -1, 60_000]);
    assert_eq!(
        snapshot(&mut other, b"aligned"),
        (Some(b"1".to_vec()), MINUTE + 120_000)
    );
    // Opened a period from its first call; ALIGN later keeps that window to its end.
    assert_eq!(at(60_010, "opened", false), [0, 2, 1, -1, 60_000]);
    assert_eq!(at(120_000, "opened", true), [0, 2, 0, -1, 10]);
    assert_eq!(at(120_005, "opened", true), [1, 2, 0, 5, 5]);
    // That window over, ALIGN opens the grid's.
    assert_eq!(at(125_000, "opened", true), [0, 2, 1, -1, 55_000]);
}

/// OFFSET lays the aligned grid in a local time: at UTC+05:30 an hour's windows start at half
/// past the hour (UTC), at UTC-05:00 on the hour again, and a key expires where the grid says.
#[test]
fn an_offset_moves_the_aligned_grid_under_a_controlled_clock() {
    const HOUR: i64 = 527_777 * 3_600_000;
    let server = Server::with_fake_clock(HOUR + 600_000);
    let mut con = server.connection();
    let mut other = server.connection();
    let mut at = |offset_ms: i64, key: &str, minutes: &str| {
        server.set_clock_ms(HOUR + offset_ms);
        limiter(
            &mut con,
            "CL.FIXED",
            &[key, "5", "3600", "1", "ALIGN", "OFFSET", minutes],
        )
    };
    // 00:10 past the hour (UTC): at +05:30 the local hour ends at 00:30 UTC; at -05:00, at
    // 01:00 UTC.
    assert_eq!(at(600_000, "india", "330"), [0, 5, 4, -1, 1_200]);
    assert_eq!(at(600_000, "east", "-300"), [0, 5, 4, -1, 3_000]);
    assert_eq!(
        snapshot(&mut other, b"india"),
        (Some(b"1".to_vec()), HOUR + 1_800_000)
    );
    assert_eq!(at(1_800_000, "india", "330"), [0, 5, 4, -1, 3_600]);
}
