//! CL.THROTTLE's contract, on real Redis 7.0 and Valkey 9 servers with the module loaded.

mod harness;

use harness::{error_of, limiter, Flavor, Options, Server};
use redis::Connection;

both_servers!(
    the_worked_example_replies_exactly,
    ms_periods_and_waits_are_in_milliseconds,
    a_peek_answers_without_touching_the_key,
    a_denied_call_changes_nothing,
    state_is_redis_cells_tat_expiring_at_itself,
    keys_written_by_redis_cell_keep_working,
    keys_are_binary_safe,
    bad_arguments_get_errors_naming_them_and_change_nothing,
    keys_of_other_types_get_wrongtype_and_stay_as_they_were,
    corrupt_state_gets_an_error_and_stays_as_it_was,
    the_command_is_described_to_the_server,
    a_replica_holds_identical_values_and_expiries,
    an_aof_restart_restores_identical_state,
);

fn info_field(con: &mut Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .trim()
        .to_owned()
}

fn dirty(con: &mut Connection) -> i64 {
    info_field(con, "persistence", "rdb_changes_since_last_save")
        .parse()
        .unwrap()
}

/// What a key holds: its value and its absolute expiry in ms (-1 none, -2 no key).
fn snapshot(con: &mut Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    let value: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(con).unwrap();
    let expiry: i64 = redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap();
    (value, expiry)
}

fn server_now_ns(con: &mut Connection) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    seconds * 1_000_000_000 + micros * 1_000
}

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

fn a_peek_answers_without_touching_the_key(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let before = dirty(&mut con);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["peeked", "4", "5", "1", "0"]),
        [0, 5, 5, -1, 0]
    );
    assert_eq!(snapshot(&mut con, b"peeked"), (None, -2));
    assert_eq!(dirty(&mut con), before);

    limiter(&mut con, "CL.THROTTLE", &["peeked", "4", "5", "1", "2"]);
    let state = snapshot(&mut con, b"peeked");
    let before = dirty(&mut con);
    let peek = limiter(&mut con, "CL.THROTTLE", &["peeked", "4", "5", "1", "0"]);
    assert_eq!(peek, [0, 5, 3, -1, 1]);
    assert_eq!(snapshot(&mut con, b"peeked"), state);
    assert_eq!(dirty(&mut con), before);
}

fn a_denied_call_changes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["d", "0", "1", "60"])[0],
        0
    );
    let state = snapshot(&mut con, b"d");
    let before = dirty(&mut con);
    for _ in 0..3 {
        assert_eq!(
            limiter(&mut con, "CL.THROTTLE", &["d", "0", "1", "60"])[0],
            1
        );
    }
    // More than the limit can never fit: denied, and no retry time.
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["d", "0", "1", "60", "2"]),
        [1, 1, 0, -1, 60]
    );
    assert_eq!(snapshot(&mut con, b"d"), state);
    assert_eq!(dirty(&mut con), before);
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
    let _: () = redis::cmd("SET")
        .arg("legacy")
        .arg(tat.to_string())
        .arg("PX")
        .arg(40_000)
        .query(&mut con)
        .unwrap();
    let reply = limiter(&mut con, "CL.THROTTLE", &["legacy", "15", "30", "60"]);
    assert_eq!(reply, [1, 16, 0, 10, 40]);
    let _: () = redis::cmd("SET")
        .arg("legacy")
        .arg((tat - 20_000_000_000).to_string())
        .query(&mut con)
        .unwrap();
    let reply = limiter(&mut con, "CL.THROTTLE", &["legacy", "15", "30", "60"]);
    assert_eq!(reply, [0, 16, 5, -1, 22]);
}

fn keys_are_binary_safe(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let key: &[u8] = &[0xff, 0x00, b'k', 0xc3, 0x28];
    for remaining in [1, 0] {
        let reply: Vec<i64> = redis::cmd("CL.THROTTLE")
            .arg(key)
            .arg(&["1", "1", "60"])
            .query(&mut con)
            .unwrap();
        assert_eq!(reply[..3], [0, 2, remaining]);
    }
    let (value, _) = snapshot(&mut con, key);
    assert!(value.is_some());
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    assert_eq!(keys, vec![key.to_vec()]);
}

