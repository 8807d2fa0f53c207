//! CL.LEASE and CL.RELEASE, the concurrency limit, on real Redis 7.0 and Valkey 9 servers:
//! holders up to the limit, renewals, releases, leases that end, waiting for a slot, CL.ALL's
//! LEASE limiter, the events of a set that grows and shrinks, and a cluster. What every
//! command shares (bad input, replicas and the AOF, MULTI, ACL) is contract.rs's.

use crate::harness::run;
use std::time::{Duration, Instant};

use crate::harness::cluster::Cluster;
use crate::harness::events::Events;
use crate::harness::waiting::{connect, ms_between, until_waiting, waiting_field, Waiter};
use crate::harness::{dirty, limiter, replicate, snapshot, stats_field, Flavor, Options, Server};

both_servers!(
    holders_up_to_the_limit_are_admitted_renew_and_release,
    a_release_admits_the_first_waiter_at_once_first_come_first_served,
    a_lease_that_ends_admits_the_waiter_at_its_instant,
    a_renewal_never_waits_behind_waiters,
    crossed_cl_all_waits_with_leases_both_complete,
    a_waiter_that_disconnects_takes_no_lease,
    cl_all_holds_a_lease_and_a_rate_limit_in_one_decision,
    writes_fire_their_events_and_denials_none,
    a_cluster_routes_leases_and_releases_to_their_slot,
);

fn lease(con: &mut redis::Connection, args: &[&str]) -> Vec<i64> {
    limiter(con, "CL.LEASE", args)
}

fn release(con: &mut redis::Connection, key: &str, holder: &str) -> i64 {
    redis::cmd("CL.RELEASE")
        .arg(&[key, holder])
        .query(con)
        .unwrap_or_else(|e| panic!("CL.RELEASE {key} {holder}: {e}"))
}

fn strlen(con: &mut redis::Connection, key: &str) -> i64 {
    run(con, ("STRLEN", key))
}

fn pttl(con: &mut redis::Connection, key: &str) -> i64 {
    run(con, ("PTTL", key))
}

/// What a set of leases holds: a 20-byte header, and each lease its holder's length plus 13.
fn set_len(holders: &[&str]) -> i64 {
    20 + holders.iter().map(|h| h.len() as i64 + 13).sum::<i64>()
}

/// The key holds these holders' leases and little else: all of them listed, and a value no
/// longer than their bytes and the short tail new leases take theirs from.
fn assert_holds(con: &mut redis::Connection, key: &str, holders: &[&str]) {
    let mut listed: Vec<(Vec<u8>, i64)> = run(con, ("CL.HOLDERS", key));
    listed.sort();
    let mut expected: Vec<&[u8]> = holders.iter().map(|h| h.as_bytes()).collect();
    expected.sort();
    let names: Vec<&[u8]> = listed.iter().map(|(h, _)| h.as_slice()).collect();
    assert_eq!(names, expected, "{key}");
    let (len, used) = (strlen(con, key), set_len(holders));
    assert!(
        len >= used && len <= used + 2 * (used / 32).max(64) + 8,
        "{key}: {len} bytes for {used}"
    );
}

