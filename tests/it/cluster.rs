//! The single commands in a Redis Cluster of three primaries and three replicas: hash-tagged
//! keys together in one transaction, a slot moved with its limiters, a failover that keeps
//! them, and a waiter (BLOCK) whose slot moves away. (Routing every form to its slot is the
//! shared contract's.)

use crate::harness::cluster::Cluster;
use crate::harness::run;
use crate::harness::waiting::{connect, until_waiting, waiting_field, Waiter};
use crate::harness::{error_of, snapshot, wait_for_replica, Flavor};
use redis::ConnectionLike;

both_servers!(
    hash_tagged_limiters_share_a_transaction,
    a_moved_slot_keeps_its_limiters,
    a_failover_keeps_limiters_at_their_limit,
    a_waiter_whose_slot_moves_away_is_redirected_and_writes_nothing,
    a_waiter_on_the_node_importing_its_slot_waits_for_the_import_and_is_admitted_there,
    a_moved_waiter_is_sent_to_the_hostname_the_server_names,
);

/// Each command with arguments for a limit of two units per hour.
const LIMITERS: [(&str, &[&str]); 3] = [
    ("CL.THROTTLE", &["1", "2", "7200"]),
    ("CL.FIXED", &["2", "3600"]),
    ("CL.WINDOW", &["2", "3600"]),
];

fn call(con: &mut impl ConnectionLike, command: &str, key: &str, params: &[&str]) -> Vec<i64> {
    redis::cmd(command)
        .arg(key)
        .arg(params)
        .query(con)
        .unwrap_or_else(|e| panic!("{command} {key}: {e}"))
}

/// One limiter per command under the hash tag, each called up to its limit; their keys.
fn fill_limiters(con: &mut impl ConnectionLike, tag: &str) -> Vec<String> {
    LIMITERS
        .iter()
        .map(|&(command, params)| {
            let key = format!("{tag}:{command}");
            call(con, command, &key, params);
            assert_eq!(call(con, command, &key, params)[..3], [0, 2, 0], "{key}");
            key
        })
        .collect()
}

/// Each limiter `fill_limiters` made still denies.
fn assert_still_full(con: &mut impl ConnectionLike, keys: &[String]) {
    for (key, (command, params)) in keys.iter().zip(LIMITERS) {
        assert_eq!(call(con, command, key, params)[..3], [1, 2, 0], "{key}");
    }
}

fn hash_tagged_limiters_share_a_transaction(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    let node = cluster.primary_for("{user:42}");
    let mut con = node.connection();
    let mut transaction = redis::pipe();
    transaction.atomic();
    for (command, params) in LIMITERS {
        transaction
            .cmd(command)
            .arg(format!("{{user:42}}:{command}"))
            .arg(params);
    }
    let replies: Vec<Vec<i64>> = transaction.query(&mut con).unwrap();
    assert_eq!(replies.len(), 3);
    for reply in replies {
        assert_eq!(reply[..3], [0, 2, 1]);
    }
    // Keys in different slots cannot share it: the server finds both keys from the key spec.
    run::<()>(&mut con, &["MULTI"]);
    let queued: String = run(&mut con, ("CL.FIXED", &["{user:42}:a", "2", "60"]));
    assert_eq!(queued, "QUEUED");
    let queued: String = run(&mut con, ("CL.FIXED", &["{user:43}:a", "2", "60"]));
    assert_eq!(queued, "QUEUED");
    let crossed = redis::cmd("EXEC")
        .query::<redis::Value>(&mut con)
        .expect_err("CROSSSLOT");
    assert_eq!(crossed.code(), Some("CROSSSLOT"), "{crossed}");
    let untouched: i64 = run(&mut con, ("EXISTS", "{user:42}:a"));
    assert_eq!(untouched, 0);
}

fn a_moved_slot_keeps_its_limiters(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    let mut con = cluster.client();
    let keys = fill_limiters(&mut con, "{moving}");
    let source = cluster.primary_for("{moving}");
    let target = other_primary(&cluster, source);
    let mut source_con = source.connection();
    let before: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut source_con, k.as_bytes()))
        .collect();

    move_slot(&cluster, source, target, "{moving}", &keys);
    cluster.wait_until_settled();
    let mut target_con = target.connection();

    let after: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut target_con, k.as_bytes()))
        .collect();
    for ((key, (value_before, expiry_before)), (value_after, expiry_after)) in
        keys.iter().zip(&before).zip(&after)
    {
        assert_eq!(value_after, value_before, "{key}");
        // MIGRATE carries the expiry as a relative TTL, re-anchored on arrival.
        assert!(
            (expiry_after - expiry_before).abs() <= 50,
            "{key}: {expiry_before} → {expiry_after}"
        );
    }
    // Through the cluster client, which follows the slot to its new node: all still full.
    let mut con = cluster.client();
    assert_still_full(&mut con, &keys);
}

