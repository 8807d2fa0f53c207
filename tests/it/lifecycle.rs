//! Loading the module: where it refuses, and that it refuses without harm.

use crate::harness::run;
use crate::harness::{Flavor, Options, Server};

#[test]
fn redis_6_refuses_to_load_it_and_keeps_running() {
    let server = Server::bare(Flavor::Redis6);
    let mut con = server.connection();
    let module = crate::harness::module_path();
    let loaded = redis::cmd("MODULE")
        .arg("LOAD")
        .arg(module.to_str().unwrap())
        .query::<String>(&mut con);
    assert!(loaded.is_err(), "loaded on Redis 6.2");
    let pong: String = run(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
    refused_once(
        &server,
        "redis-cell needs Redis 7.0 or later",
        "this server is 6.2.",
    );
    assert_no_limiter(&mut con);
}

/// The server logged exactly one line with `marker`, and it says `reason`.
fn refused_once(server: &Server, marker: &str, reason: &str) {
    let refusals = crate::harness::log_lines(server, marker);
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains(reason), "{}", refusals[0]);
}

fn assert_no_limiter(con: &mut redis::Connection) {
    let unknown = redis::cmd("CL.THROTTLE")
        .arg(&["k", "1", "1", "1"])
        .query::<Vec<i64>>(con);
    assert!(unknown.is_err(), "{unknown:?}");
}

#[test]
fn module_load_and_unload_at_runtime() {
    for flavor in [Flavor::Redis, Flavor::Valkey] {
        let server = without_module(flavor, &[]);
        let mut con = server.connection();
        crate::harness::module_load(&mut con, &crate::harness::module_path()).unwrap();
        let reply: Vec<i64> = run(&mut con, ("CL.THROTTLE", &["k", "1", "1", "1"]));
        assert_eq!(reply, [0, 2, 1, -1, 1]);
        let modules: redis::Value = run(&mut con, ("MODULE", "LIST"));
        let listed = format!("{modules:?}");
        assert!(listed.contains("redis-cell"), "{listed}");
        run::<()>(&mut con, ("MODULE", &["UNLOAD", "redis-cell"]));
        assert_no_limiter(&mut con);
        // The limiter's key is an ordinary string and outlives the module.
        let value: Option<String> = run(&mut con, ("GET", "k"));
        assert!(value.is_some());
    }
}

fn without_module(flavor: Flavor, extra: &[&str]) -> Server {
    let mut args = vec!["--enable-module-command".to_owned(), "yes".to_owned()];
    args.extend(extra.iter().map(|a| a.to_string()));
    Server::start_with(
        flavor,
        Options {
            without_module: true,
            args,
            ..Options::default()
        },
    )
}

/// The server still serves: INFO, CONFIG RESETSTAT (which the module watches for once
/// loaded), ordinary commands after them, and whatever owns `cl.throttle`.
fn still_serving(server: &mut Server, con: &mut redis::Connection) -> String {
    let _: String = run(con, ("INFO", "everything"));
    run::<()>(con, ("CONFIG", "RESETSTAT"));
    for i in 0..20 {
        run::<()>(con, ("SET", &["k", &i.to_string()]));
        let pong: String = run(con, &["PING"]);
        assert_eq!(pong, "PONG");
    }
    let owner = format!(
        "{:?}",
        run::<redis::Value>(con, ("CL.THROTTLE", &["t", "1", "1", "1"]))
    );
    assert!(server.is_running(), "{}", server.log_tail());
    owner
}

fn a_load_that_conflicts_fails_cleanly(flavor: Flavor) {
    let mut server = without_module(flavor, &[]);
    let mut con = server.connection();
    crate::harness::module_load(&mut con, &crate::harness::conflicting_module_path()).unwrap();
    assert!(crate::harness::module_load(&mut con, &crate::harness::module_path()).is_err());
    let owner = still_serving(&mut server, &mut con);
    assert!(owner.contains("owned by cl-conflict"), "{owner}");
    refused_once(
        &server,
        "redis-cell:",
        "cannot register cl.throttle: the server already has a command of that name",
    );
}

fn a_conflicting_module_loaded_after_leaves_redis_cell_working(flavor: Flavor) {
    let mut server = without_module(flavor, &[]);
    let mut con = server.connection();
    crate::harness::module_load(&mut con, &crate::harness::module_path()).unwrap();
    assert!(
        crate::harness::module_load(&mut con, &crate::harness::conflicting_module_path()).is_err()
    );
    let reply = still_serving(&mut server, &mut con);
    assert!(reply.contains("int(0), int(2)"), "{reply}");
}

fn a_renamed_or_disabled_set_refuses_the_load(flavor: Flavor) {
    for renamed_to in ["SET_RENAMED", ""] {
        let server = without_module(flavor, &["--rename-command", "SET", renamed_to]);
        let mut con = server.connection();
        assert!(
            crate::harness::module_load(&mut con, &crate::harness::module_path()).is_err(),
            "loaded with SET renamed to {renamed_to:?}"
        );
        refused_once(&server, "redis-cell:", "the server has no SET command");
        assert_no_limiter(&mut con);
        let pong: String = run(&mut con, &["PING"]);
        assert_eq!(pong, "PONG");
    }
}

fn a_reload_keeps_the_acl_category(flavor: Flavor) {
    let server = without_module(flavor, &[]);
    let mut con = server.connection();
    let kind = crate::harness::ServerKind::of(&mut con);
    let module = crate::harness::module_path();
    crate::harness::module_load(&mut con, &module).unwrap();
    run::<()>(&mut con, ("MODULE", &["UNLOAD", "redis-cell"]));
    crate::harness::module_load(&mut con, &module).unwrap();

    let info: redis::Value = run(&mut con, ("COMMAND", &["INFO", "cl.throttle"]));
    let listed = format!("{info:?}");
    assert_eq!(
        listed.contains("@ratelimit"),
        kind.module_own_categories(),
        "{kind:?}: {listed}"
    );
    if !kind.module_own_categories() {
        return;
    }
    run::<()>(
        &mut con,
        (
            "ACL",
            &["SETUSER", "limiter", "on", ">secret", "+@ratelimit", "~*"],
        ),
    );
    let mut limiter = server.connection();
    run::<()>(&mut limiter, ("AUTH", &["limiter", "secret"]));
    let reply: Vec<i64> = run(&mut limiter, ("CL.THROTTLE", &["k", "1", "1", "1"]));
    assert_eq!(reply[0], 0);
}

both_servers!(
    a_load_that_conflicts_fails_cleanly,
    a_conflicting_module_loaded_after_leaves_redis_cell_working,
    a_renamed_or_disabled_set_refuses_the_load,
    a_reload_keeps_the_acl_category,
);