fn holders_up_to_the_limit_are_admitted_renew_and_release(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "job:a"]),
        [0, 2, 1, -1, 60]
    );
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "job:b"]),
        [0, 2, 0, -1, 60]
    );
    // Full: a third holder waits for the earliest end; the set is unchanged.
    let before = snapshot(&mut con, b"pool");
    let writes = dirty(&mut con);
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "job:c"]),
        [1, 2, 0, 60, 60]
    );
    assert_eq!(snapshot(&mut con, b"pool"), before);
    assert_eq!(dirty(&mut con), writes, "a denial writes nothing");
    // A renewal takes no slot: it is admitted while the pool is full.
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "job:a"]),
        [0, 2, 0, -1, 60]
    );
    assert_holds(&mut con, "pool", &["job:a", "job:b"]);
    // A look lists the holders, the soonest to end first, with their time left.
    let mut held: Vec<(String, i64)> = run(&mut con, ("CL.HOLDERS", "pool"));
    held.sort();
    assert_eq!(held, [("job:a".into(), 60), ("job:b".into(), 60)]);
    let held: Vec<(String, i64)> = run(&mut con, ("CL.HOLDERS", &["pool", "MS"]));
    assert_eq!(held.len(), 2);
    assert!(held[0].1 <= held[1].1, "the soonest to end first: {held:?}");
    // Ten seconds of slack, here and below, for a loaded machine: a minute's lease is not a
    // few milliseconds'.
    assert!(
        held.iter()
            .all(|(_, left)| (50_000..=60_000).contains(left)),
        "{held:?}"
    );
    let none: Vec<(String, i64)> = run(&mut con, ("CL.HOLDERS", "empty"));
    assert!(none.is_empty());
    let ttl = pttl(&mut con, "pool");
    assert!(ttl > 50_000 && ttl <= 60_000, "{ttl}");

    assert_eq!(release(&mut con, "pool", "job:b"), 1);
    assert_eq!(release(&mut con, "pool", "job:b"), 0, "released already");
    assert_eq!(release(&mut con, "pool", "job:z"), 0, "never held");
    assert_eq!(release(&mut con, "nothing", "job:a"), 0, "no key");
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "job:c", "MS"])[..3],
        [0, 2, 0]
    );
    assert_holds(&mut con, "pool", &["job:a", "job:c"]);
    // The key expires at its last lease's end: job:a's, a minute away, not job:c's 60 ms.
    assert!(pttl(&mut con, "pool") > 50_000);
    // Releasing the last lease deletes the key, as SREM deletes an emptied set.
    assert_eq!(release(&mut con, "pool", "job:a"), 1);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(release(&mut con, "pool", "job:c"), 0, "job:c's lease ended");
    let exists: i64 = run(&mut con, ("EXISTS", "pool"));
    assert_eq!(exists, 0);

    // Holders are any bytes, up to 255 of them.
    let long = "h".repeat(255);
    let binary: &[u8] = b"\x00\xff job";
    let reply: Vec<i64> = run(&mut con, ("CL.LEASE", "bin", "1", "60", binary));
    assert_eq!(reply, [0, 1, 0, -1, 60]);
    assert_eq!(lease(&mut con, &["bin", "1", "60", &long])[0], 1);
    let freed: i64 = run(&mut con, ("CL.RELEASE", "bin", binary));
    assert_eq!(freed, 1);
    assert_eq!(lease(&mut con, &["bin", "1", "60", &long])[0], 0);

    assert_eq!(stats_field(&mut con, "cl_lease", "allowed"), 6);
    assert_eq!(stats_field(&mut con, "cl_lease", "denied"), 2);
    assert_eq!(stats_field(&mut con, "cl_release", "allowed"), 3);
    assert_eq!(stats_field(&mut con, "cl_release", "denied"), 4);
    assert_eq!(stats_field(&mut con, "cl_release", "calls"), 7);
    assert_eq!(stats_field(&mut con, "cl_holders", "peeks"), 5);
}

const BASE: i64 = 1_796_083_200_000; // 2026-12-01T00:00:00Z

#[test]
fn leases_end_at_their_instant_and_the_key_with_the_last_under_a_controlled_clock() {
    let server = &Server::with_exact_fake_clock(BASE);
    let mut con = connect(server);
    assert_eq!(lease(&mut con, &["p", "2", "10", "a"]), [0, 2, 1, -1, 10]);
    server.set_clock_ms(BASE + 4_000);
    assert_eq!(lease(&mut con, &["p", "2", "10", "b"]), [0, 2, 0, -1, 10]);
    let (_, expiry) = snapshot(&mut con, b"p");
    assert_eq!(expiry, BASE + 14_000, "the key ends with its last lease");
    server.set_clock_ms(BASE + 9_999);
    assert_eq!(
        lease(&mut con, &["p", "2", "10000", "c", "MS"]),
        [1, 2, 0, 1, 4_001]
    );
    // At its end, a's lease frees its slot; c takes it, and a's entry is dropped.
    server.set_clock_ms(BASE + 10_000);
    assert_eq!(
        lease(&mut con, &["p", "2", "10000", "c", "MS"]),
        [0, 2, 0, -1, 10_000]
    );
    assert_holds(&mut con, "p", &["b", "c"]);
    assert_eq!(release(&mut con, "p", "a"), 0);
    // The key goes when the last lease ends (the server keeps a key through its expiry's
    // millisecond, when the set holds no live lease already).
    // At BASE + 20 s both have ended: e's is the only lease, and ends the key.
    server.set_clock_ms(BASE + 20_000);
    assert_eq!(
        lease(&mut con, &["p", "9", "10", "e", "MS"]),
        [0, 9, 8, -1, 10]
    );
    assert_holds(&mut con, "p", &["e"]);
    assert_eq!(snapshot(&mut con, b"p").1, BASE + 20_010);
    server.set_clock_ms(BASE + 20_011);
    let exists: i64 = run(&mut con, ("EXISTS", "p"));
    assert_eq!(exists, 0);
}

