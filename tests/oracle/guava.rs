// Guava's own RateLimiter, as the oracle CL.SMOOTH is held to: SmoothOracle.java (beside this
// file) replays a trace of calls against it under a fake stopwatch, one JVM run per trace.
// Included (include!) by the integration tests' harness and by src/smooth.rs's unit tests,
// so that both run the oracle one way.

/// Guava's decision on one call, and its state after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub admitted: bool,
    /// How long the caller sleeps when admitted; when denied, how long until it would be.
    pub wait_us: i64,
    pub next_free_us: i64,
    pub stored_bits: u64,
    pub max_bits: u64,
    /// The key expired before Guava's limiter was idle again.
    pub early: bool,
}

/// Guava's jar: `GUAVA_JAR`, or Debian's libguava-java.
fn guava_jar() -> std::path::PathBuf {
    std::env::var_os("GUAVA_JAR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/usr/share/java/guava.jar"))
}

/// The oracle's classes, compiled once per test process, under the target directory.
fn oracle_classes() -> &'static std::path::PathBuf {
    static CLASSES: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CLASSES.get_or_init(|| {
        let tmp = option_env!("CARGO_TARGET_TMPDIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp"));
        let out = tmp.join(format!("smooth-oracle-{}", std::process::id()));
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/SmoothOracle.java");
        let status = std::process::Command::new("javac")
            .arg("-cp")
            .arg(guava_jar())
            .arg("-d")
            .arg(&out)
            .arg(source)
            .status()
            .expect("javac runs (scripts/setup.sh installs openjdk-17-jdk-headless)");
        assert!(status.success(), "javac {source} failed");
        out
    })
}

/// Guava's decisions on every call of `trace` (SmoothOracle's input format), in order.
pub fn decide(trace: &str) -> Vec<Decided> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let class_path = format!("{}:{}", oracle_classes().display(), guava_jar().display());
    let mut java = Command::new("java")
        .args(["-cp", &class_path, "com.google.common.util.concurrent.SmoothOracle"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("java runs (scripts/setup.sh installs openjdk-17-jdk-headless)");
    let mut stdin = java.stdin.take().expect("piped");
    let input = trace.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = java.wait_with_output().expect("the oracle ends");
    writer.join().expect("writer").expect("trace written");
    assert!(output.status.success(), "the oracle failed: {:?}", output.status);
    String::from_utf8(output.stdout)
        .expect("text")
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [admitted, wait, next_free, stored, max, early] = fields[..] else {
                panic!("the oracle's line `{line}`");
            };
            let bits = |hex: &str| u64::from_str_radix(hex, 16).expect("hex bits");
            Decided {
                admitted: admitted == "1",
                wait_us: wait.parse().expect("wait"),
                next_free_us: next_free.parse().expect("next free"),
                stored_bits: bits(stored),
                max_bits: bits(max),
                early: early == "1",
            }
        })
        .collect()
}
