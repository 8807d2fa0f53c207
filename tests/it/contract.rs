//! The contract stated once, on real servers. Over every limiter form (forms.rs): peeks and
//! denials change nothing, keys are binary-safe, other types and foreign strings are refused,
//! AOF restarts hold identical state, a cluster routes every form to its keys' slot. Over every
//! command, and every flag on each form: bad input is refused and changes nothing. Over every
//! row of calls.rs: key specs and flags, a transaction or a script decides as the calls do
//! alone, ACL key patterns cover every key, writes fire the events of the commands they stand
//! in for. And a random mix of every command and option but BLOCK (block.rs replicates waits)
//! is identical on a replica and after a crash and an AOF restart.

use crate::harness::run;
use redis::{ConnectionLike, Value};

use crate::calls::Call;
use crate::forms::{Algorithm, Form, FORMS};
use crate::harness::cluster::Cluster;
use crate::harness::events::{notifying, Events};
use crate::harness::query::{server_now_ns, KeyRecord};
use crate::harness::waiting::waiting_field;
use crate::harness::{
    aof_options, dirty, dump, error_of, info_field, keyspace, limiter, replicate, snapshot,
    wait_for_replica, Flavor, Rng, Server,
};

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
    a_random_mix_of_every_call_is_identical_on_a_replica_and_after_a_crash_and_aof_restart,
    in_a_transaction_and_a_script_each_form_decides_alike_and_replicas_follow,
    an_acl_user_reaches_only_its_keys_and_a_refusal_changes_none,
    writes_fire_the_events_of_the_commands_they_replace,
    a_cluster_routes_every_form_to_its_slot_through_redirects,
);

/// A limit of one unit per 60 seconds.
fn one_per_minute(form: Form) -> Vec<String> {
    form.algorithm.params(1, "60")
}

fn del(con: &mut redis::Connection, key: &[u8]) {
    run::<()>(con, ("DEL", key));
}

fn a_peek_answers_without_touching_the_key(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (name, params) = (form.name(), one_per_minute(form));
        let before = dirty(&mut con);
        assert_eq!(
            form.call(&mut con, "peeked", &params, Some("0")),
            [0, 1, 1, -1, 0],
            "{name}"
        );
        assert_eq!(snapshot(&mut con, b"peeked"), (None, -2), "{name}");
        assert_eq!(dirty(&mut con), before, "{name}");

        assert_eq!(form.call(&mut con, "peeked", &params, None)[0], 0, "{name}");
        let state = snapshot(&mut con, b"peeked");
        let before = dirty(&mut con);
        assert_eq!(
            form.call(&mut con, "peeked", &params, Some("0")),
            [0, 1, 0, -1, 60],
            "{name}"
        );
        assert_eq!(snapshot(&mut con, b"peeked"), state, "{name}");
        assert_eq!(dirty(&mut con), before, "{name}");
        del(&mut con, b"peeked");
    }
}

fn a_denied_call_changes_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (name, params) = (form.name(), one_per_minute(form));
        assert_eq!(
            form.call(&mut con, "d", &params, None),
            [0, 1, 0, -1, 60],
            "{name}"
        );
        let state = snapshot(&mut con, b"d");
        let before = dirty(&mut con);
        for _ in 0..3 {
            assert_eq!(
                form.call(&mut con, "d", &params, None),
                [1, 1, 0, 60, 60],
                "{name}"
            );
        }
        // More than the limit can never fit: denied, with no retry time.
        assert_eq!(
            form.call(&mut con, "d", &params, Some("2")),
            [1, 1, 0, -1, 60],
            "{name}"
        );
        assert_eq!(snapshot(&mut con, b"d"), state, "{name}");
        assert_eq!(dirty(&mut con), before, "{name}");
        del(&mut con, b"d");
    }
}

fn keys_are_binary_safe(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for form in FORMS {
        let (name, params) = (form.name(), one_per_minute(form));
        let key: &[u8] = &[0xff, 0x00, b'k', 0xc3, 0x28];
        for limited in [0, 1] {
            let reply: Vec<i64> = form
                .cmd(&[key], &params, None, &[])
                .query(&mut con)
                .unwrap();
            assert_eq!(reply[..2], [limited, 1], "{name}");
        }
        let keys: Vec<Vec<u8>> = run(&mut con, ("KEYS", "*"));
        assert_eq!(keys, vec![key.to_vec()], "{name}");
        del(&mut con, key);
    }
}

fn keys_of_other_types_get_wrongtype_and_stay_as_they_were(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    run::<()>(&mut con, ("RPUSH", "list", &["a", "b"]));
    run::<()>(&mut con, ("HSET", "hash", &["f", "v"]));
    for form in FORMS {
        let (name, params) = (form.name(), one_per_minute(form));
        for key in ["list", "hash"] {
            for quantity in ["1", "0"] {
                let error = form.error(&mut con, key.as_bytes(), &params, Some(quantity));
                assert!(error.starts_with("WRONGTYPE"), "{name}: {error}");
            }
        }
    }
    let list: Vec<String> = run(&mut con, ("LRANGE", &["list", "0", "-1"]));
    assert_eq!(list, ["a", "b"]);
    let hash: Vec<String> = run(&mut con, ("HGETALL", "hash"));
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
    for form in FORMS {
        let (name, params) = (form.name(), one_per_minute(form));
        for value in foreign {
            run::<()>(&mut con, ("SET", "bad", value, &["PX", "100000"]));
            let expiry = snapshot(&mut con, b"bad").1;
            for quantity in ["1", "0"] {
                let error = form.error(&mut con, b"bad", &params, Some(quantity));
                assert!(
                    error.starts_with("ERR") && error.contains("not a valid state"),
                    "{name}: {error}"
                );
            }
            assert_eq!(
                snapshot(&mut con, b"bad"),
                (Some(value.to_vec()), expiry),
                "{name}"
            );
        }
    }
}