fn a_release_admits_the_first_waiter_at_once_first_come_first_served(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(lease(&mut con, &["pool", "1", "60", "worker:1"])[0], 0);
    // Leases of a minute: only a release can admit these waiters within their 10 s.
    let second = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.LEASE",
        &["pool", "1", "60", "worker:2", "BLOCK", "10000"],
    );
    let third = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.LEASE",
        &["pool", "1", "60", "worker:3", "BLOCK", "10000"],
    );
    // Behind the waiters, an arriving holder takes nothing.
    assert_eq!(lease(&mut con, &["pool", "1", "60", "late"])[0], 1);
    let released = Instant::now();
    assert_eq!(release(&mut con, "pool", "worker:1"), 1);
    let (reply, at) = second.reply();
    assert_eq!(reply, [0, 1, 0, -1, 60]);
    assert!(ms_between(released, at) < 5_000);
    until_waiting(&mut con, 1);
    // The slot is worker:2's now: a late holder still takes nothing.
    assert_eq!(lease(&mut con, &["pool", "1", "60", "late"])[0], 1);
    assert_eq!(release(&mut con, "pool", "worker:2"), 1);
    assert_eq!(third.reply().0, [0, 1, 0, -1, 60]);
    assert_eq!(release(&mut con, "pool", "worker:3"), 1);
    assert_eq!(waiting_field(&mut con, "admitted"), 2);
    assert_eq!(waiting_field(&mut con, "now"), 0);
}

fn a_lease_that_ends_admits_the_waiter_at_its_instant(flavor: Flavor) {
    // On the real clock, with any server: the waiter gets the slot when the lease ends.
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(lease(&mut con, &["pool", "1", "300", "dying", "MS"])[0], 0);
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.LEASE",
        &["pool", "1", "300", "next", "MS", "BLOCK", "10000"],
    );
    let (reply, _) = waiter.reply();
    assert_eq!(reply, [0, 1, 0, -1, 300]);
    assert_holds(&mut con, "pool", &["next"]);
}

/// At exactly its instant.
#[test]
fn a_lease_that_ends_admits_the_waiter_at_its_instant_under_a_controlled_clock() {
    let server = &Server::with_exact_fake_clock(BASE);
    let mut con = connect(server);
    assert_eq!(lease(&mut con, &["p", "1", "10", "a"])[0], 0);
    let waiter = Waiter::parked(
        server,
        &mut con,
        1,
        "CL.LEASE",
        &["p", "1", "10", "b", "BLOCK", "0"],
    );
    server.set_clock_ms(BASE + 9_999);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(waiting_field(&mut con, "now"), 1);
    server.set_clock_ms(BASE + 10_000);
    assert_eq!(waiter.reply().0, [0, 1, 0, -1, 10]);
    let (_, expiry) = snapshot(&mut con, b"p");
    assert_eq!(expiry, BASE + 20_000);
}

fn a_renewal_never_waits_behind_waiters(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(lease(&mut con, &["pool", "2", "60", "a"])[0], 0);
    assert_eq!(lease(&mut con, &["pool", "2", "60", "b"])[0], 0);
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.LEASE",
        &["pool", "2", "60", "c", "BLOCK", "0"],
    );
    // Heartbeats while someone waits: admitted, and with BLOCK too, at once.
    assert_eq!(
        lease(&mut con, &["pool", "2", "60", "a"]),
        [0, 2, 0, -1, 60]
    );
    assert_eq!(
        lease(&mut con, &["pool", "2", "30", "b", "BLOCK", "0"]),
        [0, 2, 0, -1, 60]
    );
    assert_eq!(waiting_field(&mut con, "now"), 1);
    assert_eq!(release(&mut con, "pool", "b"), 1);
    assert_eq!(waiter.reply().0, [0, 2, 0, -1, 60]);
}

fn crossed_cl_all_waits_with_leases_both_complete(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(lease(&mut con, &["p1", "1", "60", "x"])[0], 0);
    assert_eq!(lease(&mut con, &["p2", "1", "60", "y"])[0], 0);
    let call = |first: &'static str, second: &'static str, holder: &'static str| {
        vec![
            "2", first, second, "LEASE", "1", "60", "LEASE", "1", "60", "HOLDER", holder, "BLOCK",
            "10000",
        ]
    };
    let one = Waiter::parked(&server, &mut con, 1, "CL.ALL", &call("p1", "p2", "w1"));
    let two = Waiter::parked(&server, &mut con, 2, "CL.ALL", &call("p2", "p1", "w2"));
    assert_eq!(release(&mut con, "p2", "y"), 1);
    // The first waiter needs p1 too; the second stands behind it on both.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(waiting_field(&mut con, "now"), 2);
    assert_eq!(release(&mut con, "p1", "x"), 1);
    let (a, a_at) = one.reply();
    assert_eq!(a, [0, 1, 0, -1, 60]);
    // w1 holds both; once it lets go of both, w2 takes both.
    assert_eq!(release(&mut con, "p1", "w1"), 1);
    assert_eq!(release(&mut con, "p2", "w1"), 1);
    let (b, b_at) = two.reply();
    assert_eq!(b, [0, 1, 0, -1, 60]);
    assert!(a_at <= b_at);
    assert_eq!(release(&mut con, "p1", "w2"), 1);
    assert_eq!(release(&mut con, "p2", "w2"), 1);
}

