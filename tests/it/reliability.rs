//! The three commands under load and failure, on real servers: a long random workload whose
//! every key is identical on a replica and after AOF, AOF-rewrite and RDB restarts; one hot
//! key hammered by 50 connections at once; stored state from a clock that stepped; memory
//! exhausted; and ACL users limited to their keys.

use crate::harness::run;
use std::time::{Duration, Instant};

use crate::harness::{
    aof_options, error_of, info_field, keyspace, limiter, replicate, snapshot, wait_for_replica,
    Flavor, Options, Rng, Server,
};

both_servers!(
    a_random_workload_is_identical_on_a_replica_and_after_every_restart,
    a_hot_key_under_50_connections_admits_no_more_than_its_limit,
    stored_states_from_a_stepped_clock_never_panic_or_wait_negatively,
    with_memory_exhausted_calls_get_the_oom_error_and_write_nothing,
);

/// How many calls the random workload makes (REDIS_CELL_WORKLOAD overrides).
fn workload_calls() -> u64 {
    std::env::var("REDIS_CELL_WORKLOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Random calls of all three commands over 2,000 keys, with random limits, quantities
/// (peeks and too-large ones included) and units, in pipelines of 1,000.
fn random_workload(con: &mut redis::Connection, seed: u64, calls: u64) {
    let mut rng = Rng::new(seed);
    let mut done = 0;
    while done < calls {
        let mut pipe = redis::pipe();
        for _ in 0..1_000.min(calls - done) {
            let id = rng.below(2_000);
            let key = format!("key:{id}");
            let quantity = rng.below(4).to_string();
            let unit: &[&str] = if rng.below(2) == 0 { &[] } else { &["MS"] };
            let period = if unit.is_empty() { "3600" } else { "3600000" };
            let limit = (1 + rng.below(20)).to_string();
            // The command follows from the key, so that a key always holds one kind of state.
            match id % 3 {
                0 => pipe
                    .cmd("CL.THROTTLE")
                    .arg(format!("t{key}"))
                    .arg(&[&limit, "10", period, &quantity])
                    .arg(unit),
                1 => pipe
                    .cmd("CL.FIXED")
                    .arg(format!("f{key}"))
                    .arg(&[&limit, period, &quantity])
                    .arg(unit),
                _ => pipe
                    .cmd("CL.WINDOW")
                    .arg(format!("w{key}"))
                    .arg(&[&limit, period, &quantity])
                    .arg(unit),
            };
            done += 1;
        }
        let replies: Vec<Vec<i64>> = pipe.query(con).unwrap();
        for reply in replies {
            assert_eq!(reply.len(), 5);
            assert!(
                reply[2] >= 0 && reply[2] <= reply[1] && reply[4] >= 0,
                "{reply:?}"
            );
        }
    }
}

fn a_random_workload_is_identical_on_a_replica_and_after_every_restart(flavor: Flavor) {
    let primary = Server::start_with(flavor, aof_options(None));
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    random_workload(&mut con, 0x5eed, workload_calls());
    wait_for_replica(&mut con);
    let expected = keyspace(&mut con);
    assert!(expected.len() > 1_000, "{} keys", expected.len());
    assert_eq!(keyspace(&mut replica.connection()), expected, "replica");
    drop(replica);

    // An AOF rewritten in the background, then more calls appended to it.
    run::<()>(&mut con, &["BGREWRITEAOF"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(&mut con, "persistence", "aof_rewrite_in_progress") != "0"
        || info_field(&mut con, "persistence", "aof_rewrite_scheduled") != "0"
    {
        assert!(Instant::now() < deadline, "AOF rewrite did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    random_workload(&mut con, 0xface, workload_calls() / 10);
    let expected = keyspace(&mut con);
    run::<()>(&mut con, &["SAVE"]);
    let dir = primary.shutdown();

    let from_aof = Server::start_with(flavor, aof_options(Some(dir)));
    assert_eq!(
        keyspace(&mut from_aof.connection()),
        expected,
        "AOF restart"
    );
    // Killed, not shut down, so that the RDB read next is the one SAVE wrote.
    let dir = from_aof.kill();
    let from_rdb = Server::start_with(
        flavor,
        Options {
            dir: Some(dir),
            ..Options::default()
        },
    );
    assert_eq!(
        keyspace(&mut from_rdb.connection()),
        expected,
        "RDB restart"
    );
}

/// Hammers `key` from 50 connections for about a second; returns the units admitted and the
/// server time the hammering spanned, in ns.
fn hammer(server: &Server, command: &'static str, args: &'static [&'static str]) -> (i64, i64) {
    let mut con = server.connection();
    let start = crate::harness::server_now_ns(&mut con);
    let deadline = Instant::now() + Duration::from_millis(1_200);
    let workers: Vec<_> = (0..50)
        .map(|_| {
            let mut con = server.connection();
            std::thread::spawn(move || {
                let mut admitted = 0;
                for _ in 0..100_000 {
                    if Instant::now() >= deadline {
                        break;
                    }
                    admitted += 1 - limiter(&mut con, command, args)[0];
                }
                admitted
            })
        })
        .collect();
    let admitted = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let end = crate::harness::server_now_ns(&mut con);
    (admitted, end - start)
}

fn a_hot_key_under_50_connections_admits_no_more_than_its_limit(flavor: Flavor) {
    let server = Server::start(flavor);
    // Windows far longer than the run: exactly the limit gets through.
    let (fixed, _) = hammer(&server, "CL.FIXED", &["hot:fixed", "500", "600"]);
    assert_eq!(fixed, 500);
    let (window, _) = hammer(&server, "CL.WINDOW", &["hot:window", "500", "600"]);
    assert_eq!(window, 500);
    // GCRA: a burst of 100, then one unit every 10 ms.
    let (throttle, elapsed_ns) =
        hammer(&server, "CL.THROTTLE", &["hot:throttle", "99", "100", "1"]);
    let bound = 100 + elapsed_ns / 10_000_000 + 1;
    assert!(
        throttle >= 100 && throttle <= bound,
        "{throttle} admitted, bound {bound}"
    );
}

fn stored_states_from_a_stepped_clock_never_panic_or_wait_negatively(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let now_ns = crate::harness::server_now_ns(&mut con);
    let year_ns = 365 * 86_400 * 1_000_000_000i64;
    // TATs: far ahead (a clock that was years ahead), the largest value, long ago, negative.
    for tat in [now_ns + 10 * year_ns, i64::MAX, 1, -5, now_ns - year_ns] {
        run::<()>(&mut con, ("SET", &["tat", &tat.to_string()]));
        for quantity in ["0", "1", "50"] {
            let reply = limiter(&mut con, "CL.THROTTLE", &["tat", "9", "10", "60", quantity]);
            assert!(
                reply[2] >= 0 && reply[2] <= 10 && reply[4] >= 0,
                "{tat}: {reply:?}"
            );
            assert!(reply[3] == -1 || reply[3] > 0, "{tat}: {reply:?}");
            if tat < now_ns && quantity == "1" {
                assert_eq!(reply[0], 0, "a TAT in the past is an empty limiter");
            }
            if tat > now_ns + year_ns && quantity != "0" {
                assert_eq!(reply[0], 1, "a TAT ahead of the clock is a full limiter");
            }
        }
    }
    // A fixed window set to end in ten years: still open, waits count the years.
    let end_ms = now_ns / 1_000_000 + 10 * year_ns / 1_000_000;
    run::<()>(
        &mut con,
        ("SET", &["win", "7", "PXAT", &end_ms.to_string()]),
    );
    let reply = limiter(&mut con, "CL.FIXED", &["win", "7", "60"]);
    assert_eq!(reply[..3], [1, 7, 0]);
    assert!(
        reply[3] > 9 * year_ns / 1_000_000_000 && reply[3] == reply[4],
        "{reply:?}"
    );
    assert_eq!(snapshot(&mut con, b"win").0, Some(b"7".to_vec()));
}

fn with_memory_exhausted_calls_get_the_oom_error_and_write_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.THROTTLE", &["existing", "5", "1", "3600"]);
    let before = snapshot(&mut con, b"existing");
    let filler = vec![b'x'; 4 << 20];
    run::<()>(&mut con, ("SET", "filler", filler));
    run::<()>(
        &mut con,
        ("CONFIG", &["SET", "maxmemory-policy", "noeviction"]),
    );
    run::<()>(&mut con, ("CONFIG", &["SET", "maxmemory", "1mb"]));
    for (command, args) in [
        ("CL.THROTTLE", &[&b"existing"[..], b"5", b"1", b"3600"][..]),
        ("CL.THROTTLE", &[b"new", b"5", b"1", b"3600"]),
        ("CL.FIXED", &[b"new", b"5", b"60"]),
        ("CL.WINDOW", &[b"new", b"5", b"60"]),
    ] {
        let error = error_of(&mut con, command, args);
        assert!(error.starts_with("OOM"), "{command}: {error}");
    }
    assert_eq!(snapshot(&mut con, b"existing"), before);
    assert_eq!(snapshot(&mut con, b"new"), (None, -2));
    run::<()>(&mut con, ("CONFIG", &["SET", "maxmemory", "0"]));
    assert_eq!(limiter(&mut con, "CL.FIXED", &["new", "5", "60"])[0], 0);
}

/// After the clock steps back, a limiter stays as full as it was at
/// the later instant, and opens again when the clock reaches that instant's waits: a step of
/// D locks out for at most D longer. Never a negative wait.
#[test]
fn a_clock_stepped_back_locks_out_no_longer_than_the_step_under_a_controlled_clock() {
    const BASE: i64 = 1_900_000_000_000;
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let limiters: [(&str, &[&str]); 3] = [
        ("CL.THROTTLE", &["1", "1", "5"]),
        ("CL.FIXED", &["2", "10"]),
        ("CL.WINDOW", &["2", "10"]),
    ];
    let call = |con: &mut redis::Connection, command: &str, params: &[&str]| {
        let args: Vec<&str> = std::iter::once(command)
            .chain(params.iter().copied())
            .collect();
        limiter(con, command, &args)
    };
    // Valkey's reading of a frozen clock can go back by a few µs from one call to the next;
    // a millisecond between the two calls keeps GCRA's full burst exact.
    for (command, params) in limiters {
        server.set_clock_ms(BASE);
        call(&mut con, command, params);
        server.set_clock_ms(BASE + 1);
        assert_eq!(call(&mut con, command, params)[..3], [0, 2, 0], "{command}");
    }
    server.set_clock_ms(BASE - 60_000);
    for (command, params) in limiters {
        // Full until BASE + 10 s, now 70 s away. GCRA lets the next unit in one emission
        // interval (5 s) before it is empty; the sliding window is empty once its second
        // unit, from BASE + 1 ms, leaves. GCRA's nanosecond TAT carries the few µs by which
        // Valkey reads a frozen clock late, so its waits may round up one more second.
        let reply = call(&mut con, command, params);
        let (retry, reset) = match command {
            "CL.THROTTLE" => (65, 70),
            "CL.WINDOW" => (70, 71),
            _ => (70, 70),
        };
        let slack = i64::from(command == "CL.THROTTLE");
        assert_eq!(reply[..3], [1, 2, 0], "{command}");
        assert!(
            (retry..=retry + slack).contains(&reply[3]),
            "{command}: {reply:?}"
        );
        assert!(
            (reset..=reset + slack).contains(&reply[4]),
            "{command}: {reply:?}"
        );
    }
    server.set_clock_ms(BASE + 10_000);
    for (command, params) in limiters {
        assert_eq!(call(&mut con, command, params)[0], 0, "{command}");
    }
}
