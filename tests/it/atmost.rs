//! `ATMOST`: a call takes the most units, up to its quantity, that fit now, and says how many
//! sixth. Under a stepped clock, over every limiter form: the grant is what dry runs of `n`
//! and `n + 1` answer, its reply and its key are a plain call's of the granted units, and a
//! waiter holds it back; a grant that waits takes what fits when one unit does. On both
//! servers: it reaches the AOF as that plain call, and INFO counts it. Its refusals are
//! contract.rs's, and the library's twin of it library.rs's.

use redis::Value;

use crate::all::appended;
use crate::forms::{Form, FORMS};
use crate::harness::waiting::{connect, waiting_field, Waiter};
use crate::harness::{aof_options, run, snapshot, stats_field, Flavor, Rng, Server};

both_servers!(
    a_grant_reaches_the_aof_as_the_plain_admission_of_its_units,
    info_counts_grants_and_their_units,
    a_cap_past_what_could_ever_fit_is_no_error,
);

/// 2026-12-01T00:00:00Z.
const BASE: i64 = 1_796_083_200_000;

/// A call's integers: five, and `granted` sixth with ATMOST.
fn integers(con: &mut redis::Connection, cmd: &redis::Cmd) -> Vec<i64> {
    cmd.query(con)
        .unwrap_or_else(|e| panic!("{:?}: {e}", cmd.args_iter().count()))
}

/// One form's call on `keys`, asking for `quantity` with these options.
fn call(
    con: &mut redis::Connection,
    form: Form,
    keys: &[&str],
    params: &[String],
    quantity: i64,
    options: &[&str],
) -> Vec<i64> {
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let quantity = quantity.to_string();
    integers(con, &form.cmd(&keys, params, Some(&quantity), options))
}

#[test]
fn a_grant_is_what_dry_runs_admit_and_writes_as_a_plain_call_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = server.connection();
    let mut rng = Rng::new(0xa7_0057);
    // Steps that land on and beside the 500 ms cells of BUCKETS 4 over 2 s, and the window's
    // end.
    let steps = [0, 1, 7, 250, 499, 500, 501, 1000, 1999, 2000];
    let mut now = BASE;
    let (mut partial, mut none) = (0, 0);
    for round in 0..60 {
        now += steps[rng.below(steps.len() as u64) as usize];
        server.set_clock_ms(now);
        for form in FORMS {
            let limit = 3 + (round % 5);
            let params = form.algorithm.params(limit, "2");
            let (key, twin) = (format!("{}:g", form.name()), format!("{}:t", form.name()));
            let most = rng.below(limit as u64 + 4) as i64;
            let admits = |con: &mut redis::Connection, n: i64| {
                call(con, form, &[&key], &params, n, &["DRYRUN"])[0] == 0
            };
            // What dry runs of each quantity answer at this instant, before the grant.
            let fits: Vec<bool> = (1..=most + 1).map(|n| admits(&mut con, n)).collect();
            let reply = call(&mut con, form, &[&key], &params, most, &["ATMOST"]);
            let granted = reply[5];
            let name = form.name();
            let largest = fits
                .iter()
                .take(most as usize)
                .take_while(|&&fits| fits)
                .count();
            assert_eq!(
                granted, largest as i64,
                "{name}: dry runs admitted {fits:?}"
            );
            assert_eq!(reply.len(), 6, "{name}: {reply:?}");
            assert!((0..=most).contains(&granted), "{name}: {reply:?} of {most}");
            // A look answers as one does without ATMOST (the twin's below); a call is limited
            // exactly when it was granted nothing.
            if most > 0 {
                assert_eq!(reply[0], i64::from(granted == 0), "{name}: {reply:?}");
            }
            // What the call took is gone: a dry run now of what it left answers as the grant
            // did, so compare the twin, which takes the same units plainly.
            let plain = if granted > 0 {
                call(&mut con, form, &[&twin], &params, granted, &[])
            } else {
                // Nothing taken: the twin is asked for one unit as a dry run, the denial
                // ATMOST answers with.
                call(&mut con, form, &[&twin], &params, most.min(1), &["DRYRUN"])
            };
            assert_eq!(reply[..5], plain[..], "{name}: granted {granted} of {most}");
            assert_eq!(
                snapshot(&mut con, key.as_bytes()),
                snapshot(&mut con, twin.as_bytes()),
                "{name}: the key is the twin's"
            );
            // And the grant was the largest: n + 1 does not fit now (n did, as it was taken).
            if granted < most {
                assert!(!admits(&mut con, 1), "{name}: more fitted than {granted}");
            }
            if granted > 0 && granted < most {
                partial += 1;
            }
            if granted == 0 && most > 0 {
                none += 1;
            }
        }
    }
    assert!(partial > 30 && none > 30, "{partial} partial, {none} none");
}

