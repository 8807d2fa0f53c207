//! BLOCK: waiting inside the server for capacity, first come, first served, on real Redis 7.0
//! and Valkey 9 servers. Waits run on the real clock, with bounds generous enough for a
//! loaded machine; every wait is bounded.

use crate::harness::run;
use std::time::{Duration, Instant};

use crate::harness::waiting::{connect, ms_between, waiting_field, Waiter};
use crate::harness::{
    aof_options, dump, keyspace, limiter, replicate, snapshot, stats_line, wait_for_replica,
    Flavor, Server, ServerKind,
};

both_servers!(
    a_waiter_is_admitted_when_its_units_fit,
    waiters_on_a_key_are_admitted_in_the_order_they_came,
    a_timeout_answers_the_denial_of_that_instant_and_takes_nothing,
    a_quantity_that_can_never_fit_is_denied_at_once,
    a_call_behind_waiters_takes_nothing_from_them,
    a_waiter_that_disconnects_takes_nothing_and_leaves_the_line,
    client_unblock_ends_a_wait_and_takes_nothing,
    crossed_waits_of_cl_all_both_complete,
    a_replica_and_an_aof_restart_hold_the_same_bytes_after_admissions_that_waited,
    a_wait_without_end_answers_at_once_in_a_transaction_and_a_script,
    block_is_read_in_any_case,
    info_counts_the_waits,
    a_primary_that_becomes_a_replica_sends_its_waiters_away,
);

/// One unit per 200 ms, no burst: `CL.THROTTLE key 0 1 200 quantity MS`.
const ONE_PER_200_MS: [&str; 3] = ["0", "1", "200"];

fn throttle_args<'a>(key: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![key];
    args.extend(ONE_PER_200_MS);
    args.extend(["1", "MS"]);
    args.extend(extra);
    args
}

fn a_waiter_is_admitted_when_its_units_fit(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]))[0],
        0
    );
    let started = Instant::now();
    let reply = limiter(
        &mut con,
        "CL.THROTTLE",
        &throttle_args("k", &["BLOCK", "0"]),
    );
    let waited = ms_between(started, Instant::now());
    assert_eq!(reply, [0, 1, 0, -1, 200]);
    // Not before the unit fits (200 ms after the first call, which came before `started`,
    // so a little less here), and not much after it.
    assert!((150..1_000).contains(&waited), "waited {waited} ms");
}

fn waiters_on_a_key_are_admitted_in_the_order_they_came(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]))[0],
        0
    );
    let waiters: Vec<Waiter> = (1..=5)
        .map(|count| {
            Waiter::parked(
                &server,
                &mut con,
                count,
                "CL.THROTTLE",
                &throttle_args("k", &["BLOCK", "0"]),
            )
        })
        .collect();
    let replies: Vec<(Vec<i64>, Instant)> = waiters.into_iter().map(Waiter::reply).collect();
    for (reply, _) in &replies {
        assert_eq!(reply, &[0, 1, 0, -1, 200]);
    }
    // In arrival order, one unit at a time: each 200 ms after the one before.
    for pair in replies.windows(2) {
        let gap = ms_between(pair[0].1, pair[1].1);
        assert!((150..600).contains(&gap), "{gap} ms between admissions");
    }
    // Each took exactly its one unit: the sixth unit since the start is not due for another
    // 200 ms or so.
    let next = limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]));
    assert_eq!(next[0], 1, "{next:?}");
    assert_eq!(waiting_field(&mut con, "admitted"), 5);
}

fn a_timeout_answers_the_denial_of_that_instant_and_takes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(limiter(&mut con, "CL.FIXED", &["f", "1", "60"])[0], 0);
    let before = snapshot(&mut con, b"f");
    let started = Instant::now();
    let reply = limiter(&mut con, "CL.FIXED", &["f", "1", "60", "BLOCK", "150"]);
    let waited = ms_between(started, Instant::now());
    assert_eq!(reply[..3], [1, 1, 0]);
    assert!((59..=60).contains(&reply[3]), "{reply:?}");
    // The deadline is the server's clock at parking plus the timeout; Redis 7.0's module clock
    // reads whole milliseconds, so it can start up to a millisecond before the client's.
    assert!((149..1_000).contains(&waited), "waited {waited} ms");
    assert_eq!(snapshot(&mut con, b"f"), before);
    assert_eq!(waiting_field(&mut con, "timed_out"), 1);
    assert_eq!(
        stats_line(&mut con, "cl_fixed"),
        "calls=2,allowed=1,denied=1,peeks=0,refunds=0,errors=0"
    );
}

fn a_quantity_that_can_never_fit_is_denied_at_once(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    let started = Instant::now();
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60", "4", "BLOCK", "0"]),
        [1, 3, 3, -1, 0]
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(waiting_field(&mut con, "waited"), 0);
}