/// Bad input of every command, and the part of the error that names what is wrong (the window
/// commands' shared cases are WINDOW_BAD_INPUT's). The keys:
/// `k` absent, `pool` a set of one lease, `log` a sliding window's log, `text` a string no
/// limiter reads, `list` a list.
const BAD_INPUT: &[(&str, &[&[u8]], &str)] = &[
    // ATMOST where no part of a call can be granted, or beside what gives units back or
    // counts a denial's.
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"a", b"ATMOST"],
        "cl.lease grants no part of a call: ATMOST",
    ),
    (
        "CL.SMOOTH",
        &[b"smooth", b"1", b"60", b"5", b"ATMOST"],
        "cl.smooth grants no part of a call: ATMOST",
    ),
    (
        "CL.ALL",
        &[
            b"2", b"log", b"pool", b"FIXED", b"5", b"60", b"LEASE", b"1", b"60", b"HOLDER", b"a",
            b"ATMOST",
        ],
        "a LEASE limiter grants no part of a call: CL.ALL takes ATMOST",
    ),
    (
        "CL.FIXED",
        &[b"log", b"5", b"60", b"3", b"COUNTDENIED", b"ATMOST"],
        "ATMOST and COUNTDENIED options at the same time are not compatible",
    ),
    ("CL.RELEASE", &[b"pool", b"a", b"ATMOST"], "syntax error"),
    ("CL.HOLDERS", &[b"pool", b"ATMOST"], "syntax error"),
    ("CL.THROTTLE", &[b"k"], "wrong number of arguments"),
    (
        "CL.THROTTLE",
        &[b"k", b"1", b"1"],
        "wrong number of arguments",
    ),
    (
        "CL.THROTTLE",
        &[
            b"k", b"1", b"1", b"1", b"1", b"MS", b"REFUND", b"DRYRUN", b"x",
        ],
        "syntax error: argument 9 of 'cl.throttle'",
    ),
    (
        "CL.THROTTLE",
        &[b"k", b"1", b"1", b"1", b"1", b"MS", b"x"],
        "syntax error",
    ),
    ("CL.THROTTLE", &[b"k", b"x", b"1", b"1"], "max_burst"),
    ("CL.THROTTLE", &[b"k", b"-1", b"1", b"1"], "max_burst"),
    ("CL.THROTTLE", &[b"k", MAX, b"1", b"1"], "max_burst"),
    (
        "CL.THROTTLE",
        &[b"k", &[0xff, 0xfe], b"1", b"1"],
        "max_burst",
    ),
    ("CL.THROTTLE", &[b"k", b"1", b"1.5", b"1"], "count"),
    ("CL.THROTTLE", &[b"k", b"1", b"0", b"1"], "count"),
    ("CL.THROTTLE", &[b"k", b"1", b"-5", b"1"], "count"),
    ("CL.THROTTLE", &[b"k", b"1", MAX, b"1"], "count"),
    (
        "CL.THROTTLE",
        &[b"k", b"1", b"9223372036854775808", b"1"],
        "count",
    ),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b""], "period"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b"0"], "period"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b"-1"], "period"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", MAX], "period"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", &[0xc3, 0x28]], "period"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b"1", b"one"], "quantity"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b"1", b"-1"], "quantity"),
    ("CL.THROTTLE", &[b"k", b"1", b"1", b"1", MAX], "quantity"),
    (
        "CL.THROTTLE",
        &[b"k", b"1", b"1", b"1", b"1", b"HOURS"],
        "syntax error",
    ),
    (
        "CL.THROTTLE",
        &[b"k", b"1", b"1", b"1", b"1", b"MS", b"MS"],
        "syntax error",
    ),
    ("CL.THROTTLE", &[b"list", b"1", b"1", b"1"], "WRONGTYPE"),
    (
        "CL.THROTTLE",
        &[b"text", b"1", b"1", b"1"],
        "not a valid state",
    ),
    (
        "CL.WINDOW",
        &[b"k", b"1", b"1", b"COUNTDENIED"],
        "syntax error",
    ),
    // The replication form is refused from clients: it would let a caller pick the instant
    // it is limited at.
    (
        "CL.WINDOW",
        &[b"k", b"1", b"1", b"1", b"MS", b"AT", b"1"],
        "AT is accepted only",
    ),
    ("CL.WINDOW", &[b"text", b"1", b"1"], "not a valid state"),
    ("CL.WINDOW", &[b"pool", b"5", b"60"], "not a valid state"),
    (
        "CL.LEASE",
        &[b"log", b"1", b"60", b"a"],
        "not a valid state",
    ),
    ("CL.RELEASE", &[b"log", b"a"], "not a valid state"),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60"],
        "wrong number of arguments",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"0", b"60", b"b"],
        "limit must be >= 1",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"x", b"60", b"b"],
        "limit is not an integer",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"0", b"b"],
        "lease_time must be >= 1",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"-5", b"b"],
        "lease_time must be >= 1",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", MAX, b"b"],
        "lease_time is too large",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b""],
        "holder must be 1 to 255 bytes",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", LONG_HOLDER],
        "holder must be 1 to 255 bytes",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"b", b"SECONDS"],
        "syntax error",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"b", b"MS", b"MS"],
        "syntax error",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"b", b"BLOCK"],
        "syntax error",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"b", b"BLOCK", b"-1"],
        "timeout must be >= 0",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"b", b"AT", b"5"],
        "AT is accepted only",
    ),
    (
        "CL.LEASE",
        &[b"text", b"1", b"60", b"b"],
        "not a valid state",
    ),
    ("CL.LEASE", &[b"list", b"1", b"60", b"b"], "WRONGTYPE"),
    ("CL.RELEASE", &[b"pool"], "wrong number of arguments"),
    (
        "CL.RELEASE",
        &[b"pool", b""],
        "holder must be 1 to 255 bytes",
    ),
    (
        "CL.RELEASE",
        &[b"pool", LONG_HOLDER],
        "holder must be 1 to 255 bytes",
    ),
    (
        "CL.RELEASE",
        &[b"pool", b"a", b"BLOCK", b"100"],
        "BLOCK is not one of its arguments",
    ),
    ("CL.RELEASE", &[b"pool", b"a", b"extra"], "syntax error"),
    (
        "CL.RELEASE",
        &[b"pool", b"a", b"AT", b"5"],
        "AT is accepted only",
    ),
    ("CL.RELEASE", &[b"text", b"a"], "not a valid state"),
    ("CL.RELEASE", &[b"list", b"a"], "WRONGTYPE"),
    ("CL.HOLDERS", &[], "wrong number of arguments"),
    ("CL.HOLDERS", &[b"pool", b"SECONDS"], "syntax error"),
    (
        "CL.HOLDERS",
        &[b"pool", b"MS", b"MS"],
        "syntax error: argument 3 of 'cl.holders'",
    ),
    ("CL.HOLDERS", &[b"text"], "not a valid state"),
    ("CL.HOLDERS", &[b"list"], "WRONGTYPE"),
    (
        "CL.ALL",
        &[b"1", b"pool", b"LEASE", b"1", b"60"],
        "needs HOLDER",
    ),
    (
        "CL.ALL",
        &[b"1", b"pool", b"FIXED", b"1", b"60", b"HOLDER", b"a"],
        "no limiter is a LEASE",
    ),
    (
        "CL.ALL",
        &[b"1", b"pool", b"LEASE", b"0", b"60", b"HOLDER", b"a"],
        "limit must be >= 1",
    ),
    (
        "CL.ALL",
        &[b"1", b"pool", b"LEASE", b"1", b"60", b"HOLDER", b""],
        "holder must be 1 to 255",
    ),
    (
        "CL.ALL",
        &[b"1", b"text", b"LEASE", b"1", b"60", b"HOLDER", b"a"],
        "not a valid state",
    ),
    // COUNTDENIED, which only CL.FIXED takes, and only without a wait.
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"COUNTDENIED", b"BLOCK", b"100"],
        "COUNTDENIED and BLOCK",
    ),
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"COUNTDENIED", b"COUNTDENIED"],
        "syntax error",
    ),
    (
        "CL.THROTTLE",
        &[b"k", b"0", b"1", b"60", b"1", b"COUNTDENIED"],
        "syntax error",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"60", b"COUNTDENIED"],
        "syntax error",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"a", b"COUNTDENIED"],
        "syntax error",
    ),
    // ALIGN, CL.FIXED's alone, once.
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"ALIGN", b"ALIGN"],
        "syntax error",
    ),
    ("CL.WINDOW", &[b"k", b"1", b"60", b"ALIGN"], "syntax error"),
    (
        "CL.THROTTLE",
        &[b"k", b"0", b"1", b"60", b"ALIGN"],
        "syntax error",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"WINDOW", b"1", b"60", b"ALIGN"],
        "syntax error",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"60", b"ALIGN", b"ALIGN"],
        "syntax error",
    ),
    // BAN, on a denial: never with REFUND nor BLOCK, in CL.ALL as in the single commands.
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"60", b"BAN", b"5", b"REFUND"],
        "BAN and REFUND options at the same time",
    ),
    (
        "CL.ALL",
        &[
            b"1", b"k", b"FIXED", b"1", b"60", b"BLOCK", b"5", b"BAN", b"5",
        ],
        "BAN and BLOCK options at the same time",
    ),
    (
        "CL.WINDOW",
        &[b"k", b"1", b"60", b"BAN", b"0"],
        "BAN must be >= 1",
    ),
    // A calendar's unit, CL.FIXED's alone, in its period's place, which it aligns already.
    (
        "CL.FIXED",
        &[b"k", b"1", b"MONTH", b"ALIGN"],
        "ALIGN is for a period in seconds or ms",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"week", b"ALIGN"],
        "ALIGN is for a period in seconds or ms",
    ),
    (
        "CL.FIXED",
        &[b"k", b"1", b"MONTHS"],
        "period is not an integer",
    ),
    ("CL.FIXED", &[b"k", b"x", b"DAY"], "limit is not an integer"),
    ("CL.FIXED", &[b"k", b"0", b"DAY"], "limit must be >= 1"),
    (
        "CL.WINDOW",
        &[b"k", b"1", b"DAY"],
        "period is not an integer",
    ),
    (
        "CL.THROTTLE",
        &[b"k", b"0", b"1", b"YEAR"],
        "period is not an integer",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"WINDOW", b"1", b"DAY"],
        "period is not an integer",
    ),
    // OFFSET, which moves an aligned grid: -1439 to 1439 minutes.
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"OFFSET", b"60"],
        "OFFSET is given, but no ALIGN or calendar period",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"60", b"OFFSET", b"60"],
        "OFFSET is given, but no ALIGN or calendar period",
    ),
    (
        "CL.ALL",
        &[b"1", b"k", b"FIXED", b"1", b"DAY", b"OFFSET", b"1440"],
        "OFFSET must be <= 1439",
    ),
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"ALIGN", b"OFFSET", b"1440"],
        "OFFSET must be <= 1439",
    ),
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"ALIGN", b"OFFSET", b"-1440"],
        "OFFSET must be >= -1439",
    ),
    (
        "CL.FIXED",
        &[b"k", b"1", b"60", b"ALIGN", b"OFFSET", b"x"],
        "OFFSET",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"a", b"DRYRUN", b"BLOCK", b"0"],
        "DRYRUN and BLOCK",
    ),
    (
        "CL.LEASE",
        &[b"pool", b"1", b"60", b"a", b"REFUND"],
        "syntax error",
    ),
];

