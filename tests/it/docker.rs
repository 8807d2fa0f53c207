//! The Docker lane: builds the image from the Dockerfile (the official Redis image with the
//! module loaded) and runs the basic contract against a container of it.
//! `cargo test --features docker --test it -- docker::`; needs a Docker engine.
#![cfg(feature = "docker")]

use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::{SyncBuilder, SyncRunner};
use testcontainers::GenericBuildableImage;

#[test]
fn the_image_serves_all_three_commands() {
    let root = env!("CARGO_MANIFEST_DIR");
    let image = GenericBuildableImage::new("redis-cell", "test")
        .with_dockerfile(format!("{root}/Dockerfile"))
        .with_file(format!("{root}/Cargo.toml"), "Cargo.toml")
        .with_file(format!("{root}/Cargo.lock"), "Cargo.lock")
        .with_file(format!("{root}/src"), "src")
        .build_image()
        .expect("the Dockerfile builds");
    let container = image
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
        .with_exposed_port(6379.tcp())
        .start()
        .expect("the container starts");
    let port = container
        .get_host_port_ipv4(6379.tcp())
        .expect("a mapped port");
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|client| client.get_connection())
        .expect("a connection");

    let call = |con: &mut redis::Connection, command: &str, args: &[&str]| -> Vec<i64> {
        redis::cmd(command).arg(args).query(con).expect("a reply")
    };
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
        call(&mut con, "CL.FIXED", &["f", "2", "60"]),
        [0, 2, 1, -1, 60]
    );
    assert_eq!(
        call(&mut con, "CL.WINDOW", &["w", "2", "60"]),
        [0, 2, 1, -1, 60]
    );
    let error = redis::cmd("CL.FIXED")
        .arg(&["f", "0", "60"])
        .query::<Vec<i64>>(&mut con)
        .expect_err("limit 0 is refused");
    assert_eq!(error.code(), Some("ERR"));
    let modules: redis::Value = redis::cmd("MODULE").arg("LIST").query(&mut con).unwrap();
    assert!(format!("{modules:?}").contains("redis-cell"));
}