fn a_waiter_that_disconnects_takes_no_lease(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    assert_eq!(lease(&mut con, &["pool", "1", "60", "a"])[0], 0);
    let gone = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.LEASE",
        &["pool", "1", "60", "gone", "BLOCK", "0"],
    );
    let next = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.LEASE",
        &["pool", "1", "60", "next", "BLOCK", "0"],
    );
    run::<()>(&mut con, ("CLIENT", &["KILL", "ID", &gone.id.to_string()]));
    assert!(gone.handle.join().unwrap().0.is_err());
    until_waiting(&mut con, 1);
    assert_eq!(release(&mut con, "pool", "a"), 1);
    assert_eq!(next.reply().0, [0, 1, 0, -1, 60]);
    assert_eq!(release(&mut con, "pool", "gone"), 0, "it never held one");
    assert_holds(&mut con, "pool", &["next"]);
    assert_eq!(waiting_field(&mut con, "left"), 1);
}

fn cl_all_holds_a_lease_and_a_rate_limit_in_one_decision(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    let call = |con: &mut redis::Connection, holder: &str, extra: &[&str]| -> Vec<i64> {
        let mut args = vec![
            "2", "rate", "pool", "FIXED", "3", "60", "LEASE", "2", "30", "HOLDER", holder,
        ];
        args.extend(extra);
        limiter(con, "CL.ALL", &args)
    };
    let detail = |con: &mut redis::Connection, holder: &str, extra: &[&str]| -> Vec<Vec<i64>> {
        let mut args = vec![
            "2", "rate", "pool", "FIXED", "3", "60", "LEASE", "2", "30", "HOLDER", holder,
        ];
        args.extend(extra);
        run(con, ("CL.ALL", &args))
    };
    assert_eq!(call(&mut con, "a", &[]), [0, 2, 1, -1, 30]);
    assert_eq!(call(&mut con, "b", &[]), [0, 2, 0, -1, 30]);
    // The pool is full: the rate limit takes nothing either.
    assert_eq!(call(&mut con, "c", &[])[..4], [1, 2, 0, 30]);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["rate", "3", "60", "0"])[..3],
        [0, 3, 1]
    );
    // A renewal is admitted by the pool, and counts against the rate: the third unit.
    assert_eq!(
        detail(&mut con, "a", &["DETAIL"]),
        [[0, 3, 0, -1, 60], [0, 2, 0, -1, 30]]
    );
    // Now the rate denies: the renewal takes nothing.
    assert_eq!(call(&mut con, "b", &[])[..4], [1, 3, 0, 60]);
    // A look (QUANTITY 0) takes nothing from either.
    let looked = detail(&mut con, "z", &["QUANTITY", "0", "DETAIL"]);
    assert_eq!(looked, [[0, 3, 0, -1, 60], [0, 2, 0, -1, 30]]);
    assert_holds(&mut con, "pool", &["a", "b"]);
    // CL.RELEASE frees what CL.ALL took.
    assert_eq!(release(&mut con, "pool", "a"), 1);
    // A holder named like an option is still the holder.
    let ms = limiter(
        &mut con,
        "CL.ALL",
        &["1", "pool", "LEASE", "2", "30000", "HOLDER", "MS", "MS"],
    );
    assert_eq!(ms, [0, 2, 0, -1, 30_000]);
    assert_eq!(release(&mut con, "pool", "MS"), 1);
}