/// Bad input both window commands answer alike, with the part of the error that names it.
const WINDOW_BAD_INPUT: &[(&[&[u8]], &str)] = &[
    (&[b"k"], "wrong number of arguments"),
    (&[b"k", b"1"], "wrong number of arguments"),
    // A word past the options is out of place, not one too many.
    (
        &[b"k", b"1", b"1", b"1", b"MS", b"w", b"x", b"y", b"z"],
        "syntax error: argument 6",
    ),
    (&[b"k", b"x", b"1"], "limit"),
    (&[b"k", b"0", b"1"], "limit"),
    (&[b"k", b"-3", b"1"], "limit"),
    (&[b"k", &[0xff], b"1"], "limit"),
    (&[b"k", b"1", b"1.5"], "period"),
    (&[b"k", b"1", b"0"], "period"),
    (&[b"k", b"1", MAX], "period"),
    (&[b"k", b"1", b"1", b"-1"], "quantity"),
    (&[b"k", b"1", b"1", b""], "quantity"),
    (&[b"k", b"1", b"1", b"1", b"HOURS"], "syntax error"),
    (&[b"list", b"1", b"1"], "WRONGTYPE"),
];

/// Bad `BUCKETS n`, in CL.WINDOW's tail and in CL.ALL's WINDOW limiter, over a period of
/// 60 s: the words after the period, and the part of each one's error that names what is
/// wrong. In CL.ALL, `BUCKETS n` belongs to the limiter and follows its period at once.
const BUCKETS_BAD_INPUT: &[(&[&str], &str, &str)] = &[
    (&["BUCKETS"], "syntax error", "wrong number of arguments"),
    (
        &["BUCKETS", "4", "BUCKETS", "4"],
        "syntax error",
        "syntax error",
    ),
    (
        &["BUCKETS", "x"],
        "BUCKETS is not an integer",
        "BUCKETS is not an integer",
    ),
    (
        &["BUCKETS", "1"],
        "BUCKETS must be >= 2",
        "BUCKETS must be >= 2",
    ),
    (
        &["BUCKETS", "1025"],
        "BUCKETS must be <= 1024",
        "BUCKETS must be <= 1024",
    ),
    (
        &["BUCKETS", "7"],
        "period must be a multiple of BUCKETS",
        "period must be a multiple of BUCKETS",
    ),
    (
        &["MS", "BUCKETS", "7"],
        "period must be a multiple of BUCKETS",
        "syntax error",
    ),
];