fn bad_arguments_get_errors_naming_them_and_change_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let max = "9223372036854775807";
    let cases: &[(&[&[u8]], &str)] = &[
        (&[b"k"], "wrong number of arguments"),
        (&[b"k", b"1", b"1"], "wrong number of arguments"),
        (
            &[b"k", b"1", b"1", b"1", b"1", b"MS", b"x"],
            "wrong number of arguments",
        ),
        (&[b"k", b"x", b"1", b"1"], "max_burst"),
        (&[b"k", b"1", b"1.5", b"1"], "count"),
        (&[b"k", b"1", b"1", b""], "period"),
        (&[b"k", b"1", b"1", b"1", b"one"], "quantity"),
        (&[b"k", b"1", b"1", b"1", b"1", b"HOURS"], "syntax error"),
        (&[b"k", b"-1", b"1", b"1"], "max_burst"),
        (&[b"k", b"1", b"0", b"1"], "count"),
        (&[b"k", b"1", b"-5", b"1"], "count"),
        (&[b"k", b"1", b"1", b"0"], "period"),
        (&[b"k", b"1", b"1", b"-1"], "period"),
        (&[b"k", b"1", b"1", b"1", b"-1"], "quantity"),
        (&[b"k", max.as_bytes(), b"1", b"1"], "max_burst"),
        (&[b"k", b"1", max.as_bytes(), b"1"], "count"),
        (&[b"k", b"1", b"1", max.as_bytes()], "period"),
        (&[b"k", b"1", b"1", b"1", max.as_bytes()], "quantity"),
        (
            &[b"k", b"1", b"1", b"1", b"1", b"MS", b"MS"],
            "wrong number of arguments",
        ),
        (&[b"k", b"1", b"9223372036854775808", b"1"], "count"),
        (&[b"k", &[0xff, 0xfe], b"1", b"1"], "max_burst"),
        (&[b"k", b"1", b"1", &[0xc3, 0x28]], "period"),
    ];
    for (args, named) in cases {
        let error = error_of(&mut con, "CL.THROTTLE", args);
        assert!(error.contains(named), "{args:?}: {error}");
        assert!(
            error.starts_with("ERR") || error.contains("wrong number"),
            "{args:?}: {error}"
        );
    }
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0);
}

