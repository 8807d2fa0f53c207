//! How the module presents itself to operators and tools: INFO counters, CONFIG RESETSTAT,
//! COMMAND DOCS, ACL categories and its version, on Redis 7.0 and Valkey 9.

use crate::harness::run;
use crate::harness::{
    crate_version_number, error_of, limiter, module_version, stats_line, Flavor, Options, Server,
    ServerKind,
};
use redis::Value;

both_servers!(
    info_counts_each_outcome_per_command,
    config_resetstat_clears_the_counters,
    command_docs_describe_every_argument,
    command_docs_give_cl_all_its_whole_grammar,
    the_commands_carry_their_acl_categories,
    module_list_reports_the_crate_version,
    a_resetstat_the_server_refuses_or_discards_leaves_the_counters,
    a_resetstat_waiting_in_a_transaction_does_not_hide_others,
    a_resetstat_among_cl_all_calls_in_a_transaction_is_seen,
    replayed_calls_are_not_counted,
);

fn info_counts_each_outcome_per_command(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.THROTTLE", &["k", "0", "1", "60"]);
    limiter(&mut con, "CL.THROTTLE", &["k", "0", "1", "60"]);
    limiter(&mut con, "CL.THROTTLE", &["k", "0", "1", "60", "0"]);
    limiter(
        &mut con,
        "CL.THROTTLE",
        &["k", "0", "1", "60", "1", "REFUND"],
    );
    // A refund of nothing looks, and is counted as the peek it is.
    limiter(
        &mut con,
        "CL.THROTTLE",
        &["k", "0", "1", "60", "0", "REFUND"],
    );
    error_of(&mut con, "CL.THROTTLE", &[b"k", b"x", b"1", b"60"]);
    limiter(&mut con, "CL.WINDOW", &["w", "5", "60", "2"]);
    assert_eq!(
        stats_line(&mut con, "cl_throttle"),
        "calls=6,allowed=1,denied=1,peeks=2,refunds=1,errors=1"
    );
    assert_eq!(
        stats_line(&mut con, "cl_fixed"),
        "calls=0,allowed=0,denied=0,peeks=0,refunds=0,errors=0"
    );
    assert_eq!(
        stats_line(&mut con, "cl_window"),
        "calls=1,allowed=1,denied=0,peeks=0,refunds=0,errors=0"
    );
    for section in ["modules", "everything"] {
        let info: String = run(&mut con, ("INFO", section));
        assert!(
            info.contains("redis-cell_cl_window:calls=1"),
            "INFO {section}"
        );
    }
}

fn config_resetstat_clears_the_counters(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.FIXED", &["f", "5", "60"]);
    assert!(stats_line(&mut con, "cl_fixed").starts_with("calls=1,"));
    run::<()>(&mut con, ("CONFIG", "RESETSTAT"));
    assert_eq!(
        stats_line(&mut con, "cl_fixed"),
        "calls=0,allowed=0,denied=0,peeks=0,refunds=0,errors=0"
    );
    limiter(&mut con, "CL.FIXED", &["f", "5", "60"]);
    assert!(stats_line(&mut con, "cl_fixed").starts_with("calls=1,allowed=1,"));
}

/// A RESP map or flat key-value array as (name, value) pairs.
fn pairs(value: &Value) -> Vec<(String, Value)> {
    let items: Vec<Value> = match value {
        Value::Map(map) => map
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect(),
        Value::Array(items) => items.clone(),
        other => panic!("not a map: {other:?}"),
    };
    items
        .chunks(2)
        .map(|pair| {
            (
                redis::from_redis_value(pair[0].clone()).unwrap(),
                pair[1].clone(),
            )
        })
        .collect()
}

fn field(value: &Value, name: &str) -> Value {
    pairs(value)
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name} in {value:?}"))
}

fn text(value: Value) -> String {
    redis::from_redis_value(value).unwrap()
}

