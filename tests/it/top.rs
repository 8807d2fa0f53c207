//! `CL.TOP`: the keys a node denied most, on real servers. Zipf-distributed denials over
//! 100,000 keys against an exact count; what counts and what does not; generations under a
//! stepped clock; the memory a flood of distinct long keys adds; RESETSTAT, unload, ACL
//! categories, the configuration, bad arguments.

use std::collections::HashMap;

use redis::Value;

use crate::harness::query::ServerKind;
use crate::harness::waiting::{connect, waiting_field, Waiter};
use crate::harness::{
    error_of, info_field, replicate, run, wait_for_replica, Flavor, Options, Rng, Server,
};

both_servers!(
    the_list_keeps_its_guarantee_over_zipf_distributed_denials,
    denials_count_and_nothing_else_does,
    it_is_an_operator_s_command_and_refuses_bad_arguments,
    a_wait_that_client_unblock_ends_counts_once_or_not_at_all,
    denials_in_transactions_scripts_and_cl_all_count_and_a_replica_counts_none,
);

/// CL.TOP's triples.
fn top(con: &mut redis::Connection, count: usize) -> Vec<(Vec<u8>, i64, i64)> {
    let flat: Vec<Value> = run(con, ("CL.TOP", "COUNT", count));
    flat.chunks(3)
        .map(|triple| match triple {
            [Value::BulkString(key), Value::Int(denied), Value::Int(error)] => {
                (key.clone(), *denied, *error)
            }
            other => panic!("not a triple: {other:?}"),
        })
        .collect()
}

/// A denial that writes nothing: two units of a limit of one.
fn deny(pipe: &mut redis::Pipeline, key: &[u8]) {
    pipe.cmd("CL.FIXED")
        .arg(key)
        .arg(1)
        .arg(3600)
        .arg(2)
        .ignore();
}

fn server_minute(con: &mut redis::Connection) -> i64 {
    let (seconds, _): (i64, i64) = run(con, &["TIME"]);
    seconds / 60
}

fn the_list_keeps_its_guarantee_over_zipf_distributed_denials(flavor: Flavor) {
    const KEYS: usize = 100_000;
    const CALLS: usize = 60_000;
    const K: usize = 64;
    let server = Server::start(flavor);
    let mut con = server.connection();
    run::<()>(&mut con, ("CONFIG", "SET", "redis-cell.top-keys", K));
    // Zipf with exponent 1.1: key i (from 1) drawn with weight 1 / i^1.1.
    let weights: Vec<f64> = (1..=KEYS).map(|i| (i as f64).powf(-1.1)).collect();
    let sum: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(KEYS);
    let mut acc = 0.0;
    for weight in &weights {
        acc += weight / sum;
        cumulative.push(acc);
    }
    for _attempt in 0..2 {
        run::<()>(&mut con, ("CONFIG", "RESETSTAT"));
        let mut rng = Rng::new(0x2f1f);
        let mut exact: HashMap<Vec<u8>, i64> = HashMap::new();
        let started = server_minute(&mut con);
        for _ in 0..CALLS / 2_000 {
            let mut pipe = redis::pipe();
            for _ in 0..2_000 {
                let draw = rng.below(1 << 53) as f64 / (1u64 << 53) as f64;
                let at = cumulative.partition_point(|&c| c < draw).min(KEYS - 1);
                let key = format!("user:{at}").into_bytes();
                deny(&mut pipe, &key);
                *exact.entry(key).or_default() += 1;
            }
            pipe.query::<()>(&mut con).unwrap();
        }
        let listed = top(&mut con, K);
        // The list covers this minute and the one before: the run must lie within them.
        if server_minute(&mut con) > started + 1 {
            continue;
        }
        let total = CALLS as i64;
        assert!(listed.len() == K, "{} listed", listed.len());
        for pair in listed.windows(2) {
            assert!(pair[0].1 >= pair[1].1, "not the most first: {pair:?}");
        }
        for (key, denied, error) in &listed {
            let truth = exact.get(key).copied().unwrap_or(0);
            assert!(*denied >= truth && denied - error <= truth, "{key:?}");
            assert!(error * K as i64 <= total, "{key:?}: error {error}");
        }
        let heavy: Vec<&Vec<u8>> = exact
            .iter()
            .filter(|(_, &count)| count * K as i64 > total)
            .map(|(key, _)| key)
            .collect();
        assert!(
            heavy.len() >= 5,
            "too few heavy keys to test: {}",
            heavy.len()
        );
        for key in heavy {
            assert!(listed.iter().any(|(listed, _, _)| listed == key), "{key:?}");
        }
        return;
    }
    panic!("the run crossed two minutes twice");
}

