//! A real server process with the module loaded: the `redis-server` or `valkey-server` that
//! `REDIS_SERVER` or `VALKEY_SERVER` names (paths.rs), on a free loopback port, stopped and
//! cleaned up when dropped, even when a test fails.

use super::query::run;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::clock::{FakeClock, LIBFAKETIME};
use super::paths::{module_path, Flavor};

#[derive(Default)]
pub struct Options {
    /// Extra `--name value` configuration, as separate words.
    pub args: Vec<String>,
    /// Run under libfaketime, starting at this Unix time in milliseconds.
    pub fake_clock_ms: Option<i64>,
    /// Start in this data directory (a restart) instead of a fresh one; the server owns it
    /// until `shutdown` or `kill` hands it back.
    pub dir: Option<DataDir>,
    /// Start without loading the module.
    pub without_module: bool,
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
    data: Option<DataDir>,
    child: Child,
    clock: Option<FakeClock>,
}

/// A server's data directory, removed when dropped, also when the test holding it fails. It
/// passes from server to server across restarts, so that no restart leaves it behind.
pub struct DataDir(PathBuf);

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

impl DataDir {
    /// An empty directory of its own under the temporary directory.
    pub fn fresh() -> DataDir {
        let dir = std::env::temp_dir().join(format!(
            "redis-cell-test-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create server dir");
        DataDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Flavor {
    /// The first of the servers under test whose clock libfaketime can control. A test
    /// that needs one cannot check its claim without: it fails, saying so.
    pub fn with_controllable_clock() -> Flavor {
        [Flavor::Valkey, Flavor::Redis]
            .into_iter()
            .find(|&flavor| Server::runs_under_libfaketime(flavor))
            .unwrap_or_else(|| {
                panic!(
                    "neither {} nor {} runs under libfaketime, and this test needs its clock \
                     controlled: run it against a server that does, or leave the tests out \
                     by name (--skip under_a_controlled_clock)",
                    Flavor::Valkey.binary().display(),
                    Flavor::Redis.binary().display()
                )
            })
    }
}

/// Whether `binary` starts under libfaketime and reads its frozen clock, within the 15 s a
/// start is given.
fn starts_under_libfaketime(binary: &Path) -> bool {
    const FROZEN_AT_MS: i64 = 1_900_000_000_000;
    let data = DataDir::fresh();
    let port = free_port();
    let mut command = server_command(binary, port, data.path());
    under_fake_clock(&mut command, data.path(), FROZEN_AT_MS);
    let Ok(mut child) = command.spawn() else {
        return false;
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut frozen = false;
    while !frozen && Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
        frozen = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(1)))
            .and_then(|mut con| redis::cmd("TIME").query::<(i64, i64)>(&mut con))
            .is_ok_and(|(seconds, _)| seconds == FROZEN_AT_MS / 1000);
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    frozen
}

/// A server on `port` in `dir`, on loopback, in the foreground, saving nothing, silent.
fn server_command(binary: &Path, port: u16, dir: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Whatever the caller's environment: the module's panics must not walk the stack,
        // as Rust's default hook then does, inside the server (tests/it/guard.rs).
        .env("RUST_BACKTRACE", "1");
    command
}

/// Runs `command` under libfaketime, its wall clock frozen at `start_ms` in a clock file in
/// `dir`, until the test moves it.
fn under_fake_clock(command: &mut Command, dir: &Path, start_ms: i64) -> FakeClock {
    let clock = FakeClock {
        file: dir.join("faketime"),
    };
    clock.set_ms(start_ms);
    command
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME_TIMESTAMP_FILE", &clock.file)
        .env("FAKETIME_NO_CACHE", "1");
    clock
}

/// A free loopback port, for a server or for a process beside one.
pub fn free_port() -> u16 {
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

    /// A server that has not loaded the module, as Redis 6.2 must be.
    pub fn bare(flavor: Flavor) -> Server {
        Server::start_with(
            flavor,
            Options {
                without_module: true,
                ..Options::default()
            },
        )
    }

    pub fn start_with(flavor: Flavor, mut options: Options) -> Server {
        let mut data = options.dir.take().unwrap_or_else(DataDir::fresh);
        // A port picked free can be taken by a parallel test before the server binds it.
        let mut last_error = String::new();
        for _ in 0..5 {
            match Server::try_start(flavor, &options, data) {
                Ok(server) => return server,
                Err((error, back)) => {
                    last_error = error;
                    data = back;
                }
            }
        }
        panic!("{flavor:?} did not start: {last_error}");
    }

    /// Starts a server in `data`; when it does not come up, the directory comes back with
    /// the error, for the next try.
    fn try_start(
        flavor: Flavor,
        options: &Options,
        data: DataDir,
    ) -> Result<Server, (String, DataDir)> {
        let dir = data.path().to_path_buf();
        let port = if options.cluster {
            free_cluster_port()
        } else {
            free_port()
        };
        let log = dir.join("server.log");
        let mut command = server_command(&flavor.binary(), port, &dir);
        command
            .arg("--logfile")
            .arg(&log)
            .args(&options.args)
            .args(if options.cluster {
                &["--cluster-enabled", "yes", "--cluster-node-timeout", "3000"][..]
            } else {
                // A replica's full sync through a snapshot on disk, which starts at once, where
                // a diskless one waits 5 s for more replicas to share it. Not in a cluster,
                // whose failovers the tests time with the servers' own defaults.
                &["--repl-diskless-sync", "no"][..]
            });
        if !options.without_module {
            command.arg("--loadmodule").arg(module_path());
        }
        let clock = options.fake_clock_ms.map(|start| {
            let clock = under_fake_clock(&mut command, &dir, start);
            if !options.exact_clock {
                command.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            }
            clock
        });
        let child = match command.spawn() {
            Ok(child) => child,
            Err(error) => return Err((error.to_string(), data)),
        };
        let mut server = Server {
            flavor,
            port,
            dir,
            data: Some(data),
            child,
            clock,
        };
        match server.wait_ready() {
            Ok(()) => Ok(server),
            Err(error) => match server.data.take() {
                Some(data) => Err((error, data)),
                None => unreachable!("the server was just given its directory"),
            },
        }
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

    /// A server under libfaketime, its wall clock frozen at `unix_ms` until the test moves
    /// it: the first of Valkey and Redis that runs under it. A fast cron makes the server
    /// re-read the moved clock sooner. The tests that need one have `under_a_controlled_clock`
    /// in their names, and fail where no server can have its clock controlled: a run on such
    /// servers leaves them out by that name (scripts/test.sh's second pass does).
    pub fn with_fake_clock(unix_ms: i64) -> Server {
        Server::start_with(
            Flavor::with_controllable_clock(),
            Options {
                fake_clock_ms: Some(unix_ms),
                args: vec!["--hz".into(), "100".into()],
                ..Options::default()
            },
        )
    }

    /// As `with_fake_clock`, with the monotonic clock frozen as well: every reading of the
    /// clock, to the microsecond, is the instant last set, where `with_fake_clock`'s server
    /// may read up to a millisecond past it (Valkey advances its wall-clock reading by the
    /// real monotonic clock). The price: the server's timers stand still (no cron, so no
    /// active expiry; keys still expire when read).
    pub fn with_exact_fake_clock(unix_ms: i64) -> Server {
        Server::with_exact_fake_clock_on(Flavor::with_controllable_clock(), unix_ms)
    }

    /// `flavor`'s server as `with_exact_fake_clock`'s; it must run under libfaketime.
    pub fn with_exact_fake_clock_on(flavor: Flavor, unix_ms: i64) -> Server {
        assert!(
            Server::runs_under_libfaketime(flavor),
            "{} does not run under libfaketime, and this test needs its clock controlled",
            flavor.binary().display()
        );
        Server::start_with(
            flavor,
            Options {
                fake_clock_ms: Some(unix_ms),
                exact_clock: true,
                ..Options::default()
            },
        )
    }

    /// Whether `flavor`'s server starts under libfaketime, asked once per binary. Servers
    /// linked with a system jemalloc deadlock as libfaketime sets itself up (Debian's Redis
    /// 7.0 and 8.0, and its Valkey 8.1). The others answer within a start's own deadline,
    /// however busy the machine.
    pub fn runs_under_libfaketime(flavor: Flavor) -> bool {
        static ANSWERS: std::sync::Mutex<Vec<(PathBuf, bool)>> = std::sync::Mutex::new(Vec::new());
        let answers = || {
            ANSWERS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        let binary = flavor.binary();
        let known = answers()
            .iter()
            .find(|(known, _)| *known == binary)
            .map(|&(_, runs)| runs);
        known.unwrap_or_else(|| {
            let runs = starts_under_libfaketime(&binary);
            answers().push((binary.clone(), runs));
            runs
        })
    }

    /// Moves the fake clock to `unix_ms` and waits until the server reads it. Valkey reads
    /// the wall clock from time to time and advances that reading by its (real) monotonic
    /// clock in between, so its frozen clock runs ahead by up to a fraction of a millisecond
    /// until the next reading; this returns just after one, so the next command reads the
    /// same millisecond.
    pub fn set_clock_ms(&self, unix_ms: i64) {
        self.fake_clock().set_ms(unix_ms);
        self.until_time_reads(&format!("{unix_ms} ms"), |micros| {
            micros / 1000 == unix_ms && micros % 1000 < 300
        });
    }

    /// Moves an exact fake clock (`with_exact_fake_clock`) to microsecond `unix_us`, and
    /// waits until the server reads it.
    pub fn set_clock_us(&self, unix_us: i64) {
        self.fake_clock().set_us(unix_us);
        self.until_time_reads(&format!("{unix_us} µs"), |micros| micros == unix_us);
    }

    fn fake_clock(&self) -> &FakeClock {
        self.clock
            .as_ref()
            .expect("server started without a fake clock")
    }

    /// Waits until the server's `TIME`, in microseconds, is what `wanted` accepts.
    fn until_time_reads(&self, what: &str, wanted: impl Fn(i64) -> bool) {
        let mut con = self.connection();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (seconds, micros): (i64, i64) = run(&mut con, &["TIME"]);
            if wanted(seconds * 1_000_000 + micros) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "server clock stuck at {seconds}.{micros:06}, wanted {what}"
            );
            std::thread::sleep(Duration::from_micros(100));
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

    /// Stops the server with SHUTDOWN (so it finishes its AOF/RDB) and hands its directory
    /// back, for a restart.
    pub fn shutdown(mut self) -> DataDir {
        let mut con = self.connection();
        let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut con);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && self.is_running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.take_dir()
    }

    /// Kills the server with SIGKILL, as a crash would, and hands its directory back, for a
    /// restart.
    pub fn kill(mut self) -> DataDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.take_dir()
    }

    fn take_dir(&mut self) -> DataDir {
        match self.data.take() {
            Some(data) => data,
            None => {
                unreachable!("only shutdown and kill take the directory, and consume the server")
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Only then does `data`, dropped after this, remove the directory.
    }
}