fn command_docs_describe_every_argument(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (command, expected_args) in [
        (
            "cl.throttle",
            &[
                "key",
                "max_burst",
                "count",
                "period",
                "quantity",
                "ms",
                "refund",
                "dryrun",
                "lockout",
                "atmost",
                "timeout",
            ][..],
        ),
        (
            "cl.fixed",
            &[
                "key",
                "limit",
                "period",
                "quantity",
                "ms",
                "refund",
                "dryrun",
                "countdenied",
                "align",
                "minutes",
                "lockout",
                "atmost",
                "timeout",
            ],
        ),
        (
            "cl.window",
            &[
                "key", "limit", "period", "quantity", "n", "ms", "refund", "dryrun", "lockout",
                "atmost", "timeout",
            ],
        ),
    ] {
        let docs: Value = run(&mut con, ("COMMAND", &["DOCS", command]));
        let doc = field(&docs, command);
        assert!(text(field(&doc, "summary")).contains("Replies [limited, limit, remaining"));
        assert_eq!(text(field(&doc, "since")), "0.1.0");
        assert_eq!(text(field(&doc, "group")), "module");
        assert!(text(field(&doc, "complexity")).starts_with("O(1)"));
        let Value::Array(arguments) = field(&doc, "arguments") else {
            panic!("no argument list for {command}");
        };
        let names: Vec<String> = arguments.iter().map(|a| text(field(a, "name"))).collect();
        assert_eq!(names, expected_args, "{command}");
        assert_eq!(text(field(&arguments[0], "type")), "key");
        assert_eq!(text(field(&arguments[1], "type")), "integer");
        let quantity_at = names.iter().position(|name| name == "quantity").unwrap();
        // The flags, between the quantity and BLOCK's timeout: each its name as a token;
        // CL.WINDOW's cells, CL.FIXED's offset and BAN's lockout, integers after theirs.
        for (flag, name) in arguments
            .iter()
            .zip(&names)
            .take(arguments.len() - 1)
            .skip(quantity_at + 1)
        {
            if let Some(token) = [("n", "BUCKETS"), ("minutes", "OFFSET"), ("lockout", "BAN")]
                .iter()
                .find_map(|&(valued, token)| (name == valued).then_some(token))
            {
                assert_eq!(text(field(flag, "type")), "integer");
                assert_eq!(text(field(flag, "token")), token);
                continue;
            }
            assert_eq!(text(field(flag, "type")), "pure-token");
            assert_eq!(text(field(flag, "token")), name.to_uppercase());
        }
        // CL.FIXED's period is a span or a calendar's unit, by its word.
        if command == "cl.fixed" {
            assert_eq!(text(field(&arguments[2], "type")), "oneof");
            let Value::Array(choices) = field(&arguments[2], "arguments") else {
                panic!("no choices for CL.FIXED's period");
            };
            let choices: Vec<(String, String)> = choices
                .iter()
                .map(|c| (text(field(c, "name")), text(field(c, "type"))))
                .collect();
            let expected: Vec<(String, String)> = [
                ("span", "integer"),
                ("day", "pure-token"),
                ("week", "pure-token"),
                ("month", "pure-token"),
                ("year", "pure-token"),
            ]
            .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
            .into();
            assert_eq!(choices, expected);
        }
        let block = arguments.last().unwrap();
        assert_eq!(text(field(block, "type")), "integer");
        assert_eq!(text(field(block, "token")), "BLOCK");
        for optional in &arguments[quantity_at..] {
            let flags: Vec<String> = redis::from_redis_value(field(optional, "flags")).unwrap();
            assert_eq!(flags, ["optional"], "{command}");
        }
    }
    // The concurrency limit: a holder is a string; CL.RELEASE takes nothing more.
    for (command, expected) in [
        (
            "cl.lease",
            &[
                ("key", "key"),
                ("limit", "integer"),
                ("lease_time", "integer"),
                ("holder", "string"),
                ("ms", "pure-token"),
                ("dryrun", "pure-token"),
                ("timeout", "integer"),
            ][..],
        ),
        ("cl.release", &[("key", "key"), ("holder", "string")]),
        ("cl.holders", &[("key", "key"), ("ms", "pure-token")]),
        // Guava's limiter: BURST's span, and WARMUP's block of a span and COLD's factor.
        (
            "cl.smooth",
            &[
                ("key", "key"),
                ("permits", "integer"),
                ("period", "integer"),
                ("quantity", "integer"),
                ("ms", "pure-token"),
                ("span", "integer"),
                ("warmup", "block"),
                ("dryrun", "pure-token"),
                ("lockout", "integer"),
                ("timeout", "integer"),
            ][..],
        ),
    ] {
        let docs: Value = run(&mut con, ("COMMAND", &["DOCS", command]));
        let doc = field(&docs, command);
        assert!(text(field(&doc, "complexity")).starts_with("O("));
        let Value::Array(arguments) = field(&doc, "arguments") else {
            panic!("no argument list for {command}");
        };
        let shapes: Vec<(String, String)> = arguments
            .iter()
            .map(|a| (text(field(a, "name")), text(field(a, "type"))))
            .collect();
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(name, kind)| (name.to_string(), kind.to_string()))
            .collect();
        assert_eq!(shapes, expected, "{command}");
    }
}

