//! DRYRUN, on every limiter form and CL.LEASE: the answer the call would get, behind the same
//! waiters, with nothing written, propagated, announced or woken; refused with BLOCK.

use crate::forms::{Form, FORMS};
use crate::harness::events::{notifying, Events};
use crate::harness::run;
use crate::harness::waiting::{connect, Waiter};
use crate::harness::{
    dirty, info_field, limiter, replicate, snapshot, stats_line, wait_for_replica, Flavor, Server,
};

both_servers!(
    a_dry_run_answers_what_the_call_would_and_changes_nothing,
    a_dry_run_behind_waiters_answers_as_the_call_would,
    a_dry_run_of_a_refund_answers_what_it_would_leave,
    cl_lease_and_cl_all_dry_runs_answer_as_their_calls,
    a_dry_run_on_a_missing_key_fires_no_keymiss,
);

fn dry_run(
    con: &mut redis::Connection,
    form: Form,
    key: &str,
    params: &[String],
    quantity: &str,
) -> Vec<i64> {
    form.call_with(con, key, params, quantity, &["DRYRUN"])
}

/// What a dry run must leave alone: the key, the changes counter, the replication offset.
fn untouched(con: &mut redis::Connection, key: &str) -> impl PartialEq + std::fmt::Debug {
    (
        snapshot(con, key.as_bytes()),
        dirty(con),
        info_field(con, "replication", "master_repl_offset"),
    )
}

fn a_dry_run_answers_what_the_call_would_and_changes_nothing(flavor: Flavor) {
    let primary = notifying(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut events = Events::subscribe(&primary);
    let mut con = primary.connection();
    wait_for_replica(&mut con);
    // No pings to the replica while the offset is watched.
    run::<()>(
        &mut con,
        ("CONFIG", &["SET", "repl-ping-replica-period", "3600"]),
    );
    for form in FORMS {
        let (key, params) = (form.name(), form.algorithm.params(3, "60"));
        // Admitted, admitted, denied (one left, two asked), and never (more than the limit).
        for quantity in ["1", "1", "2", "4", "0", "1"] {
            let before = untouched(&mut con, &key);
            let would = dry_run(&mut con, form, &key, &params, quantity);
            assert_eq!(untouched(&mut con, &key), before, "{key} DRYRUN {quantity}");
            let got = form.call(&mut con, &key, &params, Some(quantity));
            assert_eq!(would, got, "{key} {quantity}");
        }
    }
    run::<()>(&mut con, ("SET", &["marker", "1"]));
    // Only the real calls fired events: three admissions per form, and nothing more.
    let fired = events.until_marker("marker");
    for form in FORMS {
        let key = form.name();
        let count = fired.iter().filter(|(_, on)| *on == key).count();
        let expected = match form.algorithm {
            // incrby and expire when the window opens, incrby after; cl.window and expire
            // when the first cell opens, cl.window after.
            crate::forms::Algorithm::Fixed | crate::forms::Algorithm::Buckets => 4,
            // set and expire, or cl.window and expire, each time.
            _ => 6,
        };
        assert_eq!(count, expected, "{key}: {fired:?}");
    }
    assert_eq!(
        stats_line(&mut con, "cl_fixed"),
        "calls=12,allowed=3,denied=2,peeks=7,refunds=0,errors=0"
    );
}

fn a_dry_run_behind_waiters_answers_as_the_call_would(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    for form in FORMS {
        let (key, params) = (form.name(), form.algorithm.params(2, "60"));
        assert_eq!(form.call(&mut con, &key, &params, None)[0], 0, "{key}");
        // A waiter for two units: one is free, and it is the waiter's to wait for.
        let args = form.waiting_args(&key, &params, Some("2"), "10000");
        let waiter = Waiter::parked(&server, &mut con, 1, form.command(), &args);
        // A look sees the free unit; a dry run, as the call it stands for, does not.
        assert_eq!(form.call(&mut con, &key, &params, Some("0"))[2], 1, "{key}");
        let would = dry_run(&mut con, form, &key, &params, "1");
        let got = form.call(&mut con, &key, &params, Some("1"));
        assert_eq!(would[..3], [1, 2, 0], "{key}");
        assert_eq!(would[..3], got[..3], "{key}");
        run::<()>(
            &mut con,
            ("CLIENT", &["KILL", "ID", &waiter.id.to_string()]),
        );
        assert!(waiter.handle.join().unwrap().0.is_err(), "{key}");
        crate::harness::waiting::until_waiting(&mut con, 0);
    }
}

fn a_dry_run_of_a_refund_answers_what_it_would_leave(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (key, params) = (form.name(), form.algorithm.params(3, "60"));
        form.call(&mut con, &key, &params, Some("3"));
        let before = untouched(&mut con, &key);
        let would: Vec<i64> = form
            .cmd(&[key.as_bytes()], &params, Some("2"), &["REFUND", "DRYRUN"])
            .query(&mut con)
            .unwrap();
        assert_eq!(untouched(&mut con, &key), before, "{key}");
        let would = form.as_exact(would, &params);
        assert_eq!(would, form.refund(&mut con, &key, &params, "2"), "{key}");
    }
}

