//! The client examples in examples/, run against a real server and checked line by line.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Flavor, Server};

both_servers!(
    the_rust_example_honours_retry_after,
    the_python_example_honours_retry_after
);

/// Checks an example's output: three requests through at once, then each later one limited,
/// waiting what it was told (at most one emission interval, 200 ms), and let through.
fn check(output: &str) {
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "request 1: allowed, 2 of 3 left",
            "request 2: allowed, 1 of 3 left",
            "request 3: allowed, 0 of 3 left",
        ],
        "{output}"
    );
    for (request, pair) in (4..=5).zip(lines[3..].chunks(2)) {
        let wait: u64 = pair[0]
            .strip_prefix(&format!("request {request}: limited, retrying in "))
            .and_then(|rest| rest.strip_suffix(" ms"))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{output}"));
        assert!((1..=200).contains(&wait), "{output}");
        assert_eq!(
            pair[1],
            format!("request {request}: allowed, 0 of 3 left"),
            "{output}"
        );
    }
    assert_eq!(lines.len(), 7, "{output}");
}

fn run(mut command: Command, server: &Server) -> String {
    let output = command
        .env("REDIS_URL", format!("redis://127.0.0.1:{}/", server.port))
        .output()
        .expect("the example runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn the_rust_example_honours_retry_after(flavor: Flavor) {
    let server = Server::start(flavor);
    check(&run(Command::new(rust_example()), &server));
}

/// The example binary `cargo build --examples` leaves beside this profile's test binaries
/// (make test builds it; `cargo test` alone builds examples only as test harnesses).
fn rust_example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/throttle");
    assert!(
        example.exists(),
        "{} is missing: run cargo build --examples first",
        example.display()
    );
    example
}

fn the_python_example_honours_retry_after(flavor: Flavor) {
    let server = Server::start(flavor);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join(".venv/bin/python3");
    let python = if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let mut command = Command::new(python);
    command.arg(root.join("examples/throttle.py"));
    check(&run(command, &server));
}