fn a_failover_keeps_limiters_at_their_limit(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    let mut con = cluster.client();
    let keys = fill_limiters(&mut con, "{failing}");
    let primary = cluster.primary_for("{failing}");
    wait_for_replica(&mut primary.connection());
    let replica = cluster.replica_of(primary);
    let mut replica_con = replica.connection();
    run::<()>(&mut replica_con, ("CLUSTER", "FAILOVER"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while crate::harness::info_field(&mut replica_con, "replication", "role") != "master" {
        assert!(
            std::time::Instant::now() < deadline,
            "failover did not happen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    cluster.wait_until_settled();
    let mut con = cluster.client();
    assert_still_full(&mut con, &keys);
    assert_eq!(cluster.primary_for("{failing}").port, replica.port);
}

/// Moves the slot of `tag` from `source` to `target` as redis-cli's resharding does, with
/// `keys`; returns the slot.
fn move_slot(
    cluster: &Cluster,
    source: &crate::harness::Server,
    target: &crate::harness::Server,
    tag: &str,
    keys: &[String],
) -> i64 {
    let slot = migrate_keys(source, target, tag, keys);
    assign_slot(cluster, slot, target);
    slot
}

/// The first half of a move: the slot of `tag` migrating from `source` to `target`, and
/// `keys` migrated, the slot still `source`'s. Returns the slot.
fn migrate_keys(
    source: &crate::harness::Server,
    target: &crate::harness::Server,
    tag: &str,
    keys: &[String],
) -> i64 {
    let slot = start_migration(source, target, tag);
    let _: () = redis::cmd("MIGRATE")
        .arg(&[
            "127.0.0.1",
            &target.port.to_string(),
            "",
            "0",
            "5000",
            "KEYS",
        ])
        .arg(keys)
        .query(&mut source.connection())
        .unwrap();
    slot
}

/// The slot of `tag` set importing on `target` and migrating on `source`; returns it.
fn start_migration(
    source: &crate::harness::Server,
    target: &crate::harness::Server,
    tag: &str,
) -> i64 {
    let mut source_con = source.connection();
    let mut target_con = target.connection();
    let slot: i64 = run(&mut source_con, ("CLUSTER", &["KEYSLOT", tag]));
    let slot_text = slot.to_string();
    let (source_id, target_id) = (Cluster::id(source), Cluster::id(target));
    run::<()>(
        &mut target_con,
        ("CLUSTER", &["SETSLOT", &slot_text, "IMPORTING", &source_id]),
    );
    run::<()>(
        &mut source_con,
        ("CLUSTER", &["SETSLOT", &slot_text, "MIGRATING", &target_id]),
    );
    slot
}

/// The second half of a move: every node told that `target` serves `slot`.
fn assign_slot(cluster: &Cluster, slot: i64, target: &crate::harness::Server) {
    let (slot_text, target_id) = (slot.to_string(), Cluster::id(target));
    for node in &cluster.nodes {
        let mut c = node.connection();
        let _: redis::RedisResult<()> = redis::cmd("CLUSTER")
            .arg(&["SETSLOT", &slot_text, "NODE", &target_id])
            .query(&mut c);
    }
}

/// The other primary than `source`.
fn other_primary<'a>(
    cluster: &'a Cluster,
    source: &crate::harness::Server,
) -> &'a crate::harness::Server {
    cluster
        .nodes
        .iter()
        .find(|n| {
            let mut c = n.connection();
            crate::harness::info_field(&mut c, "replication", "role") == "master"
                && n.port != source.port
        })
        .unwrap()
}

/// One unit per 1.5 s: a waiter's turn comes 1.5 s after the first call.
const ONE_PER_1500_MS: [&str; 5] = ["0", "1", "1500", "1", "MS"];

/// The words of a CL.THROTTLE call on `key` at ONE_PER_1500_MS that waits as long as it takes.
fn waiting_call(key: &str) -> Vec<&str> {
    let mut words = vec![key];
    words.extend(ONE_PER_1500_MS);
    words.extend(["BLOCK", "0"]);
    words
}

/// A waiter blocked on a node that then gives its slot away: while the slot migrates and its
/// key has gone, its turn comes and it waits on, as BLPOP does; once the slot is the other
/// node's, it gets the redirect the server itself gives for its key, `MOVED slot endpoint`;
/// the old node writes nothing, and every node serves on. (Finding the new owner from the
/// waiters' timer took Valkey 8.0 to 9.0.0 down, through CLUSTER SLOTS.)
fn a_waiter_whose_slot_moves_away_is_redirected_and_writes_nothing(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    let source = cluster.primary_for("{waiting}");
    let target = other_primary(&cluster, source);
    let key = "{waiting}:k".to_owned();
    let mut source_con = connect(source);
    assert_eq!(
        call(&mut source_con, "CL.THROTTLE", &key, &ONE_PER_1500_MS)[0],
        0
    );
    let turn = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let waiter = Waiter::parked(
        source,
        &mut source_con,
        1,
        "CL.THROTTLE",
        &waiting_call(&key),
    );
    let slot = migrate_keys(source, target, "{waiting}", std::slice::from_ref(&key));
    // Its turn has come, with the slot still this node's and the key gone: it waits on.
    std::thread::sleep(turn.saturating_duration_since(std::time::Instant::now()));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!waiter.handle.is_finished(), "answered mid-migration");
    assert_eq!(waiting_field(&mut source_con, "now"), 1);
    assign_slot(&cluster, slot, target);
    let error = waiter.error();
    assert_eq!(error, format!("MOVED {slot} 127.0.0.1:{}", target.port));
    assert_eq!(
        error,
        error_of(&mut source_con, "EXISTS", &[key.as_bytes()]),
        "the module's redirect and the server's"
    );
    // Nothing written on the old node, which had no other key (a write there would live
    // another 1.5 s).
    let keys: i64 = run(&mut source_con, &["DBSIZE"]);
    assert_eq!(keys, 0);
    assert_eq!(waiting_field(&mut source_con, "left"), 1);
    for node in &cluster.nodes {
        let pong: String = redis::cmd("PING").query(&mut node.connection()).unwrap();
        assert_eq!(pong, "PONG", "node {} serves on", node.port);
    }
}

/// A waiter on the node importing its slot (its calls sent there after `ASKING`, as a client
/// follows an `ASK`) is not sent back to the old owner when its turn comes: it waits while the
/// import lasts, as the server keeps its own blocked clients, and is admitted once the slot is
/// this node's.
fn a_waiter_on_the_node_importing_its_slot_waits_for_the_import_and_is_admitted_there(
    flavor: Flavor,
) {
    let cluster = Cluster::start(flavor);
    let source = cluster.primary_for("{importing}");
    let target = other_primary(&cluster, source);
    let key = "{importing}:k".to_owned();
    let slot = start_migration(source, target, "{importing}");
    let mut target_con = connect(target);
    let (first,): (Vec<i64>,) = redis::pipe()
        .cmd("ASKING")
        .ignore()
        .cmd("CL.THROTTLE")
        .arg(&key)
        .arg(&ONE_PER_1500_MS)
        .query(&mut target_con)
        .unwrap();
    assert_eq!(first[0], 0);
    let turn = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let waiter = Waiter::start_asking(target, "CL.THROTTLE", &waiting_call(&key));
    until_waiting(&mut target_con, 1);
    std::thread::sleep(turn.saturating_duration_since(std::time::Instant::now()));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !waiter.handle.is_finished(),
        "answered while the slot was imported"
    );
    assign_slot(&cluster, slot, target);
    let (reply, _) = waiter.reply();
    assert_eq!(reply[..3], [0, 1, 0]);
    assert_eq!(waiting_field(&mut target_con, "admitted"), 1);
}

