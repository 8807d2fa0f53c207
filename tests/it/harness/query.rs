//! Calls and readings: a limiter's five integers, an error's text, INFO fields, a key's
//! state, the server's clock and what it is.

use super::server::Server;

/// Runs one command, given as its words (`&["DBSIZE"]`, `("SET", key, "v")`), and returns
/// its reply as `T`; panics, naming the command, if it fails.
pub fn run<T: redis::FromRedisValue>(
    con: &mut impl redis::ConnectionLike,
    words: impl redis::ToRedisArgs + std::fmt::Debug,
) -> T {
    let mut cmd = redis::Cmd::new();
    cmd.arg(&words);
    cmd.query(con).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

/// The version MODULE LIST gives redis-cell.
pub fn module_version(con: &mut impl redis::ConnectionLike) -> i64 {
    let modules: Vec<Vec<redis::Value>> = run(con, &["MODULE", "LIST"]);
    let text = |value: &redis::Value| redis::from_redis_value::<String>(value.clone()).ok();
    let ours = modules
        .iter()
        .find(|fields| {
            fields
                .iter()
                .any(|v| text(v).as_deref() == Some("redis-cell"))
        })
        .expect("redis-cell is listed");
    ours.iter()
        .position(|v| text(v).as_deref() == Some("ver"))
        .and_then(|at| ours.get(at + 1))
        .map(|v| redis::from_redis_value::<i64>(v.clone()).unwrap())
        .expect("MODULE LIST gives its version")
}

/// The crate's version as the module reports it: major·10000 + minor·100 + patch.
pub fn crate_version_number() -> i64 {
    let mut parts = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse::<i64>().unwrap());
    parts.next().unwrap() * 10_000 + parts.next().unwrap() * 100 + parts.next().unwrap()
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
    let info: String = run(con, ("INFO", section));
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .trim()
        .to_owned()
}

/// The module's INFO line for `command` (`cl_throttle`, …): `calls=…,allowed=…,…`.
pub fn stats_line(con: &mut redis::Connection, command: &str) -> String {
    let info: String = run(con, ("INFO", "redis-cell"));
    let prefix = format!("redis-cell_{command}:");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {info}"))
        .trim()
        .to_owned()
}

/// One number of a line of the module's INFO section (`cl_lease`: `calls=…,allowed=…`).
pub fn stats_field(con: &mut redis::Connection, line_name: &str, field: &str) -> i64 {
    let line = stats_line(con, line_name);
    line.split(',')
        .find_map(|pair| pair.strip_prefix(&format!("{field}=")))
        .unwrap_or_else(|| panic!("no {field} in {line}"))
        .parse()
        .unwrap()
}

/// Changes since the last save: what a write counts toward RDB save points.
pub fn dirty(con: &mut redis::Connection) -> i64 {
    info_field(con, "persistence", "rdb_changes_since_last_save")
        .parse()
        .unwrap()
}

/// What a key holds: its value and its absolute expiry in ms (-1 none, -2 no key).
pub fn snapshot(con: &mut redis::Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    let value: Option<Vec<u8>> = run(con, ("GET", key));
    let expiry: i64 = run(con, ("PEXPIRETIME", key));
    (value, expiry)
}

/// The key's serialized value, as `DUMP` gives it.
pub fn dump(con: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    run(con, ("DUMP", key))
}

/// The server's clock, from `TIME`.
pub fn server_now_ns(con: &mut redis::Connection) -> i64 {
    let (seconds, micros): (i64, i64) = run(con, &["TIME"]);
    seconds * 1_000_000_000 + micros * 1_000
}

/// A key as a replica or a restart must reproduce it: name, value and absolute expiry, DUMP.
pub type KeyRecord = (Vec<u8>, (Option<Vec<u8>>, i64), Option<Vec<u8>>);

/// Every key of the current database, of any type, sorted by name. A key that expires between
/// `KEYS` and its reading is left out, as it is from a later reading elsewhere: a refund that
/// drains a GCRA leaves a TAT that expires within the millisecond.
pub fn keyspace(con: &mut redis::Connection) -> Vec<KeyRecord> {
    let mut keys: Vec<Vec<u8>> = run(con, ("KEYS", "*"));
    keys.sort();
    keys.into_iter()
        .filter_map(|key| {
            // A key of another type (a list beside the limiters) has no value to GET: its DUMP
            // holds it.
            let kind: String = run(con, ("TYPE", &key));
            let state = if kind == "string" {
                snapshot(con, &key)
            } else {
                (None, run(con, ("PEXPIRETIME", &key)))
            };
            let dumped = dump(con, &key);
            (state.1 != -2 && dumped.is_some()).then_some((key, state, dumped))
        })
        .collect()
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
        let info: String = run(con, ("INFO", "server"));
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
