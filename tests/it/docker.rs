//! The Docker lane: builds the image from the Dockerfile and checks, through a container's
//! mapped port, what a user of the image gets: each command's worked example, a wait, an
//! error, the module's version, a server that is not root, and an AOF in /data that outlives
//! a restart. `bash scripts/docker-lane.sh` gets an engine and base images, and runs it; by
//! hand, `cargo test --features docker --test it -- docker::` with an engine that can pull
//! the official images.
//!
//! The lane passes the base images (`REDIS_CELL_BUILDER_IMAGE`, `REDIS_CELL_SERVER_IMAGE`)
//! as the Dockerfile's build arguments, and a directory of vendored crates
//! (`REDIS_CELL_VENDOR`, holding `vendor/` and `.cargo/config.toml`) to add to the context.
//! Given `REDIS_CELL_IMAGE` (`name:tag`), the tests run that image instead, as the lane
//! built it from `Dockerfile.bundle` and the release bundle, for either platform.
#![cfg(feature = "docker")]

use crate::harness::run;
use std::time::{Duration, Instant};

use testcontainers::core::{BuildImageOptions, ExecCommand, IntoContainerPort, WaitFor};
use testcontainers::runners::{SyncBuilder, SyncRunner};
use testcontainers::{Container, GenericBuildableImage, GenericImage, ImageExt};

const MODULE: &str = "/usr/local/lib/redis/modules/libredis_cell.so";

/// The image, built once for the tests below, or the one `REDIS_CELL_IMAGE` names.
fn image() -> GenericImage {
    static BUILT: std::sync::OnceLock<GenericImage> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(named) = std::env::var("REDIS_CELL_IMAGE")
                .ok()
                .filter(|v| !v.is_empty())
            {
                // A tag follows the last '/', where a registry's port cannot.
                let (name, tag) = match named.rsplit_once(':') {
                    Some((name, tag)) if !tag.contains('/') => (name, tag),
                    _ => (named.as_str(), "latest"),
                };
                return GenericImage::new(name, tag);
            }
            let root = env!("CARGO_MANIFEST_DIR");
            let mut image = GenericBuildableImage::new("redis-cell", "lane")
                .with_dockerfile(format!("{root}/Dockerfile"))
                .with_file(format!("{root}/Cargo.toml"), "Cargo.toml")
                .with_file(format!("{root}/Cargo.lock"), "Cargo.lock")
                .with_file(format!("{root}/src"), "src");
            if let Some(vendored) = std::env::var_os("REDIS_CELL_VENDOR") {
                let vendored = std::path::PathBuf::from(vendored);
                image = image
                    .with_file(vendored.join("vendor"), "vendor")
                    .with_file(vendored.join(".cargo/config.toml"), ".cargo/config.toml");
            }
            let mut options = BuildImageOptions::new();
            for (arg, variable) in [
                ("BUILDER_IMAGE", "REDIS_CELL_BUILDER_IMAGE"),
                ("SERVER_IMAGE", "REDIS_CELL_SERVER_IMAGE"),
            ] {
                if let Some(value) = std::env::var(variable).ok().filter(|v| !v.is_empty()) {
                    options = options.with_build_arg(arg, value);
                }
            }
            image
                .build_image_with(options)
                .expect("the Dockerfile builds")
        })
        .clone()
}

/// The server's address through the container's mapped port, on the engine's host.
fn address(container: &Container<GenericImage>) -> Option<String> {
    let host = container.get_host().ok()?;
    let port = container.get_host_port_ipv4(6379.tcp()).ok()?;
    Some(format!("redis://{host}:{port}/"))
}

fn connect(container: &Container<GenericImage>) -> redis::Connection {
    let address = address(container).expect("a mapped port");
    let con = redis::Client::open(address)
        .and_then(|client| client.get_connection())
        .expect("a connection");
    con.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    con
}