fn denials_count_and_nothing_else_does(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    for _ in 0..3 {
        deny(&mut pipe, b"denied");
    }
    // Not denials: an admission, a dry run's and a peek's denial, a refund, a release of
    // nothing, bad input.
    pipe.cmd("CL.FIXED").arg("admitted").arg(5).arg(60).ignore();
    pipe.cmd("CL.FIXED")
        .arg("dry")
        .arg(1)
        .arg(60)
        .arg(2)
        .arg("DRYRUN")
        .ignore();
    pipe.cmd("CL.FIXED").arg("full").arg(1).arg(60).ignore();
    pipe.cmd("CL.FIXED")
        .arg("full")
        .arg(1)
        .arg(60)
        .arg(0)
        .ignore();
    pipe.cmd("CL.FIXED")
        .arg("full")
        .arg(1)
        .arg(60)
        .arg("REFUND")
        .ignore();
    pipe.cmd("CL.RELEASE").arg("pool").arg("nobody").ignore();
    pipe.query::<()>(&mut con).unwrap();
    assert!(error_of(&mut con, "CL.FIXED", &[b"bad", b"x", b"60"]).contains("limit"));
    // CL.ALL: once for each key whose limiter denied.
    let _: Value = run(
        &mut con,
        (
            "CL.ALL", 2, "all:a", "all:b", "FIXED", 1, 60, "FIXED", 5, 60, "QUANTITY", 3,
        ),
    );
    // A wait that times out counts once, when it does.
    run::<()>(&mut con, ("CL.FIXED", "waited", 1, 60));
    let waiter = Waiter::start(&server, "CL.FIXED", &["waited", "1", "60", "BLOCK", "50"]);
    let (reply, _) = waiter.reply();
    assert_eq!(reply[0], 1);
    // A wait that ends admitted counts nothing.
    run::<()>(&mut con, ("CL.FIXED", "admitted:wait", 1, 200, "MS"));
    let waiter = Waiter::start(
        &server,
        "CL.FIXED",
        &["admitted:wait", "1", "200", "MS", "BLOCK", "5000"],
    );
    let (reply, _) = waiter.reply();
    assert_eq!(reply[0], 0);
    let listed = top(&mut con, 100);
    let names: Vec<(&[u8], i64)> = listed
        .iter()
        .map(|(key, denied, _)| (key.as_slice(), *denied))
        .collect();
    assert_eq!(
        names,
        [(&b"denied"[..], 3), (b"all:a", 1), (b"waited", 1)],
        "{listed:?}"
    );
    // CONFIG RESETSTAT empties it.
    run::<()>(&mut con, ("CONFIG", "RESETSTAT"));
    assert!(top(&mut con, 10).is_empty());
    // A new size forgets the list as it stood, and holds to the size.
    let mut pipe = redis::pipe();
    deny(&mut pipe, b"before");
    pipe.query::<()>(&mut con).unwrap();
    assert_eq!(top(&mut con, 10).len(), 1);
    run::<()>(&mut con, ("CONFIG", "SET", "redis-cell.top-keys", 2));
    assert!(top(&mut con, 10).is_empty());
    let mut pipe = redis::pipe();
    for key in [&b"a"[..], b"b", b"c", b"c"] {
        deny(&mut pipe, key);
    }
    pipe.query::<()>(&mut con).unwrap();
    let listed = top(&mut con, 10);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0].0, b"c");
}

/// Under a stepped clock: a key denied in a minute stays listed through the next, and drops
/// out when that one has passed too.
#[test]
fn a_key_denied_two_minutes_ago_drops_out_under_a_controlled_clock() {
    const BASE: i64 = 1_796_083_200_000; // 2026-12-01T00:00:00Z, a minute's start
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = server.connection();
    server.set_clock_ms(BASE + 59_000);
    let mut pipe = redis::pipe();
    deny(&mut pipe, b"old");
    pipe.query::<()>(&mut con).unwrap();
    server.set_clock_ms(BASE + 60_000);
    let mut pipe = redis::pipe();
    deny(&mut pipe, b"new");
    deny(&mut pipe, b"new");
    pipe.query::<()>(&mut con).unwrap();
    let listed: Vec<Vec<u8>> = top(&mut con, 10).into_iter().map(|(k, ..)| k).collect();
    assert_eq!(listed, [b"new".to_vec(), b"old".to_vec()]);
    server.set_clock_ms(BASE + 119_999);
    assert_eq!(top(&mut con, 10).len(), 2);
    server.set_clock_ms(BASE + 120_000);
    let listed: Vec<Vec<u8>> = top(&mut con, 10).into_iter().map(|(k, ..)| k).collect();
    assert_eq!(listed, [b"new".to_vec()]);
    server.set_clock_ms(BASE + 180_000);
    assert!(top(&mut con, 10).is_empty());
}

