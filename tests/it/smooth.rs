//! What is particular to CL.SMOOTH, Guava's RateLimiter in the server: decisions held to
//! Guava's own, call for call, under a controlled clock (Valkey 9); replies, BLOCK's held
//! replies, DRYRUN, transactions, replicas, the AOF, events and bad input on every server.

use std::time::{Duration, Instant};

use crate::harness::events::{notifying, Events};
use crate::harness::guava;
use crate::harness::waiting::{connect, Waiter};
use crate::harness::{
    aof_options, dump, error_of, info_field, keyspace, limiter, replicate, run, server_now_ns,
    stats_field, wait_for_replica, Flavor, Rng, Server, ServerKind,
};

both_servers!(
    a_new_key_is_guavas_create_idled_full,
    a_held_reply_goes_at_its_instant_never_before,
    a_call_that_cannot_be_served_in_time_is_denied_at_once,
    a_client_gone_while_held_keeps_its_reservation,
    block_is_ignored_in_a_transaction_a_script_and_on_a_replica,
    a_dry_run_answers_as_the_call_would_and_reserves_nothing,
    a_replica_and_an_aof_restart_hold_identical_state,
    writes_fire_set_and_expire,
    bad_input_gets_errors_naming_it_and_changes_nothing,
    decisions_are_made_at_the_servers_clock_precision,
    an_acl_user_reaches_only_its_keys,
    a_reply_held_for_an_hour_costs_the_server_nothing_meanwhile,
);

/// A key's state as CL.SMOOTH stores it: `nextFreeTicketMicros`, then the bits of
/// `storedPermits`, of the `maxPermits` and of the cool-down it was kept at.
fn state(con: &mut redis::Connection, key: &str) -> Option<(i64, u64, u64, u64)> {
    let value: Option<Vec<u8>> = run(con, ("GET", key));
    value.map(|value| {
        assert_eq!(value.len(), 32, "{key}: {value:?}");
        let word = |at: usize| u64::from_le_bytes(value[at..at + 8].try_into().unwrap());
        (word(0) as i64, word(8), word(16), word(24))
    })
}

fn smooth(con: &mut redis::Connection, args: &[&str]) -> Vec<i64> {
    limiter(con, "CL.SMOOTH", args)
}

/// Guava's `RateLimiter.create(2)`, idled: two stored permits go at once, and a third, which
/// pushes the next back by its 500 ms; then calls wait for it.
fn a_new_key_is_guavas_create_idled_full(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(smooth(&mut con, &["api", "2", "1"]), [0, 3, 2, -1, 1]);
    assert_eq!(smooth(&mut con, &["api", "2", "1"]), [0, 3, 1, -1, 1]);
    assert_eq!(smooth(&mut con, &["api", "2", "1"]), [0, 3, 0, -1, 2]);
    assert_eq!(smooth(&mut con, &["api", "2", "1"]), [1, 3, 0, 1, 2]);
    let in_ms = smooth(&mut con, &["api", "2", "1000", "MS"]);
    assert_eq!(in_ms[..3], [1, 3, 0]);
    assert!((400..=500).contains(&in_ms[3]), "{in_ms:?}");
    // A warm-up's first permit goes, dear: the next waits a cold interval's worth.
    let cold = smooth(&mut con, &["warm", "2", "1", "WARMUP", "4"]);
    assert_eq!(cold[..4], [0, 1, 0, -1]);
    let second = smooth(&mut con, &["warm", "2", "1000", "MS", "WARMUP", "4000"]);
    assert_eq!(second[..3], [1, 1, 0]);
    assert!((1_300..=1_375).contains(&second[3]), "{second:?}");
    // A quantity of 0 looks, and writes nothing.
    let before = dump(&mut con, b"api");
    assert_eq!(
        smooth(&mut con, &["api", "2", "1", "0"])[..4],
        [0, 3, 0, -1]
    );
    assert_eq!(dump(&mut con, b"api"), before);
    assert_eq!(smooth(&mut con, &["new", "2", "1", "0"]), [0, 3, 3, -1, 0]);
    assert_eq!(run::<i64>(&mut con, ("EXISTS", "new")), 0);
}

/// Four per second, bursts of a second: five at once take the four stored permits and one
/// that pushes the next free instant 250 ms on.
fn drained(con: &mut redis::Connection, key: &str) -> i64 {
    assert_eq!(smooth(con, &[key, "4", "1", "5"])[0], 0);
    state(con, key).expect("written").0
}

