//! Replicas, the AOF and its commands.

use super::query::run;
use std::time::{Duration, Instant};

use super::query::info_field;
use super::server::{DataDir, Options, Server};

/// Makes `replica` replicate `primary` and waits until the link is up.
pub fn replicate(replica: &Server, primary: &Server) {
    let mut con = replica.connection();
    run::<()>(
        &mut con,
        ("REPLICAOF", &["127.0.0.1", &primary.port.to_string()]),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if info_field(&mut con, "replication", "master_link_status") == "up" {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("replica never synced: {}", replica.log_tail());
}

/// Waits until every write so far on `primary` has reached its one replica.
pub fn wait_for_replica(primary: &mut redis::Connection) {
    let acked: i64 = run(primary, ("WAIT", &["1", "5000"]));
    assert_eq!(acked, 1, "the replica did not acknowledge in time");
}

/// Options for a server persisting every write to its AOF.
pub fn aof_options(dir: Option<DataDir>) -> Options {
    Options {
        args: vec![
            "--appendonly".into(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ],
        dir,
        ..Options::default()
    }
}

/// Commands in the Redis protocol, as an AOF file holds them.
pub fn resp_commands(commands: impl IntoIterator<Item = Vec<String>>) -> Vec<u8> {
    let mut out = Vec::new();
    for args in commands {
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
    }
    out
}