fn used_memory(con: &mut redis::Connection) -> i64 {
    info_field(con, "memory", "used_memory").parse().unwrap()
}

/// Two minutes of 1,024 entries (the default) cost at most 2k × (128 + 48) bytes, however many
/// distinct keys are denied in each; MODULE UNLOAD gives them back. Under a stepped clock, so
/// that both minutes fill.
#[test]
fn a_flood_of_distinct_long_keys_stays_within_the_bound_and_unload_frees_it_under_a_controlled_clock(
) {
    const BASE: i64 = 1_796_083_200_000; // 2026-12-01T00:00:00Z
    let server = Server::start_with(
        Flavor::with_controllable_clock(),
        Options {
            fake_clock_ms: Some(BASE),
            exact_clock: true,
            args: vec!["--enable-module-command".into(), "yes".into()],
            ..Options::default()
        },
    );
    let mut con = server.connection();
    server.set_clock_ms(BASE);
    // Each flood from a connection of its own, closed before measuring: its buffers are not
    // the list's. A first flood of admitted calls makes what the server makes for any such
    // flood (the command's latency histogram, buffers), so that what follows is the list's.
    let mut rng = Rng::new(0xf100d);
    let mut flood = |con: &mut redis::Connection, deny_them: bool| {
        let mut flood = server.connection();
        for _ in 0..10 {
            let mut pipe = redis::pipe();
            for _ in 0..2_000 {
                let key = format!("{}:{}", rng.next(), "x".repeat(180));
                if deny_them {
                    deny(&mut pipe, key.as_bytes());
                } else {
                    pipe.cmd("CL.FIXED")
                        .arg("warm")
                        .arg(i64::MAX)
                        .arg(3600)
                        .ignore();
                }
            }
            pipe.query::<()>(&mut flood).unwrap();
        }
        drop(flood);
        // Until the server has let the flood's client go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while info_field(con, "clients", "connected_clients") != "1" {
            assert!(
                std::time::Instant::now() < deadline,
                "the flood's client stays"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    flood(&mut con, false);
    let before = used_memory(&mut con);
    for minute in 0..2 {
        server.set_clock_ms(BASE + minute * 60_000);
        flood(&mut con, true);
    }
    let grown = used_memory(&mut con) - before;
    println!("the list grew used_memory by {grown} bytes");
    assert!(grown <= 2 * 1024 * (128 + 48), "grew by {grown} bytes");
    assert!(
        grown >= 240_000,
        "grew by only {grown} bytes: both minutes are not counted"
    );
    let full = top(&mut con, 2048);
    assert_eq!(full.len(), 1024);
    assert!(full.iter().all(|(key, ..)| key.len() == 128));
    run::<()>(&mut con, ("MODULE", "UNLOAD", "redis-cell"));
    let freed = used_memory(&mut con);
    assert!(freed < before + grown - 240_000, "{freed} after unload");
}

fn it_is_an_operator_s_command_and_refuses_bad_arguments(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (args, named) in [
        (&["COUNT", "0"][..], "COUNT must be >= 1"),
        (&["COUNT", "-1"], "COUNT must be >= 1"),
        (&["COUNT", "x"], "COUNT is not an integer"),
        (&["COUNT"], "syntax error"),
        (&["LIMIT", "3"], "syntax error"),
        (&["COUNT", "1", "COUNT", "2"], "syntax error"),
    ] {
        let words: Vec<&[u8]> = args.iter().map(|word| word.as_bytes()).collect();
        let error = error_of(&mut con, "CL.TOP", &words);
        assert!(error.contains(named), "{args:?}: {error}");
    }
    // The configuration: read and set, within its bounds.
    let size: Vec<String> = run(&mut con, ("CONFIG", "GET", "redis-cell.top-keys"));
    assert_eq!(size, ["redis-cell.top-keys", "1024"]);
    run::<()>(&mut con, ("CONFIG", "SET", "redis-cell.top-keys", 7));
    assert!(redis::cmd("CONFIG")
        .arg(&["SET", "redis-cell.top-keys", "0"])
        .query::<()>(&mut con)
        .is_err());
    // Flagged admin; in @admin and @dangerous where modules set categories, never in
    // @ratelimit nor @read.
    let info: Vec<Value> = run(&mut con, ("COMMAND", "INFO", "cl.top"));
    let [Value::Array(entry)] = &info[..] else {
        panic!("{info:?}")
    };
    let words = |value: &Value| -> Vec<String> {
        match value {
            Value::Array(items) | Value::Set(items) => items
                .iter()
                .map(|item| redis::from_redis_value::<String>(item.clone()).unwrap())
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    assert!(words(&entry[2]).contains(&"admin".to_owned()));
    assert!(!words(&entry[2]).contains(&"readonly".to_owned()));
    let categories = words(&entry[6]);
    assert!(!categories.iter().any(|c| c == "@ratelimit" || c == "@read"));
    if ServerKind::of(&mut con).module_command_categories() {
        assert!(categories.contains(&"@admin".to_owned()), "{categories:?}");
        assert!(
            categories.contains(&"@dangerous".to_owned()),
            "{categories:?}"
        );
        run::<()>(
            &mut con,
            ("ACL", "SETUSER", "app", "on", ">p", "+@all", "-@admin"),
        );
        let mut app = server.connection();
        run::<()>(&mut app, ("AUTH", "app", "p"));
        assert!(error_of(&mut app, "CL.TOP", &[]).contains("NOPERM"));
    } else {
        println!("skipped: this server puts module commands in no ACL category");
    }
}

/// A wait that CLIENT UNBLOCK … TIMEOUT ends is answered as a timeout: denied, counted once. One
/// that CLIENT UNBLOCK … ERROR ends is answered with an error, and counts nothing.
fn a_wait_that_client_unblock_ends_counts_once_or_not_at_all(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    if !ServerKind::of(&mut con).client_unblock_reaches_waiters() {
        println!("skipped: this server keeps CLIENT UNBLOCK away from the module's waiters");
        return;
    }
    run::<()>(&mut con, ("CL.FIXED", "held", 1, 60));
    let args = ["held", "1", "60", "BLOCK", "0"];
    let unblock = |con: &mut redis::Connection, waiter: &Waiter, how: &str| -> i64 {
        run(con, ("CLIENT", &["UNBLOCK", &waiter.id.to_string(), how]))
    };
    let timeout = Waiter::parked(&server, &mut con, 1, "CL.FIXED", &args);
    assert_eq!(unblock(&mut con, &timeout, "TIMEOUT"), 1);
    assert_eq!(timeout.reply().0[0], 1);
    let error = Waiter::parked(&server, &mut con, 1, "CL.FIXED", &args);
    assert_eq!(unblock(&mut con, &error, "ERROR"), 1);
    assert!(error.error().starts_with("UNBLOCKED"));
    assert_eq!(waiting_field(&mut con, "now"), 0);
    assert_eq!(top(&mut con, 10), [(b"held".to_vec(), 1, 0)]);
}

/// A denial counts wherever the call came from (a transaction, a script), CL.ALL's against
/// each key whose limiter denied, wherever it stands among the keys; a replica applying its
/// primary's stream counts nothing.
fn denials_in_transactions_scripts_and_cl_all_count_and_a_replica_counts_none(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = connect(&primary);
    let mut all = redis::cmd("CL.ALL");
    all.arg(3).arg(&["all:a", "all:b", "all:c"]);
    for limit in [5, 1, 1] {
        all.arg("FIXED").arg(limit).arg(60);
    }
    let _: Value = all.arg("QUANTITY").arg(2).query(&mut con).unwrap();
    let mut transaction = redis::pipe();
    transaction
        .atomic()
        .cmd("CL.FIXED")
        .arg("multi")
        .arg(1)
        .arg(60)
        .arg(2)
        .ignore();
    transaction.query::<()>(&mut con).unwrap();
    let script = "return redis.call('CL.FIXED', KEYS[1], 1, 60, 2)";
    let reply: Vec<i64> = run(&mut con, ("EVAL", script, 1, "script"));
    assert_eq!(reply[0], 1);
    // Admissions the replica applies, then denials it never sees.
    for _ in 0..3 {
        let _: Vec<i64> = run(&mut con, ("CL.FIXED", "replicated", 1, 60));
    }
    wait_for_replica(&mut con);
    let mut listed = top(&mut con, 10);
    listed.sort();
    let keys: Vec<&[u8]> = listed.iter().map(|(key, _, _)| key.as_slice()).collect();
    assert_eq!(
        keys,
        [&b"all:b"[..], b"all:c", b"multi", b"replicated", b"script"],
        "{listed:?}"
    );
    assert!(listed
        .iter()
        .all(|(key, denied, _)| *denied == if key == b"replicated" { 2 } else { 1 }));
    let mut on_replica = connect(&replica);
    assert!(top(&mut on_replica, 10).is_empty());
}
