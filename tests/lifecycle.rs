//! Loading the module: where it refuses, and that it refuses without harm.

mod harness;

use harness::{Flavor, Options, Server};

#[test]
fn redis_6_refuses_to_load_it_and_keeps_running() {
    let server = Server::start_with(
        Flavor::Redis6,
        Options {
            without_module: true,
            ..Options::default()
        },
    );
    let mut con = server.connection();
    let module = harness::module_path();
    let loaded = redis::cmd("MODULE")
        .arg("LOAD")
        .arg(module.to_str().unwrap())
        .query::<String>(&mut con);
    assert!(loaded.is_err(), "loaded on Redis 6.2");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let log = std::fs::read_to_string(server.dir.join("server.log")).unwrap();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("redis-cell needs Redis 7.0 or later"))
        .collect();
    assert_eq!(refusals.len(), 1, "{log}");
    assert!(
        refusals[0].contains("this server is 6.2."),
        "{}",
        refusals[0]
    );
    let unknown = redis::cmd("CL.THROTTLE")
        .arg(&["k", "1", "1", "1"])
        .query::<Vec<i64>>(&mut con);
    assert!(unknown.is_err());
}

#[test]
fn module_load_and_unload_at_runtime() {
    for flavor in [Flavor::Redis, Flavor::Valkey] {
        let server = Server::start_with(
            flavor,
            Options {
                without_module: true,
                args: vec!["--enable-module-command".into(), "yes".into()],
                ..Options::default()
            },
        );
        let mut con = server.connection();
        let module = harness::module_path();
        let _: () = redis::cmd("MODULE")
            .arg("LOAD")
            .arg(module.to_str().unwrap())
            .query(&mut con)
            .unwrap();
        let reply: Vec<i64> = redis::cmd("CL.THROTTLE")
            .arg(&["k", "1", "1", "1"])
            .query(&mut con)
            .unwrap();
        assert_eq!(reply, [0, 2, 1, -1, 1]);
        let modules: redis::Value = redis::cmd("MODULE").arg("LIST").query(&mut con).unwrap();
        let listed = format!("{modules:?}");
        assert!(listed.contains("redis-cell"), "{listed}");
        let _: () = redis::cmd("MODULE")
            .arg(&["UNLOAD", "redis-cell"])
            .query(&mut con)
            .unwrap();
        let gone = redis::cmd("CL.THROTTLE")
            .arg(&["k", "1", "1", "1"])
            .query::<Vec<i64>>(&mut con);
        assert!(gone.is_err(), "{flavor:?}: still answering after unload");
        // The limiter's key is an ordinary string and outlives the module.
        let value: Option<String> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
        assert!(value.is_some());
    }
}
