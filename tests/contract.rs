//! The contract CL.THROTTLE, CL.FIXED and CL.WINDOW share, checked for each of them on real
//! Redis 7.0 and Valkey 9 servers: peeks and denials change nothing, bad input changes
//! nothing, keys are binary-safe, replicas and AOF restarts hold identical state.

mod harness;

use harness::{
    aof_options, dirty, dump, error_of, info_field, limiter, replicate, snapshot, wait_for_replica,
    Flavor, Server,
};

/// Each command with arguments for a limit of one unit per 60 seconds.
const LIMITERS: [(&str, &[&str]); 3] = [
    ("CL.THROTTLE", &["0", "1", "60"]),
    ("CL.FIXED", &["1", "60"]),
    ("CL.WINDOW", &["1", "60"]),
];

both_servers!(
    a_peek_answers_without_touching_the_key,
    a_denied_call_changes_nothing,
    keys_are_binary_safe,
    keys_of_other_types_get_wrongtype_and_stay_as_they_were,
    foreign_strings_get_an_error_and_stay_as_they_were,
    bad_arguments_get_errors_naming_them_and_change_nothing,
    each_command_is_described_to_the_server,
    a_replica_holds_identical_state_and_denials_propagate_nothing,
    an_aof_restart_restores_identical_state,
);

fn call(
    con: &mut redis::Connection,
    command: &str,
    key: &str,
    params: &[&str],
    tail: &[&str],
) -> Vec<i64> {
    let args: Vec<&str> = std::iter::once(key)
        .chain(params.iter().copied())
        .chain(tail.iter().copied())
        .collect();
    limiter(con, command, &args)
}

fn a_peek_answers_without_touching_the_key(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (command, params) in LIMITERS {
        let before = dirty(&mut con);
        assert_eq!(
            call(&mut con, command, "peeked", params, &["0"]),
            [0, 1, 1, -1, 0],
            "{command}"
        );
        assert_eq!(snapshot(&mut con, b"peeked"), (None, -2), "{command}");
        assert_eq!(dirty(&mut con), before, "{command}");

        assert_eq!(
            call(&mut con, command, "peeked", params, &[])[0],
            0,
            "{command}"
        );
        let state = snapshot(&mut con, b"peeked");
        let before = dirty(&mut con);
        assert_eq!(
            call(&mut con, command, "peeked", params, &["0"]),
            [0, 1, 0, -1, 60],
            "{command}"
        );
        assert_eq!(snapshot(&mut con, b"peeked"), state, "{command}");
        assert_eq!(dirty(&mut con), before, "{command}");
        let _: () = redis::cmd("DEL").arg("peeked").query(&mut con).unwrap();
    }
}

fn a_denied_call_changes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (command, params) in LIMITERS {
        assert_eq!(
            call(&mut con, command, "d", params, &[]),
            [0, 1, 0, -1, 60],
            "{command}"
        );
        let state = snapshot(&mut con, b"d");
        let before = dirty(&mut con);
        for _ in 0..3 {
            assert_eq!(
                call(&mut con, command, "d", params, &[]),
                [1, 1, 0, 60, 60],
                "{command}"
            );
        }
        // More than the limit can never fit: denied, with no retry time.
        assert_eq!(
            call(&mut con, command, "d", params, &["2"]),
            [1, 1, 0, -1, 60],
            "{command}"
        );
        assert_eq!(snapshot(&mut con, b"d"), state, "{command}");
        assert_eq!(dirty(&mut con), before, "{command}");
        let _: () = redis::cmd("DEL").arg("d").query(&mut con).unwrap();
    }
}

