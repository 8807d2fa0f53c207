//! What is particular to CL.WINDOW, on real Redis 7.0 and Valkey 9 servers. The contract all
//! three commands share is in contract.rs.

use crate::harness::run;
use crate::harness::{
    aof_options, dump, info_field, limiter, replicate, resp_commands, server_now_ns, snapshot,
    wait_for_replica, DataDir, Flavor, Server,
};

both_servers!(
    units_count_for_one_period_after_admission,
    a_chain_of_replicas_holds_identical_logs,
    ten_thousand_entries_fit_in_80_kilobytes,
    a_replica_of_a_long_log_gets_small_commands_and_identical_bytes,
    peeks_and_denials_on_a_long_log_half_expired_answer_exactly_and_write_nothing,
);

fn units_count_for_one_period_after_admission(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60", "2"]),
        [0, 3, 1, -1, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60"]),
        [0, 3, 0, -1, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60"]),
        [1, 3, 0, 60, 60]
    );
    // Three units can only fit once all three have left; four never can.
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60", "3"]),
        [1, 3, 0, 60, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.WINDOW", &["w", "3", "60", "4"]),
        [1, 3, 0, -1, 60]
    );
    let (value, expiry) = snapshot(&mut con, b"w");
    assert!(value.unwrap().starts_with(b"CLW\x02"));
    let now_ms = server_now_ns(&mut con) / 1_000_000;
    assert!(
        expiry > now_ms + 59_000 && expiry <= now_ms + 60_000,
        "{expiry}"
    );
}

/// A replica of a replica gets the call as its own primary got it, instant included.
fn a_chain_of_replicas_holds_identical_logs(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    let sub_replica = Server::start(flavor);
    replicate(&replica, &primary);
    replicate(&sub_replica, &replica);
    let mut con = primary.connection();
    for i in 0..300 {
        let quantity = (i % 3).to_string();
        limiter(&mut con, "CL.WINDOW", &["chain", "100", "3600", &quantity]);
        limiter(
            &mut con,
            "CL.WINDOW",
            &["chain:ms", "50", "3600000", &quantity, "MS"],
        );
    }
    wait_for_replica(&mut con);
    let expected: Vec<_> = ["chain", "chain:ms"]
        .iter()
        .map(|k| {
            (
                snapshot(&mut con, k.as_bytes()),
                dump(&mut con, k.as_bytes()),
            )
        })
        .collect();
    let mut sub_con = sub_replica.connection();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got: Vec<_> = ["chain", "chain:ms"]
            .iter()
            .map(|k| {
                (
                    snapshot(&mut sub_con, k.as_bytes()),
                    dump(&mut sub_con, k.as_bytes()),
                )
            })
            .collect();
        if got == expected {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sub-replica never caught up"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        snapshot(&mut replica.connection(), b"chain"),
        snapshot(&mut con, b"chain")
    );
}

/// A server whose AOF holds `entries` admitted calls on `key`, `spacing_ms` apart, the last a
/// second ago, under a period that keeps them all: the replication form, as a primary would
/// have logged it. Also returns when the first was admitted.
fn server_with_long_log(
    flavor: Flavor,
    key: &str,
    entries: i64,
    limit: i64,
    spacing_ms: i64,
) -> (Server, i64) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let first = now_ms - 1_000 - (entries - 1) * spacing_ms;
    let period_ms = (2 * entries * spacing_ms).max(3_600_000).to_string();
    let aof = resp_commands((0..entries).map(|i| {
        [
            "CL.WINDOW",
            key,
            &limit.to_string(),
            &period_ms,
            "1",
            "MS",
            "AT",
            &(first + i * spacing_ms).to_string(),
        ]
        .map(String::from)
        .to_vec()
    }));
    let dir = DataDir::fresh();
    std::fs::write(dir.path().join("appendonly.aof"), aof).unwrap();
    (Server::start_with(flavor, aof_options(Some(dir))), first)
}

fn ten_thousand_entries_fit_in_80_kilobytes(flavor: Flavor) {
    let (server, _) = server_with_long_log(flavor, "big", 10_000, 20_000, 1);
    let mut con = server.connection();
    let peek = limiter(&mut con, "CL.WINDOW", &["big", "20000", "3600", "0"]);
    assert_eq!(peek[..4], [0, 20_000, 10_000, -1]);
    let usage: i64 = run(&mut con, ("MEMORY", &["USAGE", "big"]));
    assert!(usage <= 80_000, "MEMORY USAGE {usage}");
    // Two bytes an entry, 56 entries to a 128-byte block, after a 48-byte header.
    let len: i64 = run(&mut con, ("STRLEN", "big"));
    assert_eq!(len, 48 + 178 * 128 + 16 + 1 + 2 * 31);
}