/// Bad use of the flags, the same for every limiter form: the options, the quantity, and the
/// part of the error that names what is wrong.
const FLAG_BAD_INPUT: &[(&[&str], &str, &str)] = &[
    (&["ATMOST", "REFUND"], "1", "ATMOST and REFUND"),
    (&["REFUND", "ATMOST", "MS"], "2", "ATMOST and REFUND"),
    (&["ATMOST", "ATMOST"], "3", "syntax error"),
    (&["ATMOST"], "-1", "quantity"),
    (&["REFUND", "BLOCK", "100"], "1", "REFUND and BLOCK"),
    (&["REFUND", "REFUND"], "1", "syntax error"),
    (&["REFUND"], "-1", "quantity"),
    (&["REFUND"], "x", "quantity"),
    (&["DRYRUN", "BLOCK", "10"], "1", "DRYRUN and BLOCK"),
    (&["DRYRUN", "DRYRUN"], "1", "syntax error"),
    (&["DRYRUN", "REFUND", "DRYRUN"], "1", "syntax error"),
    (&["BLOCK", "-1"], "1", "timeout must be >= 0"),
    (&["BLOCK", "soon"], "1", "timeout is not an integer"),
    (
        &["BLOCK", "99999999999999999"],
        "1",
        "timeout must be <= 4611686018427",
    ),
    (&["BLOCK", "1", "BLOCK", "1"], "1", "syntax error"),
    (&["BLOCK"], "1", "syntax error"),
    (&["MS", "MS"], "1", "syntax error"),
];

const MAX: &[u8] = b"9223372036854775807";
const LONG_HOLDER: &[u8] = &[b'h'; 256];

fn bad_arguments_get_errors_naming_them_and_change_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        limiter(&mut con, "CL.LEASE", &["pool", "1", "60", "a"])[0],
        0
    );
    assert_eq!(limiter(&mut con, "CL.WINDOW", &["log", "5", "60"])[0], 0);
    run::<()>(&mut con, ("SET", "text", "hello"));
    run::<()>(&mut con, ("RPUSH", "list", "x"));
    // Each form's own key holds some units, for the flags to find.
    for form in FORMS {
        form.call(&mut con, &form.name(), &one_per_minute(form), None);
    }
    let before = keyspace(&mut con);
    let writes = dirty(&mut con);
    let windows = ["CL.FIXED", "CL.WINDOW"].into_iter().flat_map(|command| {
        WINDOW_BAD_INPUT.iter().map(move |&(args, named)| {
            (
                command,
                args.iter().map(|arg| arg.to_vec()).collect(),
                named,
            )
        })
    });
    let buckets = BUCKETS_BAD_INPUT
        .iter()
        .flat_map(|&(words, single_named, all_named)| {
            let single = ["log", "5", "60"].iter().chain(words);
            let all = ["1", "log", "WINDOW", "5", "60"].iter().chain(words);
            [
                (
                    "CL.WINDOW",
                    single.map(|w| w.as_bytes().to_vec()).collect(),
                    single_named,
                ),
                (
                    "CL.ALL",
                    all.map(|w| w.as_bytes().to_vec()).collect(),
                    all_named,
                ),
            ]
        });
    let table = BAD_INPUT.iter().map(|&(command, args, named)| {
        (
            command,
            args.iter().map(|arg| arg.to_vec()).collect(),
            named,
        )
    });
    let flags = FORMS.into_iter().flat_map(|form| {
        let params = one_per_minute(form);
        let mut cases: Vec<(&str, Vec<Vec<u8>>, &str)> = FLAG_BAD_INPUT
            .iter()
            .map(|&(options, quantity, named)| {
                let key = form.name();
                let args = form.args(&[key.as_bytes()], &params, Some(quantity), options);
                (form.command(), args, named)
            })
            .collect();
        // A refund is checked as the call is: its parameters, and the key's type and form.
        let mut bad = params.clone();
        bad[0] = "-5".into();
        let key = form.name();
        cases.push((
            form.command(),
            form.args(&[key.as_bytes()], &bad, Some("1"), &["REFUND"]),
            "ERR",
        ));
        for (key, named) in [("list", "WRONGTYPE"), ("text", "not a valid state")] {
            let args = form.args(&[key.as_bytes()], &params, Some("1"), &["REFUND"]);
            cases.push((form.command(), args, named));
        }
        // A sliding window's key of the other form is named for what it holds.
        let other = match form.algorithm {
            Algorithm::Window => Some((Algorithm::Buckets, "holds a sliding window of BUCKETS 4")),
            Algorithm::Buckets => Some((Algorithm::Window, "holds an exact sliding window")),
            _ => None,
        };
        if let Some((other, named)) = other {
            let key = Form::single(other).name();
            for options in [&[][..], &["REFUND"], &["DRYRUN"]] {
                let args = form.args(&[key.as_bytes()], &params, Some("1"), options);
                cases.push((form.command(), args, named));
            }
        }
        cases
    });
    // One argument past the most a command reads (its name included: 14, CL.ALL's 125: 16
    // limiters of six words, `FIXED limit period ALIGN OFFSET minutes`).
    let words = |count: usize| vec![b"1".to_vec(); count];
    let too_long = [
        ("CL.THROTTLE", words(14), "wrong number of arguments"),
        ("CL.LEASE", words(14), "wrong number of arguments"),
        ("CL.ALL", words(125), "wrong number of arguments"),
    ];
    for (command, args, named) in table
        .chain(windows)
        .chain(buckets)
        .chain(flags)
        .chain(too_long)
    {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let args = args.as_slice();
        let error = error_of(&mut con, command, args);
        assert!(error.contains(named), "{command} {args:?}: {error}");
        assert!(
            error.starts_with("ERR") || error.starts_with("WRONGTYPE"),
            "{command} {args:?}: {error}"
        );
    }
    assert_eq!(keyspace(&mut con), before, "an error changes no key");
    assert_eq!(dirty(&mut con), writes, "an error writes nothing");
    // A count at the top of the range is denied, not wrapped.
    for command in ["CL.FIXED", "CL.WINDOW"] {
        let huge = "9223372036854775807";
        let full = limiter(&mut con, command, &["huge", huge, "60", huge]);
        assert_eq!(full[..3], [0, i64::MAX, 0], "{command}");
        assert_eq!(
            limiter(&mut con, command, &["huge", huge, "60", "1"])[0],
            1,
            "{command}"
        );
        run::<()>(&mut con, ("DEL", "huge"));
    }
    let pong: String = run(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
}