fn a_call_behind_waiters_takes_nothing_from_them(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    // Two of three units taken in a 1 s window: one left.
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "3", "1000", "2", "MS"]),
        [0, 3, 1, -1, 1000]
    );
    let all_three = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.FIXED",
        &["f", "3", "1000", "3", "MS", "BLOCK", "0"],
    );
    // The unit left would fit this call, but it is the waiter's: denied, none remaining.
    let behind = limiter(&mut con, "CL.FIXED", &["f", "3", "1000", "1", "MS"]);
    assert_eq!(behind[..3], [1, 3, 0]);
    assert!(behind[3] >= 1, "{behind:?}");
    assert_eq!(snapshot(&mut con, b"f").0.as_deref(), Some(&b"2"[..]));
    // A peek takes nothing, and still answers.
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "3", "1000", "0", "MS"])[..3],
        [0, 3, 1]
    );
    // The waiter gets its three units in the next window.
    let (reply, _) = all_three.reply();
    assert_eq!(reply[..3], [0, 3, 0]);
    assert_eq!(snapshot(&mut con, b"f").0.as_deref(), Some(&b"3"[..]));
}

fn a_waiter_that_disconnects_takes_nothing_and_leaves_the_line(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]))[0],
        0
    );
    let first = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.THROTTLE",
        &throttle_args("k", &["BLOCK", "0"]),
    );
    let second = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.THROTTLE",
        &throttle_args("k", &["BLOCK", "0"]),
    );
    let started = Instant::now();
    run::<()>(&mut con, ("CLIENT", &["KILL", "ID", &first.id.to_string()]));
    assert!(first.handle.join().unwrap().0.is_err());
    // The second takes the unit the first waited for, when it fits.
    let (reply, at) = second.reply();
    assert_eq!(reply, [0, 1, 0, -1, 200]);
    assert!(ms_between(started, at) < 1_000);
    assert_eq!(waiting_field(&mut con, "left"), 1);
    assert_eq!(waiting_field(&mut con, "admitted"), 1);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]))[0],
        1
    );
}

fn client_unblock_ends_a_wait_and_takes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(limiter(&mut con, "CL.WINDOW", &["w", "1", "60"])[0], 0);
    let before = snapshot(&mut con, b"w");
    let unblock = |con: &mut redis::Connection, waiter: &Waiter, how: &str| -> i64 {
        run(con, ("CLIENT", &["UNBLOCK", &waiter.id.to_string(), how]))
    };
    let args = ["w", "1", "60", "BLOCK", "0"];
    if !ServerKind::of(&mut con).client_unblock_reaches_waiters() {
        // Older servers mishandle CLIENT UNBLOCK racing a module's own unblocking: the module
        // keeps it away from its waiters there.
        let waiter = Waiter::parked(&server, &mut con, 1, "CL.WINDOW", &args);
        assert_eq!(unblock(&mut con, &waiter, "TIMEOUT"), 0);
        assert_eq!(unblock(&mut con, &waiter, "ERROR"), 0);
        assert_eq!(waiting_field(&mut con, "now"), 1);
        run::<()>(
            &mut con,
            ("CLIENT", &["KILL", "ID", &waiter.id.to_string()]),
        );
        assert!(waiter.handle.join().unwrap().0.is_err());
        assert_eq!(waiting_field(&mut con, "left"), 1);
        assert_eq!(snapshot(&mut con, b"w"), before);
        return;
    }
    let timeout = Waiter::parked(&server, &mut con, 1, "CL.WINDOW", &args);
    assert_eq!(unblock(&mut con, &timeout, "TIMEOUT"), 1);
    let (reply, _) = timeout.reply();
    assert_eq!(reply[..3], [1, 1, 0]);
    assert!((59..=60).contains(&reply[3]), "{reply:?}");

    let error = Waiter::parked(&server, &mut con, 1, "CL.WINDOW", &args);
    assert_eq!(unblock(&mut con, &error, "ERROR"), 1);
    assert!(error.error().starts_with("UNBLOCKED"));
    assert_eq!(snapshot(&mut con, b"w"), before);
    assert_eq!(waiting_field(&mut con, "now"), 0);
    assert_eq!(waiting_field(&mut con, "timed_out"), 1);
    assert_eq!(waiting_field(&mut con, "left"), 1);
}