/// Polls until the client `id` has run CL.SMOOTH, and says whether it is held (blocked).
fn held(con: &mut redis::Connection, id: i64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let line: String = run(con, ("CLIENT", "LIST", "ID", id));
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name))
                .unwrap_or_default()
                .to_owned()
        };
        if field("cmd=") == "cl.smooth" {
            return field("flags=").contains('b');
        }
        assert!(Instant::now() < deadline, "client {id} never ran CL.SMOOTH");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn a_held_reply_goes_at_its_instant_never_before(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let next_free_us = drained(&mut con, "held");
    let mut waiter_con = connect(&server);
    let id: i64 = run(&mut waiter_con, ("CLIENT", "ID"));
    let waiter = std::thread::spawn(move || {
        let reply: Vec<i64> = run(
            &mut waiter_con,
            ("CL.SMOOTH", "held", "4", "1", "BLOCK", "1000"),
        );
        (reply, server_now_ns(&mut waiter_con) / 1000)
    });
    assert!(held(&mut con, id));
    // Reserved at once: the next free instant moved on by the call's 250 ms already.
    assert_eq!(
        state(&mut con, "held").expect("written").0,
        next_free_us + 250_000
    );
    // CLIENT UNBLOCK cannot end a hold.
    assert_eq!(run::<i64>(&mut con, ("CLIENT", "UNBLOCK", id)), 0);
    let (reply, answered_at_us) = waiter.join().unwrap();
    assert_eq!(reply[..4], [0, 5, 0, -1]);
    assert!(
        answered_at_us >= next_free_us,
        "answered before its instant"
    );
    assert!(
        answered_at_us - next_free_us < 200_000,
        "answered {} µs after its instant",
        answered_at_us - next_free_us
    );
    assert_eq!(stats_field(&mut con, "cl_smooth", "allowed"), 2);
}

fn a_call_that_cannot_be_served_in_time_is_denied_at_once(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    drained(&mut con, "late");
    let before = dump(&mut con, b"late");
    let started = Instant::now();
    let reply = smooth(&mut con, &["late", "4", "1000", "MS", "BLOCK", "100"]);
    assert!(started.elapsed() < Duration::from_millis(100));
    assert_eq!(reply[..3], [1, 5, 0]);
    // Admitted once the next free instant is within the timeout: in 150 ms or less.
    assert!((1..=150).contains(&reply[3]), "{reply:?}");
    assert_eq!(dump(&mut con, b"late"), before);
}

fn a_client_gone_while_held_keeps_its_reservation(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let next_free_us = drained(&mut con, "gone");
    let waiter = Waiter::start(&server, "CL.SMOOTH", &["gone", "4", "1", "2", "BLOCK", "0"]);
    assert!(held(&mut con, waiter.id));
    assert_eq!(run::<i64>(&mut con, ("CLIENT", "KILL", "ID", waiter.id)), 1);
    assert!(waiter.handle.join().unwrap().0.is_err());
    // Its hold ended with it, long before the instant its reply was for.
    assert_eq!(info_field(&mut con, "clients", "blocked_clients"), "0");
    // Two permits reserved from its instant on: the next caller pays for them.
    assert_eq!(
        state(&mut con, "gone").expect("written").0,
        next_free_us + 500_000
    );
    // The server goes on past the instant the reply was for.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(run::<String>(&mut con, &["PING"]), "PONG");
    assert_eq!(smooth(&mut con, &["gone", "4", "1"])[0], 1);
}

fn block_is_ignored_in_a_transaction_a_script_and_on_a_replica(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    drained(&mut con, "tx");
    let before = dump(&mut con, b"tx");
    let replies: Vec<Vec<i64>> = redis::pipe()
        .atomic()
        .cmd("CL.SMOOTH")
        .arg(&["tx", "4", "1", "BLOCK", "1000"])
        .query(&mut con)
        .unwrap();
    assert_eq!(replies[0][..3], [1, 5, 0]);
    assert_eq!(dump(&mut con, b"tx"), before);
    // And in a script.
    let reply: Vec<i64> = run(
        &mut con,
        (
            "EVAL",
            "return redis.call('CL.SMOOTH', KEYS[1], '4', '1', 'BLOCK', '1000')",
            1,
            "tx",
        ),
    );
    assert_eq!(reply[..3], [1, 5, 0]);
    // And on a writable replica, whose calls could never be held: a key 24 s deep, so that
    // it is still denied once the replica has synced.
    smooth(&mut con, &["deep", "4", "1", "100"]);
    let replica = Server::start(flavor);
    replicate(&replica, &server);
    wait_for_replica(&mut con);
    let mut on_replica = replica.connection();
    run::<()>(
        &mut on_replica,
        ("CONFIG", "SET", "replica-read-only", "no"),
    );
    let started = Instant::now();
    let reply = smooth(&mut on_replica, &["deep", "4", "1", "BLOCK", "1000"]);
    assert!(started.elapsed() < Duration::from_millis(200));
    assert_eq!(reply[..3], [1, 5, 0]);
}