/// Each step of every call names its key to the server, and each command carries the flags
/// and key-spec flags of what it does.
fn each_command_is_described_to_the_server(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for call in Call::all() {
        for step in call.steps_on("limits:user") {
            let keys: Vec<String> = run(&mut con, ("COMMAND", "GETKEYS", &step));
            assert_eq!(keys, ["limits:user"], "{step:?}");
        }
    }
    let limiter: &[&str] = &[
        "write", "denyoom", "fast", "blocking", "RW", "access", "update",
    ];
    for (command, flags, not) in [
        ("CL.THROTTLE", limiter, &["readonly"][..]),
        ("CL.FIXED", limiter, &["readonly"]),
        ("CL.WINDOW", limiter, &["readonly"]),
        ("CL.ALL", limiter, &["readonly"]),
        ("CL.LEASE", limiter, &["readonly"]),
        ("CL.SMOOTH", limiter, &["readonly"]),
        // A release frees memory, so it runs when the server is out of it.
        (
            "CL.RELEASE",
            &["write", "fast", "RW", "delete"],
            &["denyoom", "blocking"],
        ),
        (
            "CL.HOLDERS",
            &["readonly", "RO", "access"],
            &["write", "blocking"],
        ),
    ] {
        let info: Value = run(&mut con, ("COMMAND", "INFO", command));
        let words = status_words(&info);
        for flag in flags {
            assert!(
                words.iter().any(|word| word == flag),
                "{command}: {flag} missing from {words:?}"
            );
        }
        for flag in not {
            assert!(
                !words.iter().any(|word| word == flag),
                "{command}: {flag} in {words:?}"
            );
        }
    }
}

/// Every status and bulk word in a reply, at any depth: COMMAND INFO's flags.
fn status_words(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) | Value::Set(items) => items.iter().flat_map(status_words).collect(),
        Value::SimpleString(word) => vec![word.clone()],
        Value::BulkString(word) => vec![String::from_utf8_lossy(word).into_owned()],
        _ => Vec::new(),
    }
}

/// The key a workload gives form `form`'s `i`-th limiter.
fn workload_key(form: Form, i: usize) -> String {
    format!("{}:{i}", form.name())
}

/// A limit of three units per hour.
fn three_per_hour(form: Form) -> Vec<String> {
    form.algorithm.params(3, "3600")
}

