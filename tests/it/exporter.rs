//! examples/prometheus/redis-cell.lua, run by the real Prometheus redis_exporter (Debian's
//! prometheus-redis-exporter, which scripts/setup.sh installs) against a real server: its
//! /metrics carries the module's counters and CL.TOP's list, bounded by the script's COUNT.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::server::free_port;
use crate::harness::{run, Flavor, Server};

both_servers!(the_exporter_reads_the_counters_and_the_most_denied_keys);

/// The exporter's binary: `REDIS_EXPORTER`, else Debian's.
fn exporter_binary() -> PathBuf {
    std::env::var_os("REDIS_EXPORTER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/prometheus-redis-exporter"))
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/prometheus/redis-cell.lua")
}

/// The exporter process, stopped when dropped.
struct Exporter {
    child: Child,
    port: u16,
}

impl Exporter {
    fn start(server: &Server) -> Exporter {
        let port = free_port();
        let binary = exporter_binary();
        let child = Command::new(&binary)
            .arg("-redis.addr")
            .arg(format!("redis://127.0.0.1:{}", server.port))
            .arg("-script")
            .arg(script())
            .arg("-web.listen-address")
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "{}: {error} (scripts/setup.sh installs it)",
                    binary.display()
                )
            });
        Exporter { child, port }
    }

    /// One scrape's body, once the exporter answers (within 10 s).
    fn metrics(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(body) = self.get("/metrics") {
                return body;
            }
            assert!(Instant::now() < deadline, "the exporter never answered");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn get(&self, path: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        match response.split_once("\r\n\r\n") {
            Some((head, body))
                if head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200") =>
            {
                Ok(body.to_string())
            }
            _ => Err(std::io::Error::other(response)),
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value the exporter gives `name`, if it gives one: the `redis_script_values` line
/// whose `key` label is `name` (with its backslashes doubled, as the text format writes them),
/// whatever other labels it has (later exporters add `filename`).
fn value(metrics: &str, name: &str) -> Option<f64> {
    let label = format!("key=\"{}\"", name.replace('\\', "\\\\"));
    metrics
        .lines()
        .filter_map(|line| line.strip_prefix("redis_script_values{"))
        .filter_map(|line| line.split_once("} "))
        .find(|(labels, _)| labels.split(',').any(|each| each == label))
        .and_then(|(_, value)| value.trim().parse().ok())
}

fn the_exporter_reads_the_counters_and_the_most_denied_keys(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // Twelve keys denied, key i denied i times, and one key more: the script's COUNT (10)
    // keeps the ten most.
    for i in 1..=12 {
        let key = format!("login:10.0.0.{i}");
        for _ in 0..=i {
            let _: Vec<i64> = run(&mut con, ("CL.THROTTLE", &key, 0, 1, 3600));
        }
    }
    // A key that is no UTF-8, denied once more than the most denied address: written \xNN.
    for _ in 0..14 {
        let _: Vec<i64> = run(&mut con, ("CL.THROTTLE", b"bin\xff\x01\\z", 0, 1, 3600));
    }
    let exporter = Exporter::start(&server);
    let metrics = exporter.metrics();
    let calls: i64 = (1..=12).map(|i| i + 1).sum::<i64>() + 14;
    assert_eq!(
        value(&metrics, "cl_throttle_calls"),
        Some(calls as f64),
        "{metrics}"
    );
    assert_eq!(
        value(&metrics, "cl_throttle_denied"),
        Some(91.0),
        "{metrics}"
    );
    assert_eq!(
        value(&metrics, "cl_throttle_allowed"),
        Some(13.0),
        "{metrics}"
    );
    let odd = r"denied:bin\xFF\x01\x5Cz";
    assert_eq!(value(&metrics, odd), Some(13.0), "{metrics}");
    assert_eq!(value(&metrics, "cl_waiting_now"), Some(0.0), "{metrics}");
    for i in 4..=12 {
        let key = format!("login:10.0.0.{i}");
        assert_eq!(
            value(&metrics, &format!("denied:{key}")),
            Some(i as f64),
            "{metrics}"
        );
        assert_eq!(
            value(&metrics, &format!("denied_error:{key}")),
            Some(0.0),
            "{metrics}"
        );
    }
    for i in 1..=3 {
        assert_eq!(
            value(&metrics, &format!("denied:login:10.0.0.{i}")),
            None,
            "{metrics}"
        );
    }
    let listed = metrics
        .lines()
        .filter(|line| line.starts_with("redis_script_values{") && line.contains("key=\"denied:"))
        .count();
    assert_eq!(listed, 10, "{metrics}");
    // The script's own calls count as CL.TOP's, never as a limiter's.
    let after = exporter.metrics();
    assert_eq!(
        value(&after, "cl_throttle_calls"),
        Some(calls as f64),
        "{after}"
    );
    assert!(
        value(&after, "cl_top_calls").is_some_and(|n| n >= 1.0),
        "{after}"
    );
}