fn a_dry_run_answers_as_the_call_would_and_reserves_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        smooth(&mut con, &["dry", "4", "1", "5", "DRYRUN"]),
        [0, 5, 0, -1, 2]
    );
    assert_eq!(run::<i64>(&mut con, ("EXISTS", "dry")), 0);
    drained(&mut con, "dry");
    let before = dump(&mut con, b"dry");
    let dry = smooth(&mut con, &["dry", "4", "1", "DRYRUN"]);
    assert_eq!(dry[..3], [1, 5, 0]);
    assert_eq!(dump(&mut con, b"dry"), before);
    assert_eq!(stats_field(&mut con, "cl_smooth", "peeks"), 2);
}

fn a_replica_and_an_aof_restart_hold_identical_state(flavor: Flavor) {
    let primary = Server::start_with(flavor, aof_options(None));
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let mut rng = Rng::new(29);
    for i in 0..300 {
        let key = format!("s:{}", i % 20);
        let permits = (1 + rng.below(5)).to_string();
        let quantity = rng.below(4).to_string();
        let mut args = vec![key.as_str(), &permits, "10", &quantity];
        if i % 20 >= 10 {
            args.extend(["WARMUP", "20"]);
        }
        smooth(&mut con, &args);
    }
    wait_for_replica(&mut con);
    let on_primary = keyspace(&mut con);
    assert_eq!(on_primary.len(), 20);
    assert_eq!(keyspace(&mut replica.connection()), on_primary);
    let dir = primary.shutdown();
    let restarted = Server::start_with(flavor, aof_options(Some(dir)));
    assert_eq!(keyspace(&mut restarted.connection()), on_primary);
}

fn writes_fire_set_and_expire(flavor: Flavor) {
    let server = notifying(flavor);
    let mut events = Events::subscribe(&server);
    let mut con = server.connection();
    smooth(&mut con, &["ev", "1", "60"]);
    // Denied, a peek, a dry run: nothing.
    smooth(&mut con, &["ev", "1", "60"]);
    smooth(&mut con, &["ev", "1", "60", "0"]);
    smooth(&mut con, &["ev", "1", "60", "DRYRUN"]);
    run::<()>(&mut con, ("SET", "marker", "1"));
    let fired = vec![
        ("set".to_owned(), "ev".to_owned()),
        ("expire".into(), "ev".into()),
    ];
    assert_eq!(events.until_marker("marker"), fired);
}

