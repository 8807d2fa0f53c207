//! Calls that wait (BLOCK), each on its own connection and thread, and the module's count of
//! waiters, which a test watches to know that a call is parked.

use super::query::run;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{stats_field, Server};

/// Every reply read by a test, however long a wait, comes within this.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

pub fn connect(server: &Server) -> redis::Connection {
    let con = server.connection();
    con.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    con
}

/// A field of the module's `cl_waiting` INFO line.
pub fn waiting_field(con: &mut redis::Connection, field: &str) -> i64 {
    stats_field(con, "cl_waiting", field)
}

/// Waits until `count` calls wait in the server.
pub fn until_waiting(con: &mut redis::Connection, count: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiting_field(con, "now") != count {
        assert!(Instant::now() < deadline, "never {count} waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A call made on its own connection, in its own thread: its reply, and when it came.
pub struct Waiter {
    pub handle: JoinHandle<(redis::RedisResult<redis::Value>, Instant)>,
    pub id: i64,
}

impl Waiter {
    pub fn start(server: &Server, command: &str, args: &[impl AsRef<str>]) -> Waiter {
        Waiter::begin(server, false, command, args)
    }

    /// As `start`, with the call sent after `ASKING`, as a cluster client follows an `ASK`.
    pub fn start_asking(server: &Server, command: &str, args: &[impl AsRef<str>]) -> Waiter {
        Waiter::begin(server, true, command, args)
    }

    fn begin(server: &Server, asking: bool, command: &str, args: &[impl AsRef<str>]) -> Waiter {
        let mut con = connect(server);
        let id: i64 = run(&mut con, ("CLIENT", "ID"));
        if asking {
            // The flag holds for the connection's next command, the call.
            run::<()>(&mut con, &["ASKING"]);
        }
        let mut cmd = redis::cmd(command);
        for arg in args {
            cmd.arg(arg.as_ref());
        }
        let handle = std::thread::spawn(move || {
            let reply = cmd.query::<redis::Value>(&mut con);
            (reply, Instant::now())
        });
        Waiter { handle, id }
    }

    /// Starts a call and waits until the server holds it as the `count`-th waiter.
    pub fn parked(
        server: &Server,
        watch: &mut redis::Connection,
        count: i64,
        command: &str,
        args: &[impl AsRef<str>],
    ) -> Waiter {
        let waiter = Waiter::start(server, command, args);
        until_waiting(watch, count);
        waiter
    }

    pub fn reply(self) -> (Vec<i64>, Instant) {
        let (reply, at) = self.handle.join().unwrap();
        let reply = reply.unwrap_or_else(|e| panic!("the waiter got {e}"));
        (redis::from_redis_value(reply).unwrap(), at)
    }

    pub fn error(self) -> String {
        match self.handle.join().unwrap().0 {
            Ok(value) => panic!("the waiter got {value:?}"),
            Err(error) => format!(
                "{} {}",
                error.code().unwrap_or_default(),
                error.detail().unwrap_or_default()
            ),
        }
    }
}

pub fn ms_between(earlier: Instant, later: Instant) -> u128 {
    later.saturating_duration_since(earlier).as_millis()
}