/// Under `cluster-preferred-endpoint-type hostname`, a waiter whose slot moves away is sent to
/// the new owner's announced hostname, word for word the redirect the server gives for its key.
fn a_moved_waiter_is_sent_to_the_hostname_the_server_names(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    for node in &cluster.nodes {
        let mut con = node.connection();
        for (name, value) in [
            (
                "cluster-announce-hostname",
                format!("node-{}.test", node.port),
            ),
            ("cluster-preferred-endpoint-type", "hostname".to_owned()),
        ] {
            run::<()>(&mut con, ("CONFIG", &["SET", name, &value]));
        }
    }
    let source = cluster.primary_for("{named}");
    let target = other_primary(&cluster, source);
    let hostname = format!("node-{}.test", target.port);
    let mut source_con = connect(source);
    // The hostname reaches the other nodes with the cluster's gossip.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let slots: redis::Value = run(&mut source_con, ("CLUSTER", "SLOTS"));
        if format!("{slots:?}").contains(&hostname) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{hostname} never announced"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let key = "{named}:k".to_owned();
    assert_eq!(
        call(&mut source_con, "CL.THROTTLE", &key, &ONE_PER_1500_MS)[0],
        0
    );
    let waiter = Waiter::parked(
        source,
        &mut source_con,
        1,
        "CL.THROTTLE",
        &waiting_call(&key),
    );
    let slot = move_slot(
        &cluster,
        source,
        target,
        "{named}",
        std::slice::from_ref(&key),
    );
    let error = waiter.error();
    assert_eq!(
        error,
        error_of(&mut source_con, "EXISTS", &[key.as_bytes()]),
        "the module's redirect and the server's"
    );
    assert_eq!(error, format!("MOVED {slot} {hostname}:{}", target.port));
}