fn bad_input_gets_errors_naming_it_and_changes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    smooth(&mut con, &["bad", "1", "1"]);
    let before = dump(&mut con, b"bad");
    let cases: &[(&[&str], &str)] = &[
        (&["0", "1"], "ERR permits must be >= 1"),
        (&["1", "0"], "ERR period must be >= 1"),
        (&["x", "1"], "ERR permits is not an integer or out of range"),
        (&["1", "1", "BURST", "0"], "ERR BURST must be >= 1"),
        (&["1", "1", "WARMUP", "0"], "ERR WARMUP must be >= 1"),
        (&["1", "1", "WARMUP", "1", "COLD", "0"], "ERR COLD must be >= 1"),
        (&["1", "1", "-1"], "ERR quantity must be >= 0"),
        (&["1", "1", "2147483648"], "ERR quantity must be <= 2147483647"),
        (&["1", "1", "MS", "MS"], "ERR syntax error: argument 5 of 'cl.smooth' is not one of its options, repeats one, or lacks its value"),
        (&["1", "1", "BURST"], "ERR syntax error: argument 4 of 'cl.smooth' is not one of its options, repeats one, or lacks its value"),
        (&["1", "1", "1", "LATER"], "ERR syntax error: argument 5 of 'cl.smooth' is not one of its options, repeats one, or lacks its value"),
        (&["1", "1", "BURST", "1", "WARMUP", "1"], "ERR BURST and WARMUP options at the same time are not compatible"),
        (&["1", "1", "COLD", "2"], "ERR COLD is given, but no WARMUP for it to shape"),
        (&["1", "1", "REFUND"], "ERR cl.smooth does not refund: its reservations are instants, not units; REFUND is not one of its arguments"),
        (&["1", "1", "DRYRUN", "BLOCK", "10"], "ERR DRYRUN and BLOCK options at the same time are not compatible: a call with DRYRUN never waits"),
        (&["1", "1", "BLOCK", "-1"], "ERR timeout must be >= 0"),
        (&["1", "1", "WARMUP", "5"], "ERR the key holds a bursty smooth limiter, not one with WARMUP"),
        (&["1"], "ERR wrong number of arguments for 'cl.smooth' command"),
    ];
    for (args, expected) in cases {
        let mut words: Vec<&[u8]> = vec![b"bad"];
        words.extend(args.iter().map(|word| word.as_bytes()));
        assert_eq!(
            error_of(&mut con, "CL.SMOOTH", &words),
            *expected,
            "{args:?}"
        );
    }
    assert_eq!(dump(&mut con, b"bad"), before);
    assert_eq!(
        error_of(&mut con, "CL.ALL", &[b"1", b"bad", b"SMOOTH", b"1", b"1"]),
        "ERR limiter 1 is SMOOTH, which CL.ALL does not take: call CL.SMOOTH on its key alone"
    );
    // Another limiter's state, a list: refused, and left as they were.
    run::<()>(&mut con, ("SET", "tat", "1795910400000000000"));
    run::<()>(&mut con, ("RPUSH", "list", "x"));
    assert_eq!(
        error_of(&mut con, "CL.SMOOTH", &[b"tat", b"1", b"1"]),
        "ERR the value at this key is not a valid state for this command"
    );
    assert!(error_of(&mut con, "CL.SMOOTH", &[b"list", b"1", b"1"]).starts_with("WRONGTYPE"));
    assert_eq!(
        run::<String>(&mut con, ("GET", "tat")),
        "1795910400000000000"
    );
    // Every error but the arity's, which the server answers itself.
    assert_eq!(stats_field(&mut con, "cl_smooth", "errors"), 19);
}

/// The server's clock is the limiter's: to the microsecond where the module API reads one
/// (Redis 7.2+, Valkey), to the millisecond on Redis 7.0.
fn decisions_are_made_at_the_servers_clock_precision(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let micros = ServerKind::of(&mut con).module_clock_in_microseconds();
    let mut fractions = 0;
    for i in 0..20 {
        let key = format!("p:{i}");
        let before = server_now_ns(&mut con) / 1000;
        // One permit of one stored: the next free instant is the call's own.
        smooth(&mut con, &[&key, "1", "1"]);
        let after = server_now_ns(&mut con) / 1000;
        let next_free = state(&mut con, &key).expect("written").0;
        assert!(
            (before / 1000 * 1000..=after).contains(&next_free),
            "{before} {next_free} {after}"
        );
        fractions += i64::from(next_free % 1000 != 0);
    }
    if micros {
        assert!(fractions > 0, "every instant a whole millisecond");
    } else {
        assert_eq!(fractions, 0, "a millisecond clock read to the microsecond");
    }
}

/// One key of the trace: a shape, with the rates its calls switch between.
struct Limiter {
    key: String,
    warm: bool,
    ms: bool,
    period: i64,
    span: i64,
    cold: i64,
    permits: [i64; 3],
}

impl Limiter {
    fn random(rng: &mut Rng, index: usize) -> Limiter {
        let ms = rng.below(2) == 0;
        let (period, span) = if ms {
            (100 + rng.below(2_900) as i64, 100 + rng.below(4_900) as i64)
        } else {
            (1 + rng.below(3) as i64, 1 + rng.below(4) as i64)
        };
        let base = 1 + rng.below(20) as i64;
        Limiter {
            key: format!("g:{index}"),
            warm: rng.below(2) == 0,
            ms,
            period,
            span,
            cold: 1 + rng.below(5) as i64,
            permits: [base, base * 2, base + 1 + rng.below(7) as i64],
        }
    }