fn cl_lease_and_cl_all_dry_runs_answer_as_their_calls(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let lease = |con: &mut redis::Connection, args: &[&str]| limiter(con, "CL.LEASE", args);
    assert_eq!(
        lease(&mut con, &["pool", "1", "60", "a", "DRYRUN"]),
        [0, 1, 0, -1, 60]
    );
    assert_eq!(snapshot(&mut con, b"pool"), (None, -2));
    assert_eq!(lease(&mut con, &["pool", "1", "60", "a"])[0], 0);
    let before = untouched(&mut con, "pool");
    // Another holder would be denied; the holder's renewal would be admitted.
    assert_eq!(
        lease(&mut con, &["pool", "1", "60", "b", "DRYRUN"])[..2],
        [1, 1]
    );
    assert_eq!(
        lease(&mut con, &["pool", "1", "60", "a", "DRYRUN", "MS"])[..3],
        [0, 1, 0]
    );
    assert_eq!(untouched(&mut con, "pool"), before);

    let all = |con: &mut redis::Connection, extra: &[&str]| -> Vec<Vec<i64>> {
        run(
            con,
            (
                "CL.ALL",
                &["2", "rate", "pool", "FIXED", "2", "60", "LEASE", "1", "60"],
                &["HOLDER", "a", "DETAIL"],
                extra,
            ),
        )
    };
    for _ in 0..3 {
        let before = (untouched(&mut con, "rate"), untouched(&mut con, "pool"));
        let would = all(&mut con, &["DRYRUN"]);
        assert_eq!(
            (untouched(&mut con, "rate"), untouched(&mut con, "pool")),
            before
        );
        assert_eq!(would, all(&mut con, &[]));
    }
}

/// A dry run opens its key as the call does: a missing key is no keyspace miss.
fn a_dry_run_on_a_missing_key_fires_no_keymiss(flavor: Flavor) {
    let server = Server::start_with(
        flavor,
        crate::harness::server::Options {
            args: vec!["--notify-keyspace-events".into(), "KEAm".into()],
            ..Default::default()
        },
    );
    let mut events = Events::subscribe(&server);
    let mut con = server.connection();
    for form in FORMS {
        let (key, params) = (form.name(), form.algorithm.params(3, "60"));
        assert_eq!(dry_run(&mut con, form, &key, &params, "1")[0], 0, "{key}");
    }
    assert_eq!(
        limiter(&mut con, "CL.LEASE", &["pool", "1", "60", "a", "DRYRUN"])[0],
        0
    );
    run::<()>(&mut con, ("SET", &["marker", "1"]));
    assert_eq!(events.until_marker("marker"), []);
    assert_eq!(info_field(&mut con, "stats", "keyspace_misses"), "0");
}
