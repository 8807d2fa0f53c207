//! REFUND, on every limiter form: units given back, never more than an untouched key has,
//! written and propagated only when something moved, never held back by waiters and waking
//! the first of them, and counted; CL.ALL's refund over several keys. Its bad input and
//! events are contract.rs's.

use crate::forms::{Algorithm, Form, FORMS};
use crate::harness::run;
use crate::harness::waiting::{connect, ms_between, until_waiting, waiting_field, Waiter};
use crate::harness::{
    dirty, error_of, info_field, limiter, replicate, snapshot, wait_for_replica, Flavor, Server,
};

both_servers!(
    a_refund_gives_back_units_and_answers_the_key_as_it_is_left,
    a_refund_of_what_was_just_taken_restores_the_key_exactly,
    a_refund_of_nothing_writes_and_propagates_nothing,
    a_refund_admits_the_first_waiter_at_once,
    cl_all_refunds_every_limiter_and_only_looks_at_leases,
    a_refund_on_a_key_fuller_than_its_limit_still_gives_back,
);

/// Three units per minute: for CL.THROTTLE a burst of three refilling one a minute.
fn three_per_minute(form: Form) -> Vec<String> {
    form.algorithm.params(3, "60")
}

fn exists(con: &mut redis::Connection, key: &str) -> bool {
    run(con, ("EXISTS", key))
}

fn a_refund_gives_back_units_and_answers_the_key_as_it_is_left(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (key, params) = (form.name(), three_per_minute(form));
        // GCRA's reset is when the last unit drains, a window's when its units leave.
        let reset_after_two = match form.algorithm {
            Algorithm::Throttle => 120,
            Algorithm::Fixed | Algorithm::Window | Algorithm::Buckets => 60,
        };
        assert_eq!(
            form.call(&mut con, &key, &params, Some("2")),
            [0, 3, 1, -1, reset_after_two],
            "{key}"
        );
        assert_eq!(
            form.refund(&mut con, &key, &params, "1"),
            [0, 3, 2, -1, 60],
            "{key}"
        );
        // No credit: more than was taken leaves an untouched key's answer, and no key.
        assert_eq!(
            form.refund(&mut con, &key, &params, "5"),
            [0, 3, 3, -1, 0],
            "{key}"
        );
        match form.algorithm {
            // A TAT at now is written as the SET it is, expiring at once.
            Algorithm::Throttle => {
                let (_, expire_at) = snapshot(&mut con, key.as_bytes());
                let now_ms: i64 = crate::harness::server_now_ns(&mut con) / 1_000_000;
                assert!(expire_at == -2 || expire_at <= now_ms + 1, "{key}");
            }
            Algorithm::Fixed | Algorithm::Window | Algorithm::Buckets => {
                assert!(!exists(&mut con, &key), "{key} is left");
            }
        }
        // The whole limit fits again, and no more.
        assert_eq!(
            form.call(&mut con, &key, &params, Some("3"))[..3],
            [0, 3, 0],
            "{key}"
        );
        assert_eq!(form.call(&mut con, &key, &params, None)[0], 1, "{key}");
    }
}

fn a_refund_of_what_was_just_taken_restores_the_key_exactly(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (key, params) = (form.name(), three_per_minute(form));
        form.call(&mut con, &key, &params, None);
        let before = snapshot(&mut con, key.as_bytes());
        assert_eq!(
            form.call(&mut con, &key, &params, Some("2"))[..3],
            [0, 3, 0],
            "{key}"
        );
        assert_ne!(snapshot(&mut con, key.as_bytes()), before, "{key}");
        assert_eq!(
            form.refund(&mut con, &key, &params, "2")[..3],
            [0, 3, 2],
            "{key}"
        );
        assert_eq!(snapshot(&mut con, key.as_bytes()), before, "{key}");
    }
}

fn a_refund_of_nothing_writes_and_propagates_nothing(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    wait_for_replica(&mut con);
    for form in FORMS {
        let (key, params) = (form.name(), three_per_minute(form));
        let before = (
            dirty(&mut con),
            info_field(&mut con, "replication", "master_repl_offset"),
        );
        let unchanged = |con: &mut redis::Connection| {
            (
                dirty(con),
                info_field(con, "replication", "master_repl_offset"),
            )
        };
        // No key: answered as a peek at it.
        assert_eq!(
            form.refund(&mut con, &key, &params, "2"),
            [0, 3, 3, -1, 0],
            "{key}"
        );
        assert!(!exists(&mut con, &key), "{key}");
        assert_eq!(unchanged(&mut con), before, "{key}");
        // A quantity of 0 is a peek, with or without REFUND.
        form.call(&mut con, &key, &params, None);
        let state = snapshot(&mut con, key.as_bytes());
        let before = unchanged(&mut con);
        let peek = form.call(&mut con, &key, &params, Some("0"));
        assert_eq!(form.refund(&mut con, &key, &params, "0"), peek, "{key}");
        assert_eq!(snapshot(&mut con, key.as_bytes()), state, "{key}");
        assert_eq!(unchanged(&mut con), before, "{key}");
    }
    let counted = crate::harness::stats_line(&mut con, "cl_fixed");
    assert_eq!(
        counted, "calls=4,allowed=1,denied=0,peeks=2,refunds=1,errors=0",
        "{counted}"
    );
}