fn keys_of_other_types_get_wrongtype_and_stay_as_they_were(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let _: () = redis::cmd("RPUSH")
        .arg("list")
        .arg(&["a", "b"])
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("hash")
        .arg(&["f", "v"])
        .query(&mut con)
        .unwrap();
    for key in ["list", "hash"] {
        for quantity in ["1", "0"] {
            let error = error_of(
                &mut con,
                "CL.THROTTLE",
                &[key.as_bytes(), b"1", b"1", b"1", quantity.as_bytes()],
            );
            assert!(error.starts_with("WRONGTYPE"), "{error}");
        }
    }
    let list: Vec<String> = redis::cmd("LRANGE")
        .arg(&["list", "0", "-1"])
        .query(&mut con)
        .unwrap();
    assert_eq!(list, ["a", "b"]);
    let hash: Vec<String> = redis::cmd("HGETALL").arg("hash").query(&mut con).unwrap();
    assert_eq!(hash, ["f", "v"]);
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
        let _: () = redis::cmd("SET")
            .arg("bad")
            .arg(value)
            .query(&mut con)
            .unwrap();
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

fn the_command_is_described_to_the_server(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg(&[
            "GETKEYS",
            "CL.THROTTLE",
            "limits:user",
            "1",
            "2",
            "3",
            "4",
            "MS",
        ])
        .query(&mut con)
        .unwrap();
    assert_eq!(keys, ["limits:user"]);
    let info: redis::Value = redis::cmd("COMMAND")
        .arg(&["INFO", "cl.throttle"])
        .query(&mut con)
        .unwrap();
    let text = format!("{info:?}");
    for flag in ["write", "denyoom", "fast", "RW", "update"] {
        assert!(text.contains(flag), "{flag} missing from {text}");
    }
    let error = error_of(&mut con, "CL.THROTTLE", &[b"k", b"1"]);
    assert!(error.contains("wrong number of arguments"), "{error}");
}

fn wait_for_replica(replica: &Server, primary: &Server) {
    let mut con = replica.connection();
    let _: () = redis::cmd("REPLICAOF")
        .arg(&["127.0.0.1", &primary.port.to_string()])
        .query(&mut con)
        .unwrap();
    for _ in 0..500 {
        if info_field(&mut con, "replication", "master_link_status") == "up" {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("replica never synced: {}", replica.log_tail());
}

fn a_replica_holds_identical_values_and_expiries(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    wait_for_replica(&replica, &primary);
    let mut con = primary.connection();
    let keys: Vec<String> = (0..20).map(|i| format!("user:{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        for _ in 0..=(i % 4) {
            limiter(&mut con, "CL.THROTTLE", &[key, "2", "1", "3600", "1"]);
        }
        limiter(&mut con, "CL.THROTTLE", &[key, "9", "50", "1", "0", "MS"]);
    }
    // Denied calls and peeks propagate nothing.
    let offset = info_field(&mut con, "replication", "master_repl_offset");
    for key in &keys[3..] {
        assert_eq!(
            limiter(&mut con, "CL.THROTTLE", &[key, "0", "1", "3600", "5"])[0],
            1
        );
        limiter(&mut con, "CL.THROTTLE", &[key, "2", "1", "3600", "0"]);
    }
    assert_eq!(
        info_field(&mut con, "replication", "master_repl_offset"),
        offset
    );

    let acked: i64 = redis::cmd("WAIT")
        .arg(&["1", "5000"])
        .query(&mut con)
        .unwrap();
    assert_eq!(acked, 1);
    let mut replica_con = replica.connection();
    for key in &keys {
        let on_primary = snapshot(&mut con, key.as_bytes());
        assert!(on_primary.0.is_some() && on_primary.1 > 0, "{key}");
        assert_eq!(
            snapshot(&mut replica_con, key.as_bytes()),
            on_primary,
            "{key}"
        );
        let dump_primary: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
        let dump_replica: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut replica_con).unwrap();
        assert_eq!(dump_primary, dump_replica, "{key}");
    }
}

fn an_aof_restart_restores_identical_state(flavor: Flavor) {
    let aof = Options {
        args: vec![
            "--appendonly".into(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ],
        ..Options::default()
    };
    let server = Server::start_with(flavor, aof);
    let mut con = server.connection();
    let keys: Vec<String> = (0..10).map(|i| format!("aof:{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        for _ in 0..=i {
            limiter(&mut con, "CL.THROTTLE", &[key, "5", "1", "3600"]);
        }
    }
    let before: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut con, k.as_bytes()))
        .collect();
    let dir = server.shutdown();
    let restarted = Server::start_with(
        flavor,
        Options {
            args: vec!["--appendonly".into(), "yes".into()],
            dir: Some(dir.clone()),
            ..Options::default()
        },
    );
    let mut con = restarted.connection();
    let after: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut con, k.as_bytes()))
        .collect();
    assert_eq!(after, before);
    // The restored limiter carries on: aof:5 has used all 6 units of its burst.
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["aof:5", "5", "1", "3600"])[0],
        1
    );
    drop(restarted);
    let _ = std::fs::remove_dir_all(dir);
}

/// Valkey under libfaketime, its wall clock frozen where the test puts it. (Debian's Redis
/// 7.0 deadlocks under libfaketime.) Valkey's reading of the frozen clock still drifts by a
/// fraction of a millisecond, so the instants below sit well inside their rounding units.
#[test]
fn refill_and_expiry_follow_the_server_clock() {
    const BASE: i64 = 1_900_000_000_000; // 2030-03-17T17:46:40Z, in ms
    let server = Server::start_with(
        Flavor::Valkey,
        Options {
            fake_clock_ms: Some(BASE),
            args: vec!["--hz".into(), "100".into()],
            ..Options::default()
        },
    );
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
    let exists: i64 = redis::cmd("EXISTS").arg("clocked").query(&mut con).unwrap();
    assert_eq!(exists, 1);
    server.set_clock_ms(BASE + 40_010);
    let exists: i64 = redis::cmd("EXISTS").arg("clocked").query(&mut con).unwrap();
    assert_eq!(exists, 0);
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["clocked", "2", "1", "10", "0"]),
        [0, 3, 3, -1, 0]
    );
}