fn a_replica_of_a_long_log_gets_small_commands_and_identical_bytes(flavor: Flavor) {
    let (primary, _) = server_with_long_log(flavor, "long", 10_000, 1_000_000, 1);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let before: i64 = info_field(&mut con, "replication", "master_repl_offset")
        .parse()
        .unwrap();
    for _ in 0..100 {
        assert_eq!(
            limiter(&mut con, "CL.WINDOW", &["long", "1000000", "3600"])[0],
            0
        );
    }
    let after: i64 = info_field(&mut con, "replication", "master_repl_offset")
        .parse()
        .unwrap();
    // Each admitted call propagates one short command, whatever the size of the log.
    assert!(
        after - before < 100 * 200,
        "{} bytes for 100 calls",
        after - before
    );
    wait_for_replica(&mut con);
    let mut replica_con = replica.connection();
    assert_eq!(
        snapshot(&mut replica_con, b"long"),
        snapshot(&mut con, b"long")
    );
    assert_eq!(dump(&mut replica_con, b"long"), dump(&mut con, b"long"));
    let len: i64 = run(&mut replica_con, ("STRLEN", "long"));
    assert!(len > 48 + 178 * 128 + 16 + 1 + 2 * 31);
}

/// A peek and a denial search a long log rather than walk the entries that expired since
/// the last write (the unit tests count what they read): here, on a real server, they
/// answer exactly and leave the value as it was.
fn peeks_and_denials_on_a_long_log_half_expired_answer_exactly_and_write_nothing(flavor: Flavor) {
    const ENTRIES: i64 = 20_000;
    const LIMIT: i64 = 1_000_000;
    // Entries a second apart; half a second off their grid, so that few calls see one leave.
    const PERIOD_MS: i64 = 10_000_500;
    let (server, first) = server_with_long_log(flavor, "sparse", ENTRIES, LIMIT, 1_000);
    let newest = first + (ENTRIES - 1) * 1_000;
    let mut con = server.connection();
    let before = (snapshot(&mut con, b"sparse"), dump(&mut con, b"sparse"));
    // Entry i is live at `now` iff now - (first + 1000 i) < period.
    let live_at = |now_ms: i64| {
        let expired = (now_ms - PERIOD_MS - first).div_euclid(1_000) + 1;
        ENTRIES - expired.clamp(0, ENTRIES)
    };
    let (limit, period) = (LIMIT.to_string(), PERIOD_MS.to_string());
    loop {
        let start = server_now_ns(&mut con) / 1_000_000;
        let peek = limiter(
            &mut con,
            "CL.WINDOW",
            &["sparse", &limit, &period, "0", "MS"],
        );
        let denial = limiter(
            &mut con,
            "CL.WINDOW",
            &["sparse", &limit, &period, &limit, "MS"],
        );
        let end = server_now_ns(&mut con) / 1_000_000;
        let live = live_at(start);
        if live != live_at(end) {
            continue;
        }
        assert!((9_000..11_000).contains(&live), "{live} live entries");
        assert_eq!(peek[..4], [0, LIMIT, LIMIT - live, -1]);
        assert_eq!(denial[..3], [1, LIMIT, LIMIT - live]);
        // All the live units must leave for the whole limit to fit: the newest's departure.
        let newest_leaves = (newest + PERIOD_MS - end)..=(newest + PERIOD_MS - start);
        for wait in [peek[4], denial[3], denial[4]] {
            assert!(
                newest_leaves.contains(&wait),
                "{wait} not in {newest_leaves:?}"
            );
        }
        break;
    }
    let after = (snapshot(&mut con, b"sparse"), dump(&mut con, b"sparse"));
    assert_eq!(after, before);
}

/// Its clock frozen where the test puts it.
#[test]
fn a_unit_leaves_exactly_one_period_after_it_was_admitted_under_a_controlled_clock() {
    const BASE: i64 = 1_900_000_000_000;
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let mut at = |offset_ms: i64, quantity: &str| {
        server.set_clock_ms(BASE + offset_ms);
        limiter(&mut con, "CL.WINDOW", &["w", "2", "1000", quantity, "MS"])
    };
    assert_eq!(at(0, "1"), [0, 2, 1, -1, 1000]);
    assert_eq!(at(300, "1"), [0, 2, 0, -1, 1000]);
    assert_eq!(at(999, "1"), [1, 2, 0, 1, 301]);
    // The unit from 0 leaves at 1000 exactly.
    assert_eq!(at(1_000, "0"), [0, 2, 1, -1, 300]);
    assert_eq!(at(1_000, "1"), [0, 2, 0, -1, 1000]);
    assert_eq!(at(1_299, "1"), [1, 2, 0, 1, 701]);
    assert_eq!(at(1_300, "1"), [0, 2, 0, -1, 1000]);
    let mut con = server.connection();
    assert_eq!(snapshot(&mut con, b"w").1, BASE + 2_300);
    // After the newest unit has left, the limiter is empty and the key gone.
    assert_eq!(at(2_300, "0"), [0, 2, 2, -1, 0]);
    server.set_clock_ms(BASE + 2_301);
    assert_eq!(snapshot(&mut con, b"w"), (None, -2));
}