/// CL.ALL grants what every limiter admits: the fewest any of them has left.
#[test]
fn cl_all_grants_the_least_any_limiter_admits_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = server.connection();
    server.set_clock_ms(BASE);
    let all = |con: &mut redis::Connection, quantity: i64, options: &[&str]| -> Value {
        let mut cmd = redis::cmd("CL.ALL");
        cmd.arg(&[
            "2", "a", "b", "FIXED", "10", "60", "THROTTLE", "5", "1", "1",
        ])
        .arg("QUANTITY")
        .arg(quantity)
        .arg(options);
        cmd.query(con).unwrap()
    };
    let ints = |value: Value| -> Vec<i64> { redis::from_redis_value(value).unwrap() };
    // THROTTLE admits 6 at once, FIXED 10: 6 are granted, and both take them.
    assert_eq!(ints(all(&mut con, 9, &["ATMOST"])), [0, 6, 0, -1, 6, 6]);
    let fixed: i64 = run(&mut con, ("GET", "a"));
    assert_eq!(fixed, 6);
    // A second later THROTTLE has one more, FIXED four.
    server.set_clock_ms(BASE + 1_000);
    let detail: Vec<Vec<i64>> =
        redis::from_redis_value(all(&mut con, 9, &["ATMOST", "DETAIL"])).unwrap();
    assert_eq!(detail, [[0, 10, 3, -1, 59, 1], [0, 6, 0, -1, 6, 1]]);
    // None left: denied, when THROTTLE's next unit fits, granted 0.
    assert_eq!(ints(all(&mut con, 9, &["ATMOST"])), [1, 6, 0, 1, 6, 0]);
    let fixed: i64 = run(&mut con, ("GET", "a"));
    assert_eq!(fixed, 7);
    // A look is a look: nothing granted, nothing limited.
    assert_eq!(ints(all(&mut con, 0, &["ATMOST"])), [0, 6, 0, -1, 6, 0]);
}

/// A grant stands behind the calls that waited first, as any call does; with BLOCK it waits
/// until one unit fits, then takes as many as fit.
#[test]
fn waiters_hold_a_grant_back_and_a_waiting_grant_takes_what_fits_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = connect(&server);
    server.set_clock_ms(BASE);
    // One unit a second, in bursts of up to five: all taken.
    let throttle = |quantity: &str, options: &[&str]| -> Vec<String> {
        ["k", "4", "1", "1", quantity]
            .iter()
            .chain(options)
            .map(|word| word.to_string())
            .collect()
    };
    let take = |con: &mut redis::Connection, args: Vec<String>| -> Vec<i64> {
        integers(con, redis::cmd("CL.THROTTLE").arg(args))
    };
    assert_eq!(take(&mut con, throttle("5", &[]))[..3], [0, 5, 0]);
    // A waiter for three units, due in three seconds.
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.THROTTLE",
        &throttle("3", &["BLOCK", "0"]),
    );
    // One unit fits after a second, and is the waiter's: a grant takes none of it.
    server.set_clock_ms(BASE + 1_000);
    let held = take(&mut con, throttle("2", &["ATMOST"]));
    assert_eq!((held[0], held[2], held[5]), (1, 0, 0), "{held:?}");
    assert_eq!(held[3], 2, "the waiter is due in two seconds");
    assert_eq!(waiting_field(&mut con, "now"), 1);
    server.set_clock_ms(BASE + 3_000);
    let (reply, _) = waiter.reply();
    assert_eq!(reply[..3], [0, 5, 0]);
    // A grant that may wait: parked until one unit fits, a second on, then it takes what
    // fits then, one.
    let granting = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.THROTTLE",
        &throttle("4", &["ATMOST", "BLOCK", "0"]),
    );
    server.set_clock_ms(BASE + 3_999);
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(waiting_field(&mut con, "now"), 1);
    server.set_clock_ms(BASE + 4_000);
    let (reply, _) = granting.reply();
    assert_eq!(reply, [0, 5, 0, -1, 5, 1]);
}