fn call(con: &mut redis::Connection, command: &str, args: &[&str]) -> Vec<i64> {
    redis::cmd(command)
        .arg(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{command} {args:?}: {e}"))
}

fn ready() -> WaitFor {
    WaitFor::message_on_stdout("Ready to accept connections")
}

#[test]
fn the_image_serves_the_worked_examples_a_wait_and_its_version() {
    let container = image()
        .with_wait_for(ready())
        .with_exposed_port(6379.tcp())
        .start()
        .expect("the container starts");
    let mut con = connect(&container);

    // The worked examples of docs/commands.md.
    for i in 1..=16 {
        assert_eq!(
            call(&mut con, "CL.THROTTLE", &["user123", "15", "30", "60", "1"]),
            [0, 16, 16 - i, -1, 2 * i]
        );
    }
    assert_eq!(
        call(&mut con, "CL.THROTTLE", &["user123", "15", "30", "60", "1"]),
        [1, 16, 0, 2, 32]
    );
    assert_eq!(
        call(&mut con, "CL.FIXED", &["login:alice", "3", "60"]),
        [0, 3, 2, -1, 60]
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", &["api:key42", "100", "60", "1"]),
        [0, 100, 99, -1, 60]
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", &["api:key42", "100", "60", "100"]),
        [1, 100, 99, 60, 60]
    );
    let detail: Vec<Vec<i64>> = run(
        &mut con,
        (
            "CL.ALL",
            &["2", "burst", "daily", "THROTTLE", "9", "10", "1"],
            &["FIXED", "10000", "86400", "DETAIL"],
        ),
    );
    assert_eq!(detail, [[0, 10, 9, -1, 1], [0, 10000, 9999, -1, 86400]]);
    // A refund gives the unit back.
    assert_eq!(
        call(
            &mut con,
            "CL.FIXED",
            &["login:alice", "3", "60", "1", "REFUND"]
        ),
        [0, 3, 3, -1, 0]
    );

    // A call that waits is admitted when its unit fits: 1 per 300 ms.
    assert_eq!(
        call(&mut con, "CL.THROTTLE", &["q", "0", "1", "300", "1", "MS"])[0],
        0
    );
    let asked = Instant::now();
    let waited = call(
        &mut con,
        "CL.THROTTLE",
        &["q", "0", "1", "300", "1", "MS", "BLOCK", "5000"],
    );
    assert_eq!(waited[..3], [0, 1, 0]);
    let after = asked.elapsed();
    assert!(
        after >= Duration::from_millis(200) && after < Duration::from_secs(4),
        "{after:?}"
    );

    let error = redis::cmd("CL.FIXED")
        .arg(&["f", "0", "60"])
        .query::<Vec<i64>>(&mut con)
        .expect_err("limit 0 is refused");
    assert_eq!(error.code(), Some("ERR"));
    assert!(error.to_string().contains("limit must be >= 1"), "{error}");

    assert_eq!(
        crate::harness::module_version(&mut con),
        crate::harness::crate_version_number()
    );
}

#[test]
fn the_server_runs_as_its_own_user_and_keeps_an_aof_in_data_across_a_restart() {
    let container = image()
        .with_wait_for(ready())
        .with_exposed_port(6379.tcp())
        .with_cmd([
            "redis-server",
            "--protected-mode",
            "no",
            "--loadmodule",
            MODULE,
            "--appendonly",
            "yes",
            // No RDB at shutdown: what survives the restart is the AOF's.
            "--save",
            "",
        ])
        .start()
        .expect("the container starts");

    // Every redis-server process in the container, by the real user id /proc gives it.
    let mut exec = container
        .exec(ExecCommand::new([
            "sh",
            "-c",
            "for s in /proc/[0-9]*/status; do \
               grep -q '^Name:.*redis-server' \"$s\" 2>/dev/null \
                 && awk '/^Uid:/ { print $2 }' \"$s\"; \
             done",
        ]))
        .expect("exec in the container");
    let uids = String::from_utf8(exec.stdout_to_vec().unwrap()).unwrap();
    let uids: Vec<&str> = uids.split_whitespace().collect();
    assert!(!uids.is_empty(), "no redis-server process");
    assert!(
        uids.iter().all(|uid| *uid != "0"),
        "redis-server runs as root: {uids:?}"
    );

    let mut con = connect(&container);
    assert_eq!(
        call(&mut con, "CL.FIXED", &["kept", "5", "3600", "2"])[..3],
        [0, 5, 3]
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", &["log", "5", "3600", "4"])[..3],
        [0, 5, 1]
    );
    drop(con);

    container.stop().expect("the container stops");
    container.start().expect("the container starts again");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut con = loop {
        let answered = address(&container).and_then(|address| {
            let mut con = redis::Client::open(address).ok()?.get_connection().ok()?;
            redis::cmd("PING").query::<String>(&mut con).ok()?;
            Some(con)
        });
        if let Some(con) = answered {
            break con;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted server never answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let loading = |con: &mut redis::Connection| -> bool {
        let info: String = run(con, ("INFO", "persistence"));
        info.contains("loading:1")
    };
    while loading(&mut con) {
        assert!(Instant::now() < deadline, "the AOF never loaded");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir: Vec<String> = run(&mut con, ("CONFIG", &["GET", "dir"]));
    assert_eq!(dir[1], "/data");
    let info: String = run(&mut con, ("INFO", "persistence"));
    assert!(info.contains("aof_enabled:1"), "{info}");
    let mut listing = container
        .exec(ExecCommand::new([
            "sh",
            "-c",
            "ls /data /data/appendonlydir",
        ]))
        .expect("exec in the container");
    let listing = String::from_utf8(listing.stdout_to_vec().unwrap()).unwrap();
    assert!(listing.contains(".aof"), "no AOF in /data: {listing}");
    assert!(!listing.contains("dump.rdb"), "an RDB in /data: {listing}");
    // The limiters carry on where they were.
    assert_eq!(
        call(&mut con, "CL.FIXED", &["kept", "5", "3600", "0"])[..3],
        [0, 5, 3]
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", &["log", "5", "3600", "2"])[0],
        1
    );
}
