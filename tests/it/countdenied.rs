//! CL.FIXED's `COUNTDENIED`: a denied call's units count too, exactly as the INCR recipe of
//! `limits` and rate-limiter-flexible counts them, on real Redis 7.0 and Valkey 9 servers.

use crate::harness::run;
use crate::harness::waiting::{connect, until_waiting, Waiter};
use crate::harness::{dirty, limiter, snapshot, Flavor, Rng, Server};

both_servers!(
    denied_calls_count_as_incr_then_compare_counts_them,
    a_dry_run_or_a_refund_counts_nothing,
    a_call_held_back_by_a_waiter_counts_only_what_it_was_denied,
);

/// limits' own script for its fixed window: INCRBY, and EXPIRE when the key is new.
const INCR_EXPIRE: &str = "local current = redis.call('incrby', KEYS[1], ARGV[2]) \
     if tonumber(current) == tonumber(ARGV[2]) then redis.call('expire', KEYS[1], ARGV[1]) end \
     return current";

fn denied_calls_count_as_incr_then_compare_counts_them(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let mut rng = Rng::new(0xc0de);
    // One window of an hour: no time passes that matters, and every count is compared.
    for _ in 0..200 {
        let quantity = rng.below(4).to_string();
        let reply = limiter(
            &mut con,
            "CL.FIXED",
            &["cell", "5", "3600", &quantity, "COUNTDENIED"],
        );
        let count: i64 = if quantity == "0" {
            run::<Option<i64>>(&mut con, ("GET", "recipe")).unwrap_or(0)
        } else {
            run(
                &mut con,
                ("EVAL", &[INCR_EXPIRE, "1", "recipe", "3600", &quantity]),
            )
        };
        let admitted = count <= 5;
        assert_eq!(reply[..3], [i64::from(!admitted), 5, (5 - count).max(0)]);
        let cell: Option<i64> = run(&mut con, ("GET", "cell"));
        assert_eq!(cell.unwrap_or(0), count);
    }
    let (_, cell_end) = snapshot(&mut con, b"cell");
    let (_, recipe_end) = snapshot(&mut con, b"recipe");
    assert!(
        (cell_end - recipe_end).abs() < 2_000,
        "{cell_end} {recipe_end}"
    );
    // The recipe's keys are the module's: CL.FIXED reads a count past the limit, which
    // even a peek finds over it.
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["recipe", "5", "3600", "0"])[..3],
        [1, 5, 0]
    );
    // A quantity over the limit counts on an empty limiter, and opens its window.
    assert_eq!(
        limiter(
            &mut con,
            "CL.FIXED",
            &["over", "5", "60", "9", "COUNTDENIED"]
        ),
        [1, 5, 0, -1, 60]
    );
    let count: i64 = run(&mut con, ("GET", "over"));
    assert_eq!(count, 9);
    // Without the flag, a denial still counts nothing.
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["over", "20", "60", "12"])[..3],
        [1, 20, 11]
    );
    let count: i64 = run(&mut con, ("GET", "over"));
    assert_eq!(count, 9);
}

/// Its bad input, events and replication are contract.rs's. What is its own: a dry run and a
/// refund count nothing.
fn a_dry_run_or_a_refund_counts_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let args = ["f", "1", "3600", "2", "COUNTDENIED"];
    assert_eq!(limiter(&mut con, "CL.FIXED", &args)[0], 1);
    let before = (snapshot(&mut con, b"f"), dirty(&mut con));
    // A dry run answers as the call would.
    let dry = ["f", "1", "3600", "2", "DRYRUN", "COUNTDENIED"];
    assert_eq!(limiter(&mut con, "CL.FIXED", &dry), [1, 1, 0, -1, 3600]);
    assert_eq!((snapshot(&mut con, b"f"), dirty(&mut con)), before);
    assert_eq!(snapshot(&mut con, b"f").0.as_deref(), Some(&b"2"[..]));
    // A refund has nothing denied to count: the flag changes nothing there.
    assert_eq!(
        limiter(
            &mut con,
            "CL.FIXED",
            &["f", "1", "3600", "1", "REFUND", "COUNTDENIED"]
        ),
        [0, 1, 0, -1, 3600]
    );
    assert_eq!(snapshot(&mut con, b"f").0.as_deref(), Some(&b"1"[..]));
}

fn a_call_held_back_by_a_waiter_counts_only_what_it_was_denied(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = connect(&server);
    let count = |con: &mut redis::Connection| -> i64 { run(con, ("GET", "f")) };
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "2", "3600", "2"])[0],
        0
    );
    // The waiter needs both units: one given back leaves it waiting, with one unit free.
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.FIXED",
        &["f", "2", "3600", "2", "BLOCK", "10000"],
    );
    limiter(&mut con, "CL.FIXED", &["f", "2", "3600", "1", "REFUND"]);
    until_waiting(&mut con, 1);
    // The free unit would fit, but it is the waiter's: denied, and nothing taken.
    let held = limiter(
        &mut con,
        "CL.FIXED",
        &["f", "2", "3600", "1", "COUNTDENIED"],
    );
    assert_eq!(held[..3], [1, 2, 0]);
    assert_eq!(count(&mut con), 1);
    // A call the limiter denies itself counts, waiters or not.
    let over = limiter(
        &mut con,
        "CL.FIXED",
        &["f", "2", "3600", "2", "COUNTDENIED"],
    );
    assert_eq!(over[0], 1);
    assert_eq!(count(&mut con), 3);
    limiter(&mut con, "CL.FIXED", &["f", "2", "3600", "3", "REFUND"]);
    assert_eq!(waiter.reply().0[..3], [0, 2, 0]);
    assert_eq!(count(&mut con), 2);
}