/// Replicas and the AOF get the plain call of what was granted: the quantity replaced by the
/// grant, ATMOST and BLOCK gone; a GCRA's grant is the SET it amounts to, as every write of it
/// is.
fn a_grant_reaches_the_aof_as_the_plain_admission_of_its_units(flavor: Flavor) {
    let server = Server::start_with(flavor, aof_options(None));
    let mut con = server.connection();
    let written = appended(&server, &mut con, |con| {
        let fixed = |con: &mut redis::Connection| {
            integers(
                con,
                redis::cmd("CL.FIXED").arg(&["f", "5", "60", "3", "ATMOST"]),
            )
        };
        assert_eq!(fixed(con)[5], 3);
        assert_eq!(fixed(con), [0, 5, 0, -1, 60, 2]);
        // Denied: nothing written, nothing propagated.
        assert_eq!(fixed(con), [1, 5, 0, 60, 60, 0]);
        let window = integers(
            con,
            redis::cmd("CL.WINDOW").arg(&["w", "5", "60", "9", "ATMOST", "BUCKETS", "4"]),
        );
        assert_eq!(window[5], 5);
        let all = integers(
            con,
            redis::cmd("CL.ALL").arg(&[
                "2", "a", "b", "WINDOW", "4", "60", "THROTTLE", "9", "1", "60", "ATMOST",
                "QUANTITY", "7",
            ]),
        );
        assert_eq!(all[5], 4);
        // No quantity given: one unit at most, propagated without one; BLOCK dropped too.
        let cells = integers(
            con,
            redis::cmd("CL.WINDOW")
                .arg(&["c", "5", "60", "ATMOST", "BLOCK", "100", "BUCKETS", "4"]),
        );
        assert_eq!(cells[5], 1);
        let one = integers(
            con,
            redis::cmd("CL.ALL").arg(&["1", "o", "FIXED", "5", "60", "ATMOST"]),
        );
        assert_eq!(one[5], 1);
    });
    let words: Vec<Vec<&str>> = written
        .iter()
        .map(|command| command.iter().map(String::as_str).collect())
        .filter(|command: &Vec<&str>| !["MULTI", "EXEC", "SELECT"].contains(&command[0]))
        .collect();
    let at = |command: &[&str]| command.last().copied().unwrap_or_default().to_owned();
    let expected: Vec<Vec<String>> = vec![
        vec!["CL.FIXED", "f", "5", "60", "3", "AT"],
        vec!["CL.FIXED", "f", "5", "60", "2", "AT"],
        vec!["CL.WINDOW", "w", "5", "60", "5", "BUCKETS", "4", "AT"],
        vec!["CL.WINDOW", "a", "4", "60", "4", "AT"],
        vec!["CL.WINDOW", "c", "5", "60", "1", "BUCKETS", "4", "AT"],
        vec!["CL.FIXED", "o", "5", "60", "AT"],
    ]
    .into_iter()
    .map(|words| words.into_iter().map(str::to_owned).collect())
    .collect();
    let without_instants: Vec<Vec<String>> = words
        .iter()
        .filter(|command| command[0] != "SET")
        .map(|command| {
            let mut command: Vec<String> = command.iter().map(|w| w.to_string()).collect();
            command.pop();
            command
        })
        .collect();
    assert_eq!(without_instants, expected, "{words:?}");
    assert!(words
        .iter()
        .all(|command| at(command).parse::<i64>().is_ok()));
    let sets: Vec<&Vec<&str>> = words.iter().filter(|command| command[0] == "SET").collect();
    assert_eq!(sets.len(), 1, "{words:?}");
    assert_eq!(sets[0][1], "b");
}

fn info_counts_grants_and_their_units(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let counted = |con: &mut redis::Connection| {
        ["calls", "grants", "units"].map(|field| stats_field(con, "cl_atmost", field))
    };
    assert_eq!(counted(&mut con), [0, 0, 0]);
    let fixed = |con: &mut redis::Connection, options: &[&str]| {
        integers(
            con,
            redis::cmd("CL.FIXED")
                .arg(&["k", "5", "60", "4"])
                .arg(options),
        )
    };
    assert_eq!(fixed(&mut con, &["ATMOST"])[5], 4);
    assert_eq!(fixed(&mut con, &["ATMOST"])[5], 1);
    assert_eq!(fixed(&mut con, &["ATMOST"])[5], 0);
    // A dry run and a look decide nothing: not counted.
    assert_eq!(fixed(&mut con, &["ATMOST", "DRYRUN"])[5], 0);
    let peek = integers(
        &mut con,
        redis::cmd("CL.FIXED").arg(&["k", "5", "60", "0", "ATMOST"]),
    );
    assert_eq!(peek, [0, 5, 0, -1, 60, 0]);
    assert_eq!(counted(&mut con), [3, 2, 5]);
    run::<()>(&mut con, ("CONFIG", "RESETSTAT"));
    assert_eq!(counted(&mut con), [0, 0, 0]);
}

/// A GCRA whose increment for the whole cap would overflow its span still grants what fits:
/// no call is ever granted more than the limit.
fn a_cap_past_what_could_ever_fit_is_no_error(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let slow = ["k", "0", "1", "86400", "100000"];
    let error = redis::cmd("CL.THROTTLE")
        .arg(&slow)
        .query::<Vec<i64>>(&mut con)
        .unwrap_err();
    assert!(error.to_string().contains("quantity"), "{error}");
    let granted = integers(&mut con, redis::cmd("CL.THROTTLE").arg(&slow).arg("ATMOST"));
    assert_eq!(granted, [0, 1, 0, -1, 86400, 1]);
    let all = integers(
        &mut con,
        redis::cmd("CL.ALL").arg(&[
            "1", "a", "THROTTLE", "0", "1", "86400", "QUANTITY", "100000", "ATMOST",
        ]),
    );
    assert_eq!(all, [0, 1, 0, -1, 86400, 1]);
    // The library the same.
    crate::library::load_library(&mut con);
    let by_library = integers(
        &mut con,
        redis::cmd("FCALL")
            .arg(&["cl_throttle", "1", "l", "0", "1", "86400", "100000"])
            .arg("ATMOST"),
    );
    assert_eq!(by_library, [0, 1, 0, -1, 86400, 1]);
    let by_library = integers(
        &mut con,
        redis::cmd("FCALL").arg(&[
            "cl_all", "1", "m", "THROTTLE", "0", "1", "86400", "QUANTITY", "100000", "ATMOST",
        ]),
    );
    assert_eq!(by_library, [0, 1, 0, -1, 86400, 1]);
}