/// `numkeys`, the keys, then a one-of group of limiter blocks, each led by its keyword, and
/// the options: what redis-cli's hints are made from.
fn command_docs_give_cl_all_its_whole_grammar(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let docs: Value = run(&mut con, ("COMMAND", &["DOCS", "cl.all"]));
    let doc = field(&docs, "cl.all");
    assert!(text(field(&doc, "summary")).contains("all or nothing"));
    let Value::Array(arguments) = field(&doc, "arguments") else {
        panic!("no argument list");
    };
    let shape = |arg: &Value| {
        let flags: Vec<String> = pairs(arg)
            .into_iter()
            .find(|(key, _)| key == "flags")
            .map(|(_, v)| redis::from_redis_value(v).unwrap())
            .unwrap_or_default();
        let token = pairs(arg)
            .into_iter()
            .find(|(key, _)| key == "token")
            .map(|(_, v)| text(v));
        (
            text(field(arg, "name")),
            text(field(arg, "type")),
            token,
            flags,
        )
    };
    let owned = |name: &str, kind: &str, token: Option<&str>, flags: &[&str]| {
        (
            name.to_owned(),
            kind.to_owned(),
            token.map(str::to_owned),
            flags.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        )
    };
    let top: Vec<_> = arguments.iter().map(shape).collect();
    assert_eq!(
        top,
        [
            owned("numkeys", "integer", None, &[]),
            owned("key", "key", None, &["multiple"]),
            owned("limiter", "oneof", None, &["multiple"]),
            owned("quantity", "integer", Some("QUANTITY"), &["optional"]),
            owned("ms", "pure-token", Some("MS"), &["optional"]),
            owned("refund", "pure-token", Some("REFUND"), &["optional"]),
            owned("dryrun", "pure-token", Some("DRYRUN"), &["optional"]),
            owned("lockout", "integer", Some("BAN"), &["optional"]),
            owned("detail", "pure-token", Some("DETAIL"), &["optional"]),
            owned("holder", "string", Some("HOLDER"), &["optional"]),
            owned("atmost", "pure-token", Some("ATMOST"), &["optional"]),
            owned("timeout", "integer", Some("BLOCK"), &["optional"]),
        ]
    );
    let Value::Array(blocks) = field(&arguments[2], "arguments") else {
        panic!("no limiter blocks");
    };
    let blocks: Vec<(String, Option<String>, Vec<String>)> = blocks
        .iter()
        .map(|block| {
            let (name, kind, token, _) = shape(block);
            assert_eq!(kind, "block", "{name}");
            let Value::Array(params) = field(block, "arguments") else {
                panic!("no parameters in {name}");
            };
            let params = params.iter().map(|p| text(field(p, "name"))).collect();
            (name, token, params)
        })
        .collect();
    let block = |name: &str, token: &str, params: &[&str]| {
        (
            name.to_owned(),
            Some(token.to_owned()),
            params.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        blocks,
        [
            block("throttle", "THROTTLE", &["max_burst", "count", "period"]),
            block("fixed", "FIXED", &["limit", "period", "align", "minutes"]),
            block("window", "WINDOW", &["limit", "period", "n"]),
            block("lease", "LEASE", &["limit", "lease_time"]),
        ]
    );
}

fn the_commands_carry_their_acl_categories(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let kind = ServerKind::of(&mut con);
    // What the server lets modules do decides, not which binary this is: Redis 7.0 has no API
    // for categories (module commands are in @all only), 7.2 lets modules use the server's,
    // 7.4 and Valkey 8 let them add their own. COMMAND INFO shows them on every server (Redis's
    // ACL CAT leaves module commands out).
    for command in [
        "cl.throttle",
        "cl.fixed",
        "cl.window",
        "cl.all",
        "cl.lease",
        "cl.release",
        "cl.holders",
        "cl.smooth",
    ] {
        // CL.RELEASE never waits; CL.HOLDERS only reads.
        let waits = !["cl.release", "cl.holders"].contains(&command);
        let (kind_of_access, fast) = match command {
            "cl.holders" => ("@read", false),
            _ => ("@write", true),
        };
        let info: Vec<Vec<Value>> = run(&mut con, ("COMMAND", &["INFO", command]));
        let categories: Vec<String> = redis::from_redis_value(info[0][6].clone()).unwrap();
        let has = |category: &str| categories.iter().any(|c| c == category);
        assert_eq!(
            has(kind_of_access) && has("@fast") == fast && has("@blocking") == waits,
            kind.module_command_categories(),
            "{kind:?} {command} {categories:?}"
        );
        assert!(!has("@blocking") || waits, "{command} {categories:?}");
        assert!(!has("@blocking") || waits, "{command} {categories:?}");
        assert_eq!(
            has("@ratelimit"),
            kind.module_own_categories(),
            "{kind:?} {command} {categories:?}"
        );
    }
    let own = redis::cmd("ACL")
        .arg(&["CAT", "ratelimit"])
        .query::<Vec<String>>(&mut con);
    assert_eq!(own.is_ok(), kind.module_own_categories(), "{kind:?}");
}

fn counters(con: &mut redis::Connection) -> String {
    stats_line(con, "cl_fixed")
}

fn a_resetstat_the_server_refuses_or_discards_leaves_the_counters(flavor: Flavor) {
    let server = Server::start_with(
        flavor,
        Options {
            args: vec!["--requirepass".into(), "secret".into()],
            ..Options::default()
        },
    );
    let mut admin = server.connection();
    run::<()>(&mut admin, ("AUTH", "secret"));
    limiter(&mut admin, "CL.FIXED", &["f", "5", "60"]);
    let before = counters(&mut admin);
    assert!(before.starts_with("calls=1,allowed=1,"), "{before}");

    // Not authenticated: NOAUTH.
    let mut stranger = server.connection();
    let refused = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query::<()>(&mut stranger);
    assert!(refused.is_err());
    assert_eq!(
        counters(&mut admin),
        before,
        "after an unauthenticated RESETSTAT"
    );

    // Queued in a transaction that is discarded.
    run::<()>(&mut admin, &["MULTI"]);
    run::<()>(&mut admin, ("CONFIG", "RESETSTAT"));
    run::<()>(&mut admin, &["DISCARD"]);
    assert_eq!(
        counters(&mut admin),
        before,
        "after a discarded transaction"
    );

    // From a script, which may not run CONFIG.
    let script = redis::cmd("EVAL")
        .arg(&["return redis.call('config', 'resetstat')", "0"])
        .query::<redis::Value>(&mut admin);
    assert!(script.is_err());
    assert_eq!(counters(&mut admin), before, "after a refused script");

    // Executed in a transaction, between two calls: only the one after it remains.
    run::<()>(&mut admin, &["MULTI"]);
    for args in [
        &["CL.FIXED", "f", "5", "60"][..],
        &["CONFIG", "RESETSTAT"],
        &["CL.FIXED", "f", "5", "60", "0"],
    ] {
        let _: () = redis::cmd(args[0])
            .arg(&args[1..])
            .query(&mut admin)
            .unwrap();
    }
    let _: redis::Value = run(&mut admin, &["EXEC"]);
    assert_eq!(
        counters(&mut admin),
        "calls=1,allowed=0,denied=0,peeks=1,refunds=0,errors=0"
    );
}

fn a_resetstat_waiting_in_a_transaction_does_not_hide_others(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut waiting = server.connection();
    let mut con = server.connection();
    let fixed = |con: &mut redis::Connection, times: usize| {
        for _ in 0..times {
            limiter(con, "CL.FIXED", &["f", "100", "60"]);
        }
    };
    let resetstat = |con: &mut redis::Connection| {
        run::<()>(con, ("CONFIG", "RESETSTAT"));
    };
    run::<()>(&mut waiting, &["MULTI"]);
    resetstat(&mut waiting);
    fixed(&mut con, 3);
    resetstat(&mut con);
    resetstat(&mut con);
    fixed(&mut con, 5);
    assert!(
        counters(&mut con).starts_with("calls=5,"),
        "{}",
        counters(&mut con)
    );
    // The transaction runs its RESETSTAT now.
    let _: redis::Value = run(&mut waiting, &["EXEC"]);
    fixed(&mut con, 2);
    assert!(
        counters(&mut con).starts_with("calls=2,"),
        "{}",
        counters(&mut con)
    );
    // One discarded: nothing changes, then or later.
    run::<()>(&mut waiting, &["MULTI"]);
    resetstat(&mut waiting);
    run::<()>(&mut waiting, &["DISCARD"]);
    fixed(&mut con, 1);
    let _: redis::Value = redis::cmd("EXEC")
        .query(&mut con)
        .ok()
        .unwrap_or(redis::Value::Nil);
    assert!(
        counters(&mut con).starts_with("calls=3,"),
        "{}",
        counters(&mut con)
    );
}

/// The server's statistics show little that changes across such a transaction once another
/// client has just reset them: CL.ALL's own command statistics are among what tells.
fn a_resetstat_among_cl_all_calls_in_a_transaction_is_seen(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut queued = server.connection();
    let mut other = server.connection();
    let all = ["1", "a", "FIXED", "100", "60"];
    run::<()>(&mut queued, &["MULTI"]);
    run::<()>(&mut other, ("CONFIG", "RESETSTAT"));
    for _ in 0..2 {
        run::<()>(&mut queued, ("CL.ALL", &all));
    }
    run::<()>(&mut queued, ("CONFIG", "RESETSTAT"));
    let _: Value = run(&mut queued, &["EXEC"]);
    assert_eq!(
        stats_line(&mut other, "cl_all"),
        "calls=0,allowed=0,denied=0,peeks=0,refunds=0,errors=0"
    );
    let _: Value = run(&mut other, ("CL.ALL", &all));
    assert!(stats_line(&mut other, "cl_all").starts_with("calls=1,allowed=1,"));
}

fn replayed_calls_are_not_counted(flavor: Flavor) {
    let primary = Server::start_with(flavor, crate::harness::aof_options(None));
    let replica = Server::start(flavor);
    crate::harness::replicate(&replica, &primary);
    let mut con = primary.connection();
    limiter(&mut con, "CL.THROTTLE", &["t", "5", "1", "60"]);
    limiter(&mut con, "CL.FIXED", &["f", "5", "60"]);
    limiter(&mut con, "CL.WINDOW", &["w", "5", "60"]);
    limiter(&mut con, "CL.LEASE", &["l", "5", "60", "a"]);
    limiter(&mut con, "CL.LEASE", &["l", "5", "60", "b"]);
    let freed: i64 = run(&mut con, ("CL.RELEASE", &["l", "b"]));
    assert_eq!(freed, 1);
    crate::harness::wait_for_replica(&mut con);
    let zero = "calls=0,allowed=0,denied=0,peeks=0,refunds=0,errors=0";
    let mut on_replica = replica.connection();
    assert!(stats_line(&mut con, "cl_lease").starts_with("calls=2,allowed=2,"));
    for command in ["cl_throttle", "cl_fixed", "cl_window", "cl_release"] {
        assert!(stats_line(&mut con, command).starts_with("calls=1,allowed=1,"));
        assert_eq!(
            stats_line(&mut on_replica, command),
            zero,
            "replica {command}"
        );
    }
    let dir = primary.shutdown();
    let restarted = Server::start_with(flavor, crate::harness::aof_options(Some(dir)));
    let mut con = restarted.connection();
    let keys: i64 = run(&mut con, &["DBSIZE"]);
    assert_eq!(keys, 4, "the AOF was replayed");
    for command in [
        "cl_throttle",
        "cl_fixed",
        "cl_window",
        "cl_lease",
        "cl_release",
    ] {
        assert_eq!(stats_line(&mut con, command), zero, "after AOF {command}");
    }
}

fn module_list_reports_the_crate_version(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(module_version(&mut con), crate_version_number());
}

#[test]
fn the_changelog_covers_this_version() {
    let changelog = include_str!("../../CHANGELOG.md");
    let heading = format!("## {}", env!("CARGO_PKG_VERSION"));
    assert!(
        changelog.lines().any(|line| line.starts_with(&heading)),
        "CHANGELOG.md has no {heading}"
    );
}