fn keys_are_binary_safe(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (command, params) in LIMITERS {
        let key: &[u8] = &[0xff, 0x00, b'k', 0xc3, 0x28];
        for limited in [0, 1] {
            let reply: Vec<i64> = redis::cmd(command)
                .arg(key)
                .arg(params)
                .query(&mut con)
                .unwrap();
            assert_eq!(reply[..2], [limited, 1], "{command}");
        }
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
        assert_eq!(keys, vec![key.to_vec()], "{command}");
        let _: () = redis::cmd("DEL").arg(key).query(&mut con).unwrap();
    }
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
    for (command, params) in LIMITERS {
        for key in ["list", "hash"] {
            for quantity in ["1", "0"] {
                let args: Vec<&[u8]> = std::iter::once(key.as_bytes())
                    .chain(params.iter().map(|p| p.as_bytes()))
                    .chain([quantity.as_bytes()])
                    .collect();
                let error = error_of(&mut con, command, &args);
                assert!(error.starts_with("WRONGTYPE"), "{command}: {error}");
            }
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

fn foreign_strings_get_an_error_and_stay_as_they_were(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let foreign: [&[u8]; 6] = [
        b"not a number",
        b"",
        b"12.5",
        b" 1",
        b"99999999999999999999",
        &[0xff, 0x31],
    ];
    for (command, params) in LIMITERS {
        for value in foreign {
            let _: () = redis::cmd("SET")
                .arg("bad")
                .arg(value)
                .arg(&["PX", "100000"])
                .query(&mut con)
                .unwrap();
            let expiry = snapshot(&mut con, b"bad").1;
            for quantity in ["1", "0"] {
                let args: Vec<&[u8]> = std::iter::once(&b"bad"[..])
                    .chain(params.iter().map(|p| p.as_bytes()))
                    .chain([quantity.as_bytes()])
                    .collect();
                let error = error_of(&mut con, command, &args);
                assert!(
                    error.starts_with("ERR") && error.contains("not a valid state"),
                    "{command}: {error}"
                );
            }
            assert_eq!(
                snapshot(&mut con, b"bad"),
                (Some(value.to_vec()), expiry),
                "{command}"
            );
        }
    }
}

fn bad_arguments_get_errors_naming_them_and_change_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let max = "9223372036854775807".as_bytes();
    for command in ["CL.FIXED", "CL.WINDOW"] {
        let cases: &[(&[&[u8]], &str)] = &[
            (&[b"k"], "wrong number of arguments"),
            (&[b"k", b"1"], "wrong number of arguments"),
            (
                &[b"k", b"1", b"1", b"1", b"MS", b"x", b"y", b"z"],
                "wrong number of arguments",
            ),
            (&[b"k", b"x", b"1"], "limit"),
            (&[b"k", b"0", b"1"], "limit"),
            (&[b"k", b"-3", b"1"], "limit"),
            (&[b"k", &[0xff], b"1"], "limit"),
            (&[b"k", b"1", b"1.5"], "period"),
            (&[b"k", b"1", b"0"], "period"),
            (&[b"k", b"1", max], "period"),
            (&[b"k", b"1", b"1", b"-1"], "quantity"),
            (&[b"k", b"1", b"1", b""], "quantity"),
            (&[b"k", b"1", b"1", b"1", b"HOURS"], "syntax error"),
        ];
        for (args, named) in cases {
            let error = error_of(&mut con, command, args);
            assert!(error.contains(named), "{command} {args:?}: {error}");
        }
        // A count at the top of the range is denied, not wrapped.
        let huge = "9223372036854775807";
        let full = limiter(&mut con, command, &["huge", huge, "60", huge]);
        assert_eq!(full[..3], [0, i64::MAX, 0], "{command}");
        assert_eq!(
            limiter(&mut con, command, &["huge", huge, "60", "1"])[0],
            1,
            "{command}"
        );
        let _: () = redis::cmd("DEL").arg("huge").query(&mut con).unwrap();
    }
    // The replication form of CL.WINDOW is refused from clients: it would let a caller pick
    // the instant it is limited at.
    let error = error_of(
        &mut con,
        "CL.WINDOW",
        &[b"k", b"1", b"1", b"1", b"MS", b"AT", b"1"],
    );
    assert!(error.contains("AT is accepted only"), "{error}");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0);
}

fn each_command_is_described_to_the_server(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (command, params) in LIMITERS {
        let args: Vec<&str> = ["GETKEYS", command, "limits:user"]
            .into_iter()
            .chain(params.iter().copied())
            .chain(["1", "MS"])
            .collect();
        let keys: Vec<String> = redis::cmd("COMMAND").arg(&args).query(&mut con).unwrap();
        assert_eq!(keys, ["limits:user"], "{command}");
        let info: redis::Value = redis::cmd("COMMAND")
            .arg(&["INFO", command])
            .query(&mut con)
            .unwrap();
        let text = format!("{info:?}");
        for flag in ["write", "denyoom", "fast", "blocking", "RW", "update"] {
            assert!(text.contains(flag), "{command}: {flag} missing from {text}");
        }
    }
}

/// A mixed workload on a primary: every command on many keys, some calls denied.
fn workload(con: &mut redis::Connection, keys: usize) {
    for i in 0..keys {
        for (command, _) in LIMITERS {
            let key = format!("{command}:{i}");
            let params: &[&str] = match command {
                "CL.THROTTLE" => &["2", "1", "3600"],
                _ => &["3", "3600"],
            };
            for _ in 0..=(i % 5) {
                call(con, command, &key, params, &[]);
            }
        }
    }
}

fn a_replica_holds_identical_state_and_denials_propagate_nothing(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    workload(&mut con, 30);

    let offset = info_field(&mut con, "replication", "master_repl_offset");
    for i in (3..30).filter(|i| i % 5 >= 3) {
        for (command, _) in LIMITERS {
            let key = format!("{command}:{i}");
            let params: &[&str] = match command {
                "CL.THROTTLE" => &["2", "1", "3600"],
                _ => &["3", "3600"],
            };
            assert_eq!(call(&mut con, command, &key, params, &[])[0], 1, "{key}");
            call(&mut con, command, &key, params, &["0"]);
        }
    }
    assert_eq!(
        info_field(&mut con, "replication", "master_repl_offset"),
        offset
    );

    wait_for_replica(&mut con);
    let mut replica_con = replica.connection();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    assert_eq!(keys.len(), 90);
    for key in keys {
        let on_primary = snapshot(&mut con, &key);
        assert!(on_primary.1 > 0, "{key:?} has no expiry");
        assert_eq!(snapshot(&mut replica_con, &key), on_primary, "{key:?}");
        assert_eq!(
            dump(&mut replica_con, &key),
            dump(&mut con, &key),
            "{key:?}"
        );
    }
}

fn an_aof_restart_restores_identical_state(flavor: Flavor) {
    let server = Server::start_with(flavor, aof_options(None));
    let mut con = server.connection();
    workload(&mut con, 20);
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    let before: Vec<_> = keys
        .iter()
        .map(|k| (snapshot(&mut con, k), dump(&mut con, k)))
        .collect();
    let dir = server.shutdown();

    let restarted = Server::start_with(flavor, aof_options(Some(dir.clone())));
    let mut con = restarted.connection();
    let after: Vec<_> = keys
        .iter()
        .map(|k| (snapshot(&mut con, k), dump(&mut con, k)))
        .collect();
    assert_eq!(after, before);
    // The restored limiters carry on where they were: key 2 of each is full.
    assert_eq!(
        call(
            &mut con,
            "CL.THROTTLE",
            "CL.THROTTLE:2",
            &["2", "1", "3600"],
            &[]
        )[0],
        1
    );
    assert_eq!(
        call(&mut con, "CL.FIXED", "CL.FIXED:2", &["3", "3600"], &[])[0],
        1
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", "CL.WINDOW:2", &["3", "3600"], &[])[0],
        1
    );
    drop(restarted);
    let _ = std::fs::remove_dir_all(dir);
}