fn a_refund_admits_the_first_waiter_at_once(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    for (index, form) in FORMS.into_iter().enumerate() {
        let (key, params) = (form.name(), form.algorithm.params(1, "60"));
        assert_eq!(form.call(&mut con, &key, &params, None)[0], 0, "{key}");
        // A minute's period: only the refund can admit these within their 10 s.
        let args = form.waiting_args(&key, &params, None, "10000");
        let first = Waiter::parked(&server, &mut con, 1, form.command(), &args);
        let second = Waiter::parked(&server, &mut con, 2, form.command(), &args);
        // The refund goes ahead of the waiters: it takes nothing of theirs.
        let refunded = std::time::Instant::now();
        assert_eq!(
            form.refund(&mut con, &key, &params, "1"),
            [0, 1, 1, -1, 0],
            "{key}"
        );
        let (reply, at) = first.reply();
        assert_eq!(reply[..3], [0, 1, 0], "{key}");
        assert!(ms_between(refunded, at) < 5_000, "{key}");
        until_waiting(&mut con, 1);
        // The unit is the first waiter's now; the second waits for the next refund.
        assert_eq!(form.call(&mut con, &key, &params, None)[0], 1, "{key}");
        form.refund(&mut con, &key, &params, "1");
        assert_eq!(second.reply().0[..3], [0, 1, 0], "{key}");
        assert_eq!(
            waiting_field(&mut con, "admitted"),
            2 * (index as i64 + 1),
            "{key}"
        );
    }
}

fn cl_all_refunds_every_limiter_and_only_looks_at_leases(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let call = |con: &mut redis::Connection, options: &[&str]| -> Vec<Vec<i64>> {
        let mut cmd = redis::cmd("CL.ALL");
        cmd.arg(&["4", "g", "f", "w", "pool"])
            .arg(&["THROTTLE", "4", "1", "60", "FIXED", "5", "60"])
            .arg(&["WINDOW", "5", "60", "LEASE", "2", "60"])
            .arg(&["HOLDER", "job:1", "DETAIL"])
            .arg(options);
        cmd.query(con).unwrap()
    };
    let keys = ["g", "f", "w"];
    let before: Vec<_> = keys
        .iter()
        .map(|k| snapshot(&mut con, k.as_bytes()))
        .collect();
    assert_eq!(
        call(&mut con, &["QUANTITY", "2"]),
        [
            [0, 5, 3, -1, 120],
            [0, 5, 3, -1, 60],
            [0, 5, 3, -1, 60],
            [0, 2, 1, -1, 60]
        ]
    );
    // The same call with REFUND undoes the rates; the lease is CL.RELEASE's to give back,
    // so the refund only looks at it.
    assert_eq!(
        call(&mut con, &["QUANTITY", "2", "REFUND"]),
        [
            [0, 5, 5, -1, 0],
            [0, 5, 5, -1, 0],
            [0, 5, 5, -1, 0],
            [0, 2, 1, -1, 60]
        ]
    );
    // The windows' keys are gone, as before; the TAT is at now, and expires at once.
    for (key, before) in keys.iter().zip(&before) {
        let after = snapshot(&mut con, key.as_bytes());
        let now_ms = crate::harness::server_now_ns(&mut con) / 1_000_000;
        assert!(
            after == *before || (*key == "g" && after.1 <= now_ms + 1),
            "{key}: {after:?}"
        );
    }
    let holders: Vec<String> = run(&mut con, ("CL.HOLDERS", "pool"));
    assert_eq!(holders[0], "job:1");
    // A refund needs no holder, and without DETAIL answers for the limiter with the fewest
    // units left.
    let reply = limiter(
        &mut con,
        "CL.ALL",
        &[
            "2", "f", "pool", "FIXED", "5", "60", "LEASE", "2", "60", "REFUND",
        ],
    );
    assert_eq!(reply, [0, 2, 1, -1, 60]);
    let error = error_of(
        &mut con,
        "CL.ALL",
        &[b"1", b"f", b"FIXED", b"5", b"60", b"REFUND", b"BLOCK", b"0"],
    );
    assert!(error.contains("not compatible"), "{error}");
    assert_eq!(
        crate::harness::stats_line(&mut con, "cl_all"),
        "calls=4,allowed=1,denied=0,peeks=0,refunds=2,errors=1"
    );
}

/// A key can hold more than the call's own limit allows (a limit lowered live, the INCR
/// recipe, a full pool of leases): a refund asks for nothing it could be denied, so it is
/// admitted there, and in CL.ALL no such key stops the others giving back.
fn a_refund_on_a_key_fuller_than_its_limit_still_gives_back(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let count = |con: &mut redis::Connection| -> String { run(con, ("GET", "f")) };
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "10", "60", "10"])[..3],
        [0, 10, 0]
    );
    assert_eq!(
        limiter(&mut con, "CL.LEASE", &["pool", "1", "60", "job:1"])[0],
        0
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60", "2", "REFUND"]),
        [0, 5, 0, -1, 60]
    );
    assert_eq!(count(&mut con), "8");
    let detail: Vec<Vec<i64>> = run(
        &mut con,
        (
            "CL.ALL",
            &["2", "f", "pool", "FIXED", "5", "60", "LEASE", "1", "60"],
            &["QUANTITY", "2", "REFUND", "DETAIL"],
        ),
    );
    assert_eq!(detail, [[0, 5, 0, -1, 60], [0, 1, 0, -1, 60]]);
    assert_eq!(count(&mut con), "6");
}