/// With `new` events too (`n`): a key's first write fires `new` once, and a set that grows
/// is the same key, not one deleted and added again.
fn writes_fire_their_events_and_denials_none(flavor: Flavor) {
    let with_new = || {
        Server::start_with(
            flavor,
            Options {
                args: vec!["--notify-keyspace-events".into(), "KEAn".into()],
                ..Options::default()
            },
        )
    };
    let primary = with_new();
    let replica = with_new();
    replicate(&replica, &primary);
    let mut on_primary = Events::subscribe(&primary);
    let mut on_replica = Events::subscribe(&replica);
    let mut con = primary.connection();
    lease(&mut con, &["pool", "1", "60", "a"]);
    lease(&mut con, &["pool", "1", "60", "b"]);
    release(&mut con, "pool", "b");
    // A set that grows past its tail, and shrinks back.
    for i in 0..12 {
        lease(&mut con, &["grows", "100", "60", &format!("holder:{i:02}")]);
    }
    for i in 0..12 {
        release(&mut con, "grows", &format!("holder:{i:02}"));
    }
    lease(&mut con, &["pool", "1", "60", "a"]);
    lease(&mut con, &["other", "1", "60", "a"]);
    // A second slot, taken and given back: the key stays, with a's end as its expiry.
    lease(&mut con, &["pool", "2", "30", "d"]);
    release(&mut con, "pool", "d");
    release(&mut con, "pool", "a");
    limiter(
        &mut con,
        "CL.ALL",
        &[
            "1", "pool", "LEASE", "1", "60", "HOLDER", "c", "QUANTITY", "0",
        ],
    );
    limiter(
        &mut con,
        "CL.ALL",
        &["1", "pool", "LEASE", "1", "60", "HOLDER", "c"],
    );
    run::<()>(&mut con, ("SET", &["marker", "1"]));
    let mut expected: Vec<(&str, &str)> =
        vec![("new", "pool"), ("cl.lease", "pool"), ("expire", "pool")];
    expected.push(("new", "grows"));
    for _ in 0..12 {
        expected.extend([("cl.lease", "grows"), ("expire", "grows")]);
    }
    for _ in 0..11 {
        expected.extend([("cl.release", "grows"), ("expire", "grows")]);
    }
    expected.extend([("cl.release", "grows"), ("del", "grows")]);
    expected.extend([
        ("cl.lease", "pool"),
        ("expire", "pool"),
        ("new", "other"),
        ("cl.lease", "other"),
        ("expire", "other"),
        ("cl.lease", "pool"),
        ("expire", "pool"),
        ("cl.release", "pool"),
        ("expire", "pool"),
        ("cl.release", "pool"),
        ("del", "pool"),
        ("new", "pool"),
        ("cl.lease", "pool"),
        ("expire", "pool"),
    ]);
    // The marker's own `new` ends the collection.
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(event, key)| (event.to_string(), key.to_string()))
        .collect();
    assert_eq!(on_primary.until_marker("marker"), expected, "primary");
    assert_eq!(on_replica.until_marker("marker"), expected, "replica");
}

/// Every key of any type: its name, DUMP and absolute expiry.
fn a_cluster_routes_leases_and_releases_to_their_slot(flavor: Flavor) {
    const POOLS: usize = 200;
    let cluster = Cluster::start(flavor);
    let mut con = cluster.client();
    let call = |con: &mut redis::cluster::ClusterConnection, args: &[&str]| -> Vec<i64> {
        run(con, ("CL.LEASE", args))
    };
    for i in 0..POOLS {
        let key = format!("pool:{i}");
        assert_eq!(call(&mut con, &[&key, "1", "3600", "a"])[0], 0, "{key}");
        assert_eq!(call(&mut con, &[&key, "1", "3600", "b"])[0], 1, "{key}");
    }
    for i in (0..POOLS).step_by(3) {
        let key = format!("pool:{i}");
        let freed: i64 = run(&mut con, ("CL.RELEASE", &[key.as_str(), "a"]));
        assert_eq!(freed, 1, "{key}");
        assert_eq!(call(&mut con, &[&key, "1", "3600", "b"])[0], 0, "{key}");
    }
    // CL.ALL over a rate limit and a pool under one hash tag.
    let reply: Vec<i64> = run(
        &mut con,
        (
            "CL.ALL",
            &[
                "2",
                "{user:1}:rate",
                "{user:1}:pool",
                "FIXED",
                "5",
                "60",
                "LEASE",
                "1",
                "3600",
                "HOLDER",
                "a",
            ],
        ),
    );
    assert_eq!(reply, [0, 1, 0, -1, 3600]);
    let mut total = 0;
    for node in &cluster.nodes {
        let mut node_con = node.connection();
        if crate::harness::info_field(&mut node_con, "replication", "role") == "master" {
            let size: i64 = run(&mut node_con, &["DBSIZE"]);
            assert!(size > 20, "a primary holds only {size} keys");
            total += size;
        }
    }
    assert_eq!(total as usize, POOLS + 2);
}