/// A mixed workload on a primary: every form on many keys, some calls denied.
fn workload(con: &mut redis::Connection, keys: usize) {
    for i in 0..keys {
        for form in FORMS {
            for _ in 0..=(i % 5) {
                form.call(con, &workload_key(form, i), &three_per_hour(form), None);
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
        for form in FORMS {
            let (key, params) = (workload_key(form, i), three_per_hour(form));
            assert_eq!(form.call(&mut con, &key, &params, None)[0], 1, "{key}");
            form.call(&mut con, &key, &params, Some("0"));
        }
    }
    assert_eq!(
        info_field(&mut con, "replication", "master_repl_offset"),
        offset
    );

    wait_for_replica(&mut con);
    let mut replica_con = replica.connection();
    let keys: Vec<Vec<u8>> = run(&mut con, ("KEYS", "*"));
    assert_eq!(keys.len(), 30 * FORMS.len());
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
    let keys: Vec<Vec<u8>> = run(&mut con, ("KEYS", "*"));
    let before: Vec<_> = keys
        .iter()
        .map(|k| (snapshot(&mut con, k), dump(&mut con, k)))
        .collect();
    let dir = server.shutdown();

    let restarted = Server::start_with(flavor, aof_options(Some(dir)));
    let mut con = restarted.connection();
    let after: Vec<_> = keys
        .iter()
        .map(|k| (snapshot(&mut con, k), dump(&mut con, k)))
        .collect();
    assert_eq!(after, before);
    // The restored limiters carry on where they were: key 2 of each is full.
    for form in FORMS {
        let key = workload_key(form, 2);
        assert_eq!(
            form.call(&mut con, &key, &three_per_hour(form), None)[0],
            1,
            "{key}"
        );
    }
    drop(restarted);
}

/// Random calls over 200 keys, each always of one kind (a GCRA, a fixed window, a sliding
/// window exact or in cells, a pool of leases): CL.ALL over 1 to 4 of them, their single commands, CL.RELEASE
/// and CL.HOLDERS, with random limits, quantities (peeks and too-large ones included), units
/// and options (a quarter refunds, some dry runs, COUNTDENIED on fixed windows), in pipelines
/// of 500. Returns how many CL.ALL calls took units and how many were denied.
fn mixed_workload(con: &mut redis::Connection, seed: u64, calls: u64) -> (u64, u64) {
    const KEYS: u64 = 200;
    let mut rng = Rng::new(seed);
    let (mut admitted, mut denied) = (0, 0);
    let mut done = 0;
    while done < calls {
        let mut pipe = redis::pipe();
        // For each call: whether it is a CL.ALL taking units.
        let mut taking = Vec::new();
        for _ in 0..500.min(calls - done) {
            let ms = rng.below(2) == 0;
            let period = if ms { "3600000" } else { "3600" };
            let holder = format!("job:{}", rng.below(8));
            let refund = rng.below(4) == 0;
            let dry_run = rng.below(8) == 0;
            // ATMOST where it may go (no REFUND; no lease, no COUNTDENIED, checked below),
            // with quantities that often overflow what is left.
            let at_most = !refund && rng.below(4) == 0;
            let quantity = rng.below(if at_most { 12 } else { 4 });
            let mut flags: Vec<&str> = Vec::new();
            flags.extend(ms.then_some("MS"));
            flags.extend(refund.then_some("REFUND"));
            flags.extend(dry_run.then_some("DRYRUN"));
            let limiter_of = |id: u64, rng: &mut Rng| {
                let limit = 1 + rng.below(20);
                match id % 4 {
                    0 => (
                        "THROTTLE",
                        vec![(limit - 1).to_string(), "10".into(), period.to_owned()],
                    ),
                    1 => {
                        // Windows on the clock now and then: aligned, or a calendar's, in a
                        // local time or not, the form changing from call to call.
                        let mut params = vec![limit.to_string(), period.to_owned()];
                        match rng.below(6) {
                            0 | 1 => params.push("ALIGN".into()),
                            2 => {
                                params[1] =
                                    ["DAY", "WEEK", "MONTH", "YEAR"][rng.below(4) as usize].into()
                            }
                            _ => {}
                        }
                        if (params.len() > 2 || params[1] != period) && rng.below(2) == 0 {
                            let minutes = rng.below(2 * 1439 + 1) as i64 - 1439;
                            params.extend(["OFFSET".into(), minutes.to_string()]);
                        }
                        ("FIXED", params)
                    }
                    // Half the sliding windows in cells, their number changing from call to
                    // call: each change moves the cells onto the new grid.
                    2 if id % 8 == 6 => {
                        let n = ["2", "4", "8", "30", "60"][rng.below(5) as usize];
                        let params = [limit.to_string(), period.to_owned()];
                        (
                            "WINDOW",
                            [&params[..], &["BUCKETS".into(), n.into()]].concat(),
                        )
                    }
                    2 => ("WINDOW", vec![limit.to_string(), period.to_owned()]),
                    _ => {
                        // A third of the leases in ms end within half a second: the mix drops
                        // ended holders as it goes.
                        let lease_time = if ms && rng.below(3) == 0 {
                            (50 + rng.below(400)).to_string()
                        } else {
                            period.to_owned()
                        };
                        ("LEASE", vec![(limit % 5 + 1).to_string(), lease_time])
                    }
                }
            };
            if rng.below(2) == 0 {
                let keys = 1 + rng.below(4) as usize;
                let mut ids: Vec<u64> = Vec::new();
                while ids.len() < keys {
                    let id = rng.below(KEYS);
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                let cmd = pipe.cmd("CL.ALL").arg(ids.len());
                for id in &ids {
                    cmd.arg(format!("key:{id}"));
                }
                for id in &ids {
                    let (keyword, params) = limiter_of(*id, &mut rng);
                    cmd.arg(keyword).arg(params);
                }
                let mut options = vec![vec!["QUANTITY".to_owned(), quantity.to_string()]];
                if ids.iter().any(|id| id % 4 == 3) {
                    options.push(vec!["HOLDER".into(), holder]);
                }
                if rng.below(2) == 0 {
                    options.push(vec!["DETAIL".into()]);
                }
                if at_most && ids.iter().all(|id| id % 4 != 3) {
                    options.push(vec!["ATMOST".into()]);
                }
                options.extend(flags.iter().map(|word| vec![word.to_string()]));
                cmd.arg(rng.shuffled(options).concat());
                taking.push(Some(quantity > 0 && !refund && !dry_run));
                done += 1;
                continue;
            }
            let id = rng.below(KEYS);
            let key = format!("key:{id}");
            let (keyword, params) = limiter_of(id, &mut rng);
            if keyword == "LEASE" {
                match rng.below(4) {
                    0 => pipe.cmd("CL.RELEASE").arg(&key).arg(&holder),
                    1 => pipe.cmd("CL.HOLDERS").arg(&key).arg(ms.then_some("MS")),
                    _ => {
                        flags.retain(|flag| *flag != "REFUND");
                        pipe.cmd("CL.LEASE")
                            .arg(&key)
                            .arg(params)
                            .arg(&holder)
                            .arg(rng.shuffled(flags))
                    }
                };
            } else if rng.below(25) == 0 {
                // A lockout by hand, and its lifting.
                let span = if ms { "1500" } else { "2" };
                pipe.cmd("CL.BAN")
                    .arg(&key)
                    .arg(span)
                    .arg(ms.then_some("MS"));
            } else if rng.below(25) == 0 {
                pipe.cmd("CL.UNBAN").arg(&key);
            } else {
                if at_most {
                    flags.push("ATMOST");
                } else if keyword == "FIXED" && rng.below(3) == 0 {
                    flags.push("COUNTDENIED");
                }
                // Now and then a denial locks the key out, a second or so.
                let ban: Vec<&str> = if !refund && rng.below(3) == 0 {
                    vec!["BAN", if ms { "1200" } else { "1" }]
                } else {
                    vec![]
                };
                // The quantity follows the limiter's numbers; BUCKETS n, the flags.
                let numbers = if keyword == "THROTTLE" { 3 } else { 2 };
                pipe.cmd(Algorithm::of(keyword).command())
                    .arg(&key)
                    .arg(&params[..numbers])
                    .arg(quantity)
                    .arg(&params[numbers..])
                    .arg(rng.shuffled(flags))
                    .arg(ban);
            }
            taking.push(None);
            done += 1;
        }
        let replies: Vec<Value> = pipe.query(con).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        for (reply, taking) in replies.iter().zip(taking) {
            let Some(true) = taking else { continue };
            // Five integers, or with DETAIL five per key.
            let limited = match reply {
                Value::Array(items) => match items.first() {
                    Some(Value::Array(_)) => items.iter().any(|element| {
                        matches!(element, Value::Array(e) if e.first() == Some(&Value::Int(1)))
                    }),
                    first => first == Some(&Value::Int(1)),
                },
                other => panic!("not a CL.ALL reply: {other:?}"),
            };
            if limited {
                denied += 1;
            } else {
                admitted += 1;
            }
        }
    }
    (admitted, denied)
}

/// Every write was acknowledged after its fsync (`appendfsync always`): a crash loses none of
/// them, and the AOF a replica's feed came from restores the same bytes.
fn a_random_mix_of_every_call_is_identical_on_a_replica_and_after_a_crash_and_aof_restart(
    flavor: Flavor,
) {
    let primary = Server::start_with(flavor, aof_options(None));
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let (admitted, denied) = mixed_workload(&mut con, 0xa11, 5_000);
    println!("{flavor:?}: {admitted} CL.ALL calls admitted, {denied} denied");
    assert!(
        admitted >= 200 && denied >= 200,
        "{admitted} admitted, {denied} denied"
    );
    let pools = (3..200).step_by(4).filter(|id| {
        let holders: Vec<Value> = run(&mut con, ("CL.HOLDERS", format!("key:{id}")));
        !holders.is_empty()
    });
    assert!(pools.count() > 20, "too few pools hold leases");
    let in_cells = (6..200).step_by(8).filter(|id| {
        let (value, _) = snapshot(&mut con, format!("key:{id}").as_bytes());
        value.is_some_and(|value| value.starts_with(b"CLB"))
    });
    assert!(in_cells.count() > 5, "too few windows hold cells");
    wait_for_replica(&mut con);
    // A key whose last lease ends within the comparison could be gone from one side: the
    // keys that last a minute more are compared, byte for byte.
    let soon = server_now_ns(&mut con) / 1_000_000 + 60_000;
    let lasting = |records: Vec<KeyRecord>| -> Vec<KeyRecord> {
        records
            .into_iter()
            .filter(|(_, (_, expiry), _)| *expiry > soon)
            .collect()
    };
    let expected = lasting(keyspace(&mut con));
    assert!(expected.len() > 100, "{} keys", expected.len());
    let on_replica = lasting(keyspace(&mut replica.connection()));
    let differing: Vec<_> = on_replica
        .iter()
        .zip(&expected)
        .filter(|(replica, primary)| replica != primary)
        .collect();
    assert!(
        differing.is_empty() && on_replica.len() == expected.len(),
        "replica: {} keys against {}; the first that differ: {:?}",
        on_replica.len(),
        expected.len(),
        &differing[..differing.len().min(2)]
    );
    drop(replica);
    let dir = primary.kill();
    let restarted = Server::start_with(flavor, aof_options(Some(dir)));
    let restored = keyspace(&mut restarted.connection());
    assert_eq!(lasting(restored), expected, "AOF restart after a crash");
    drop(restarted);
}

/// Replaces the key placeholder in a script's arguments with `KEYS[1]`, then calls them.
const SCRIPT: &str = "local args = {} \
    for i, word in ipairs(ARGV) do args[i] = word == '{key}' and KEYS[1] or word end \
    return redis.call(unpack(args))";

/// What of a reply does not hang on the instant it was made: the first three integers of a
/// limiter's (or of each of CL.ALL's DETAIL), a release's count, the holders' names.
fn decision(reply: &Value) -> Value {
    match reply {
        Value::Array(items) if items.iter().all(|item| matches!(item, Value::Int(_))) => {
            Value::Array(items.iter().take(3).cloned().collect())
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| !matches!(item, Value::Int(_)))
                .map(decision)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Inside MULTI/EXEC and inside a Lua script every call decides as it does alone, a BLOCK
/// answers at once, and the writes reach a replica within the transaction's or the
/// script's own unit.
fn in_a_transaction_and_a_script_each_form_decides_alike_and_replicas_follow(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let mut keys = 0;
    for call in Call::all() {
        let name = call.name();
        let alone: Vec<Value> = call
            .steps_on(&format!("{name}:alone"))
            .into_iter()
            .map(|step| run(&mut con, &step))
            .collect();
        let waited = waiting_field(&mut con, "waited");

        let mut pipe = redis::pipe();
        pipe.atomic();
        for step in call.steps_on(&format!("{name}:in-multi")) {
            pipe.cmd(&step[0]).arg(&step[1..]);
        }
        let in_multi: Vec<Value> = pipe.query(&mut con).unwrap();

        let key = format!("{name}:in-script");
        let in_script: Vec<Value> = call
            .steps()
            .into_iter()
            .map(|step| run(&mut con, ("EVAL", SCRIPT, 1, &key, &step)))
            .collect();

        let decisions = |replies: &[Value]| replies.iter().map(decision).collect::<Vec<_>>();
        assert_eq!(decisions(&in_multi), decisions(&alone), "{name} in MULTI");
        assert_eq!(
            decisions(&in_script),
            decisions(&alone),
            "{name} in a script"
        );
        assert_eq!(waiting_field(&mut con, "waited"), waited, "{name} waited");
        // A fixed window's count holds no instant, so the three keys hold the same one. (A
        // TAT is also a decimal, but an instant in ns, past 10^18.)
        let count = |con: &mut redis::Connection, place: &str| -> Option<i64> {
            let value: Option<Vec<u8>> = run(con, ("GET", format!("{name}:{place}")));
            let value: i64 = std::str::from_utf8(&value?).ok()?.parse().ok()?;
            (value < 1_000_000_000_000).then_some(value)
        };
        let alone_count = count(&mut con, "alone");
        for place in ["in-multi", "in-script"] {
            assert_eq!(count(&mut con, place), alone_count, "{name} {place}");
        }
        let exists: i64 = run(&mut con, ("EXISTS", format!("{name}:alone")));
        keys += 3 * exists;
    }
    wait_for_replica(&mut con);
    let on_primary = keyspace(&mut con);
    assert_eq!(on_primary.len() as i64, keys);
    assert_eq!(keyspace(&mut replica.connection()), on_primary);
}

/// Key patterns in ACL rules cover every key of a call: a user reaches its own keys, and a
/// call naming any other is refused before a key is touched.
fn an_acl_user_reaches_only_its_keys_and_a_refusal_changes_none(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut admin = server.connection();
    let commands = [
        "+cl.throttle",
        "+cl.fixed",
        "+cl.window",
        "+cl.all",
        "+cl.lease",
        "+cl.release",
        "+cl.holders",
    ];
    run::<()>(
        &mut admin,
        (
            "ACL",
            "SETUSER",
            "limiter",
            "on",
            ">secret",
            &commands,
            "~limits:*",
        ),
    );
    let mut con = server.connection();
    run::<()>(&mut con, ("AUTH", &["limiter", "secret"]));
    for call in Call::all() {
        let name = call.name();
        for step in call.steps_on(&format!("limits:{name}")) {
            run::<Value>(&mut con, &step);
        }
        let before = keyspace(&mut admin);
        for step in call.steps_on(&format!("other:{name}")) {
            let args: Vec<&[u8]> = step[1..].iter().map(|word| word.as_bytes()).collect();
            let error = error_of(&mut con, &step[0], &args);
            assert!(error.starts_with("NOPERM"), "{step:?}: {error}");
        }
        assert_eq!(keyspace(&mut admin), before, "{name}");
    }
    // One key of its own and one not: the whole call is refused.
    let args: [&[u8]; 9] = [
        b"2",
        b"limits:a",
        b"other:b",
        b"FIXED",
        b"5",
        b"60",
        b"FIXED",
        b"5",
        b"60",
    ];
    let error = error_of(&mut con, "CL.ALL", &args);
    assert!(error.starts_with("NOPERM"), "CL.ALL: {error}");
    let error = error_of(&mut con, "GET", &[b"limits:CL.FIXED"]);
    assert!(error.starts_with("NOPERM"), "GET: {error}");
    let keys: Vec<String> = run(&mut admin, ("KEYS", "other:*"));
    assert!(keys.is_empty());
}

/// Each write fires what the server commands it stands in for fire; peeks, denials, dry runs
/// and errors fire nothing; a replica fires the same as its primary.
fn writes_fire_the_events_of_the_commands_they_replace(flavor: Flavor) {
    let primary = notifying(flavor);
    let replica = notifying(flavor);
    replicate(&replica, &primary);
    let mut on_primary = Events::subscribe(&primary);
    let mut on_replica = Events::subscribe(&replica);
    let mut con = primary.connection();
    run::<()>(&mut con, ("SET", &["other", "x"]));
    run::<()>(&mut con, ("RPUSH", &["list", "x"]));
    let mut expected = vec![("set".to_owned(), "other".to_owned())];
    expected.push(("rpush".into(), "list".into()));
    for call in Call::all() {
        let key = call.name();
        for step in call.steps_on(&key) {
            run::<Value>(&mut con, &step);
        }
        expected.extend(
            call.fired()
                .iter()
                .map(|event| (event.to_string(), key.clone())),
        );
    }
    // Errors: a string that is not a state, a list, and the state of another limiter (a TAT
    // is not a log, a log not a count or a TAT).
    for form in FORMS {
        let foreign = match form.algorithm {
            Algorithm::Window => "CL.THROTTLE",
            _ => "CL.WINDOW",
        };
        let params = form.algorithm.params(1, "60");
        for other in ["other", "list", foreign] {
            form.error(&mut con, other.as_bytes(), &params, None);
        }
    }
    run::<()>(&mut con, ("SET", &["marker", "1"]));
    assert_eq!(on_primary.until_marker("marker"), expected, "primary");
    assert_eq!(on_replica.until_marker("marker"), expected, "replica");
}

/// The keys one call of `form` takes for user `i`: one, or for CL.ALL two under one hash tag.
fn cluster_keys(form: Form, i: usize) -> Vec<String> {
    let tag = format!("{{{}:user:{i}}}", form.name());
    if form.in_all {
        vec![format!("{tag}:a"), format!("{tag}:b")]
    } else {
        vec![tag]
    }
}

fn cluster_call(con: &mut impl ConnectionLike, form: Form, i: usize) -> Vec<i64> {
    let keys = cluster_keys(form, i);
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    form.cmd(&keys, &form.algorithm.params(2, "7200"), None, &[])
        .query(con)
        .unwrap_or_else(|e| panic!("{} {keys:?}: {e}", form.name()))
}

/// A cluster client sends each call to its keys' slot through the redirects, and the state
/// lands on that slot's primary and reaches its replica.
fn a_cluster_routes_every_form_to_its_slot_through_redirects(flavor: Flavor) {
    const USERS: usize = 500;
    let cluster = Cluster::start(flavor);
    let mut con = cluster.client();
    for i in 0..USERS {
        for form in FORMS {
            assert_eq!(
                cluster_call(&mut con, form, i)[..3],
                [0, 2, 1],
                "{}",
                form.name()
            );
        }
    }
    for i in (0..USERS).step_by(7) {
        for form in FORMS {
            assert_eq!(
                cluster_call(&mut con, form, i)[..3],
                [0, 2, 0],
                "{}",
                form.name()
            );
            assert_eq!(
                cluster_call(&mut con, form, i)[..3],
                [1, 2, 0],
                "{}",
                form.name()
            );
        }
    }
    // Every primary holds a share of the keys.
    let keys_per_user: usize = FORMS.iter().map(|&form| cluster_keys(form, 0).len()).sum();
    let mut total = 0;
    for node in &cluster.nodes {
        let mut node_con = node.connection();
        if info_field(&mut node_con, "replication", "role") == "master" {
            let size: i64 = run(&mut node_con, &["DBSIZE"]);
            assert!(size > 500, "a primary holds only {size} keys");
            total += size;
        }
    }
    assert_eq!(total as usize, USERS * keys_per_user);
    // DETAIL through the cluster client: each limiter of a CL.ALL call, in key order.
    for form in FORMS.iter().filter(|form| form.in_all) {
        let keys = cluster_keys(*form, 43);
        let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
        let detail: Vec<Vec<i64>> = form
            .cmd(&keys, &form.algorithm.params(2, "7200"), None, &["DETAIL"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            detail
                .iter()
                .map(|reply| reply[..4].to_vec())
                .collect::<Vec<_>>(),
            [vec![0, 2, 0, -1], vec![0, 2, 0, -1]],
            "{}",
            form.name()
        );
    }
    // On the slot's primary, and the same on its replica.
    for form in FORMS {
        let keys = cluster_keys(form, 42);
        let primary = cluster.primary_for(&keys[0]);
        let mut primary_con = primary.connection();
        wait_for_replica(&mut primary_con);
        let mut replica_con = cluster.replica_of(primary).connection();
        run::<()>(&mut replica_con, &["READONLY"]);
        for key in &keys {
            let state = snapshot(&mut primary_con, key.as_bytes());
            assert!(state.0.is_some(), "{key} is not on its slot's primary");
            assert_eq!(snapshot(&mut replica_con, key.as_bytes()), state, "{key}");
        }
    }
}