    /// The call's arguments after the key; `timeout_us` as the oracle takes it (0 for none,
    /// −1 for as long as it takes).
    fn args(&self, permits: i64, quantity: i64, timeout_us: i64) -> Vec<String> {
        let mut args = vec![
            permits.to_string(),
            self.period.to_string(),
            quantity.to_string(),
        ];
        if self.ms {
            args.push("MS".into());
        }
        if self.warm {
            args.extend([
                "WARMUP".into(),
                self.span.to_string(),
                "COLD".into(),
                self.cold.to_string(),
            ]);
        } else {
            args.extend(["BURST".into(), self.span.to_string()]);
        }
        match timeout_us {
            0 => {}
            -1 => args.extend(["BLOCK".into(), "0".into()]),
            us => args.extend(["BLOCK".into(), (us / 1000).to_string()]),
        }
        args
    }

    fn trace_line(
        &self,
        now_us: i64,
        permits: i64,
        quantity: i64,
        timeout_us: i64,
        fresh: bool,
    ) -> String {
        format!(
            "call {} {now_us} {} {permits} {} {} {} {} {quantity} {timeout_us} {}\n",
            self.key,
            if self.warm { "warmup" } else { "bursty" },
            self.period,
            if self.ms { "ms" } else { "s" },
            self.span,
            self.cold,
            u8::from(fresh)
        )
    }
}

/// What the server did with one call of the trace.
struct Done {
    /// The reply, unless it is held.
    reply: Option<Vec<i64>>,
    state: (i64, u64, u64, u64),
    unit_us: i64,
}

/// Thousands of random calls on twelve keys, bursty and warming up, in seconds and in
/// milliseconds, at rates that change, some waiting (BLOCK), against Guava's own RateLimiter
/// replaying the same calls at the same microseconds: the same admissions, the same waits,
/// the same state to the bit, and a key that expires only once Guava's limiter is idle.
#[test]
fn decisions_are_guavas_under_a_controlled_clock() {
    const BASE_MS: i64 = 1_900_000_000_000;
    const CALLS: usize = 3_000;
    let server = Server::with_exact_fake_clock(BASE_MS);
    let mut con = server.connection();
    let mut rng = Rng::new(2029);
    let limiters: Vec<Limiter> = (0..12).map(|i| Limiter::random(&mut rng, i)).collect();
    let mut now_us = BASE_MS * 1000;
    let mut trace = String::new();
    let mut done = Vec::new();
    let mut held_clients = Vec::new();
    for _ in 0..CALLS {
        let limiter = &limiters[rng.below(limiters.len() as u64) as usize];
        now_us += match rng.below(8) {
            0 | 1 => 0,
            2 | 3 => rng.below(1_000) as i64,
            4 | 5 => rng.below(500_000) as i64,
            6 => rng.below(2_000_000) as i64,
            _ => rng.below(6_000_000) as i64,
        };
        let permits = limiter.permits[match rng.below(10) {
            0 => 1,
            1 => 2,
            _ => 0,
        }];
        let quantity = if rng.below(5) == 0 {
            1 + rng.below(12) as i64
        } else {
            1
        };
        let timeout_us = match rng.below(20) {
            0..=2 => (1 + rng.below(1_500) as i64) * 1000,
            3 if quantity == 1 => -1,
            _ => 0,
        };
        server.set_clock_us(now_us);
        let fresh = run::<i64>(&mut con, ("EXISTS", &limiter.key)) == 0;
        trace.push_str(&limiter.trace_line(now_us, permits, quantity, timeout_us, fresh));
        let mut cmd = redis::cmd("CL.SMOOTH");
        cmd.arg(&limiter.key)
            .arg(limiter.args(permits, quantity, timeout_us));
        let reply = if timeout_us == 0 {
            Some(cmd.query::<Vec<i64>>(&mut con).unwrap())
        } else {
            // On its own connection: a held reply comes only once its instant is reached.
            let mut waiting = server.connection();
            let id: i64 = run(&mut waiting, ("CLIENT", "ID"));
            waiting
                .send_packed_command(&cmd.get_packed_command())
                .unwrap();
            if held(&mut con, id) {
                held_clients.push(waiting);
                None
            } else {
                Some(redis::from_redis_value(waiting.recv_response().unwrap()).unwrap())
            }
        };
        done.push(Done {
            reply,
            state: state(&mut con, &limiter.key).expect("every call leaves a key"),
            unit_us: if limiter.ms { 1_000 } else { 1_000_000 },
        });
    }
    let decided = guava::decide(&trace);
    assert_eq!(decided.len(), CALLS);
    let lines: Vec<&str> = trace.lines().collect();
    let (mut denied, mut waited, mut fresh) = (0, 0, 0);
    for (i, (guava, ours)) in decided.iter().zip(&done).enumerate() {
        let call = lines[i];
        assert!(
            !guava.early,
            "call {i} `{call}`: the key expired before Guava's limiter was idle"
        );
        fresh += usize::from(call.ends_with(" 1"));
        match &ours.reply {
            Some(reply) => {
                assert_eq!(
                    reply[0] == 0,
                    guava.admitted,
                    "call {i} `{call}`: {reply:?} {guava:?}"
                );
                if guava.admitted {
                    assert_eq!(guava.wait_us, 0, "call {i} `{call}`: answered at once");
                } else {
                    denied += 1;
                    let rounded = (guava.wait_us + ours.unit_us - 1) / ours.unit_us;
                    assert_eq!(reply[3], rounded, "call {i} `{call}`: {guava:?}");
                }
            }
            None => {
                waited += 1;
                assert!(
                    guava.admitted && guava.wait_us > 0,
                    "call {i} `{call}`: held, {guava:?}"
                );
            }
        }
        let (next_free, stored, max, _) = ours.state;
        assert_eq!(
            (next_free, stored, max),
            (guava.next_free_us, guava.stored_bits, guava.max_bits),
            "call {i} `{call}`: state {guava:?}"
        );
    }
    // The trace went where it should: denials, held replies, expired keys.
    let expired = fresh - limiters.len();
    assert!(
        denied > 100 && waited > 10 && expired > 10,
        "{denied} {waited} {expired}"
    );
    drop(held_clients);
}