fn crossed_waits_of_cl_all_both_complete(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    let limit = ["THROTTLE", "0", "1", "200"];
    let call = |first: &'static str, second: &'static str| -> Vec<String> {
        let mut args: Vec<String> = vec!["2".into(), first.into(), second.into()];
        args.extend(limit.iter().chain(&limit).map(|s| s.to_string()));
        args.extend(["MS", "BLOCK", "0"].map(String::from));
        args
    };
    let as_strs = |args: &[String]| {
        args.iter()
            .map(String::as_str)
            .collect::<Vec<&str>>()
            .join(" ")
    };
    let one = call("k1", "k2");
    let two = call("k2", "k1");
    assert_eq!(
        limiter(
            &mut con,
            "CL.ALL",
            &one.iter().map(String::as_str).collect::<Vec<_>>()
        )[0],
        0
    );
    let first = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.ALL",
        &one.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let second = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.ALL",
        &two.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let (a, a_at) = first.reply();
    let (b, b_at) = second.reply();
    assert_eq!(a[0], 0, "{}", as_strs(&one));
    assert_eq!(b[0], 0, "{}", as_strs(&two));
    assert!(a_at <= b_at);
}

fn a_replica_and_an_aof_restart_hold_the_same_bytes_after_admissions_that_waited(flavor: Flavor) {
    let primary = Server::start_with(flavor, aof_options(None));
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = connect(&primary);
    // Each key full for about 200 ms, and long-lived once its waiter is admitted (GCRA with a
    // burst of 51; a window of a minute opening at the admission), but the sliding log.
    assert_eq!(
        limiter(
            &mut con,
            "CL.THROTTLE",
            &["t", "50", "1", "200", "51", "MS"]
        )[0],
        0
    );
    run::<()>(&mut con, ("SET", &["f", "1", "PX", "200"]));
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "1", "200", "1", "MS"])[0],
        0
    );
    let calls: [(&str, &[&str]); 3] = [
        (
            "CL.THROTTLE",
            &["t", "50", "1", "200", "1", "MS", "BLOCK", "0"],
        ),
        ("CL.FIXED", &["f", "1", "60000", "1", "MS", "BLOCK", "0"]),
        ("CL.WINDOW", &["w", "1", "200", "1", "MS", "BLOCK", "0"]),
    ];
    let waiters: Vec<Waiter> = calls
        .iter()
        .enumerate()
        .map(|(index, (command, args))| {
            Waiter::parked(&primary, &mut con, index as i64 + 1, command, args)
        })
        .collect();
    for waiter in waiters {
        assert_eq!(waiter.reply().0[0], 0);
    }
    wait_for_replica(&mut con);
    let mut replica_con = connect(&replica);
    for key in [&b"t"[..], b"f", b"w"] {
        assert!(
            dump(&mut con, key).is_some(),
            "{}",
            String::from_utf8_lossy(key)
        );
        assert_eq!(dump(&mut con, key), dump(&mut replica_con, key));
        assert_eq!(snapshot(&mut con, key), snapshot(&mut replica_con, key));
    }
    // The log lives only 200 ms: the restart compares the other two.
    run::<()>(&mut con, ("DEL", "w"));
    let expected = keyspace(&mut con);
    assert_eq!(expected.len(), 2);
    drop(replica);
    let dir = primary.shutdown();
    let mut aof = Vec::new();
    for entry in walk(dir.path()) {
        aof.extend(std::fs::read(entry).unwrap_or_default());
    }
    assert!(!aof.is_empty());
    // Waiting propagates nothing: no BLOCK reaches the AOF.
    assert!(!aof.windows(5).any(|w| w.eq_ignore_ascii_case(b"BLOCK")));
    let restarted = Server::start_with(flavor, aof_options(Some(dir)));
    assert_eq!(keyspace(&mut connect(&restarted)), expected, "AOF restart");
    drop(restarted);
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// contract.rs runs a BLOCK with a timeout in a transaction and a script; what is BLOCK's own
/// is that a wait with no end (`BLOCK 0`) answers at once there too, for a rate limit and for
/// a lease, and that a slot freed within the transaction is taken in it.
fn a_wait_without_end_answers_at_once_in_a_transaction_and_a_script(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(limiter(&mut con, "CL.FIXED", &["f", "1", "60"])[0], 0);
    let (denied, first, waiting, freed, again): (Vec<i64>, Vec<i64>, Vec<i64>, i64, Vec<i64>) =
        redis::pipe()
            .atomic()
            .cmd("CL.FIXED")
            .arg(&["f", "1", "60", "BLOCK", "0"])
            .cmd("CL.LEASE")
            .arg(&["pool", "1", "60", "a"])
            .cmd("CL.LEASE")
            .arg(&["pool", "1", "60", "b", "BLOCK", "0"])
            .cmd("CL.RELEASE")
            .arg(&["pool", "a"])
            .cmd("CL.LEASE")
            .arg(&["pool", "1", "60", "b"])
            .query(&mut con)
            .unwrap();
    assert_eq!(denied[..3], [1, 1, 0]);
    assert_eq!(first, [0, 1, 0, -1, 60]);
    assert_eq!(waiting, [1, 1, 0, 60, 60]);
    assert_eq!(freed, 1);
    assert_eq!(again, [0, 1, 0, -1, 60]);
    let script = "return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))";
    let fixed: Vec<i64> = run(
        &mut con,
        (
            "EVAL",
            script,
            1,
            "f",
            &["CL.FIXED", "1", "60", "BLOCK", "0"],
        ),
    );
    assert_eq!(fixed[..3], [1, 1, 0]);
    let lease: Vec<i64> = run(
        &mut con,
        (
            "EVAL",
            script,
            1,
            "pool",
            &["CL.LEASE", "1", "60", "c", "BLOCK", "0"],
        ),
    );
    assert_eq!(lease, [1, 1, 0, 60, 60]);
    assert_eq!(waiting_field(&mut con, "waited"), 0);
}