/// The key is the first argument, for cluster routing and ACL key patterns: a user reaches its
/// own keys, and a call on any other is refused before it is touched.
fn an_acl_user_reaches_only_its_keys(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut admin = server.connection();
    let keys: Vec<String> = run(
        &mut admin,
        (
            "COMMAND",
            "GETKEYS",
            "CL.SMOOTH",
            "limits:a",
            "1",
            "1",
            "WARMUP",
            "5",
        ),
    );
    assert_eq!(keys, ["limits:a"]);
    run::<()>(
        &mut admin,
        (
            "ACL",
            "SETUSER",
            "smoother",
            "on",
            ">secret",
            "+cl.smooth",
            "~limits:*",
        ),
    );
    let mut user = server.connection();
    run::<()>(&mut user, ("AUTH", "smoother", "secret"));
    assert_eq!(smooth(&mut user, &["limits:a", "1", "1"])[0], 0);
    let refused = error_of(&mut user, "CL.SMOOTH", &[b"other:a", b"1", b"1"]);
    assert!(refused.starts_with("NOPERM"), "{refused}");
    assert_eq!(run::<i64>(&mut admin, ("EXISTS", "other:a")), 0);
}

/// The server keeps a module timer's period in an `int` of milliseconds (of microseconds on
/// Redis 7.0), which an hour overflows; the module sets no timer further than 30 minutes off,
/// and sets it again when it fires early. A reply held for an hour beside others that come
/// and go leaves the server idle.
fn a_reply_held_for_an_hour_costs_the_server_nothing_meanwhile(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // One permit an hour: the first call pays, the next is held for the hour.
    smooth(&mut con, &["hour", "1", "3600"]);
    let far = Waiter::start(&server, "CL.SMOOTH", &["hour", "1", "3600", "BLOCK", "0"]);
    assert!(held(&mut con, far.id));
    // Other held replies fire the module's timers meanwhile.
    drained(&mut con, "near");
    for _ in 0..3 {
        smooth(&mut con, &["near", "4", "1", "BLOCK", "0"]);
    }
    let cpu = |con: &mut redis::Connection| -> f64 {
        ["used_cpu_user", "used_cpu_sys"]
            .iter()
            .map(|field| info_field(con, "cpu", field).parse::<f64>().unwrap())
            .sum()
    };
    let before = cpu(&mut con);
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu(&mut con) - before;
    assert!(
        spent < 0.3,
        "the server spent {spent} s of CPU in a second, idle"
    );
    assert_eq!(run::<i64>(&mut con, ("CLIENT", "KILL", "ID", far.id)), 1);
    assert_eq!(info_field(&mut con, "clients", "blocked_clients"), "0");
}