/// Its bad input is contract.rs's; what is its own is that the keyword is read in any case.
fn block_is_read_in_any_case(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["k", "1", "1", "block", "10"])[0],
        0
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["k", "1", "1", "Block", "10"])[..3],
        [1, 1, 0]
    );
    assert_eq!(waiting_field(&mut con, "timed_out"), 1);
}

fn info_counts_the_waits(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(
        stats_line(&mut con, "cl_waiting"),
        "now=0,waited=0,admitted=0,timed_out=0,left=0"
    );
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &throttle_args("k", &[]))[0],
        0
    );
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.THROTTLE",
        &throttle_args("k", &["BLOCK", "0"]),
    );
    assert_eq!(waiting_field(&mut con, "waited"), 1);
    waiter.reply();
    assert_eq!(
        stats_line(&mut con, "cl_waiting"),
        "now=0,waited=1,admitted=1,timed_out=0,left=0"
    );
    assert_eq!(
        stats_line(&mut con, "cl_throttle"),
        "calls=2,allowed=2,denied=0,peeks=0,refunds=0,errors=0"
    );
    run::<()>(&mut con, ("CONFIG", "RESETSTAT"));
    assert_eq!(
        stats_line(&mut con, "cl_waiting"),
        "now=0,waited=0,admitted=0,timed_out=0,left=0"
    );
}

fn a_primary_that_becomes_a_replica_sends_its_waiters_away(flavor: Flavor) {
    let primary = Server::start(flavor);
    let other = Server::start(flavor);
    let mut con = connect(&primary);
    assert_eq!(limiter(&mut con, "CL.FIXED", &["f", "1", "60"])[0], 0);
    let waiter = Waiter::parked(
        &primary,
        &mut con,
        1,
        "CL.FIXED",
        &["f", "1", "60", "BLOCK", "0"],
    );
    replicate(&primary, &other);
    // The server's own answer to its blocked clients on a role change.
    assert!(waiter.error().starts_with("UNBLOCKED"));
    let mut con = connect(&primary);
    assert_eq!(waiting_field(&mut con, "now"), 0);
    assert_eq!(waiting_field(&mut con, "left"), 1);
}

/// Under a stepped clock: a waiter is not admitted a millisecond before its unit fits, and is
/// at that instant; a timeout comes at its millisecond, not before.
#[test]
fn under_a_controlled_clock_admission_and_timeout_come_at_their_instants() {
    const BASE: i64 = 1_796_083_200_000; // 2026-12-01T00:00:00Z
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = connect(&server);
    let still_waiting = |con: &mut redis::Connection, count: i64| {
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(waiting_field(con, "now"), count);
    };
    // One unit per 10 s: the next fits at BASE + 10 s.
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["k", "0", "1", "10"])[0],
        0
    );
    let admitted = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.THROTTLE",
        &["k", "0", "1", "10", "1", "BLOCK", "0"],
    );
    // And a window full for a minute, waited on for at most 5 s.
    assert_eq!(limiter(&mut con, "CL.FIXED", &["f", "1", "60"])[0], 0);
    let timed_out = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.FIXED",
        &["f", "1", "60", "BLOCK", "5000"],
    );

    server.set_clock_ms(BASE + 4_999);
    still_waiting(&mut con, 2);
    server.set_clock_ms(BASE + 5_000);
    let (reply, _) = timed_out.reply();
    assert_eq!(reply, [1, 1, 0, 55, 55]);

    server.set_clock_ms(BASE + 9_999);
    still_waiting(&mut con, 1);
    server.set_clock_ms(BASE + 10_000);
    let (reply, _) = admitted.reply();
    assert_eq!(reply, [0, 1, 0, -1, 10]);
    // Taken at exactly BASE + 10 s: the TAT is 10 s on from there.
    let (tat, _) = snapshot(&mut con, b"k");
    assert_eq!(
        tat.as_deref(),
        Some(
            (BASE + 20_000)
                .saturating_mul(1_000_000)
                .to_string()
                .as_bytes()
        )
    );
    assert_eq!(waiting_field(&mut con, "admitted"), 1);
    assert_eq!(waiting_field(&mut con, "timed_out"), 1);
}
