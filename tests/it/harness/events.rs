//! Keyspace events: a server that fires them all, and a subscriber that collects them.

use super::query::run;
use std::time::Duration;

use redis::Value;

use super::paths::Flavor;
use super::server::{Options, Server};

/// A server that fires every keyspace event (`KEA`).
pub fn notifying(flavor: Flavor) -> Server {
    Server::start_with(
        flavor,
        Options {
            args: vec!["--notify-keyspace-events".into(), "KEA".into()],
            ..Options::default()
        },
    )
}

/// Collects `(event, key)` pairs from `__keyevent@0__:*` until the `SET` on `marker` arrives.
pub struct Events {
    con: redis::Connection,
}

impl Events {
    pub fn subscribe(server: &Server) -> Events {
        let mut con = server.connection();
        con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        run::<()>(&mut con, ("PSUBSCRIBE", "__keyevent@0__:*"));
        Events { con }
    }

    pub fn until_marker(&mut self, marker: &str) -> Vec<(String, String)> {
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let message = self.con.recv_response().expect("an event in time");
            let event = match &message {
                Value::Push { data, .. } => event(data),
                _ => event(&redis::from_redis_value::<Vec<Value>>(message).unwrap()),
            };
            if event.1 == marker {
                return seen;
            }
            seen.push(event);
        }
        panic!("no marker among {seen:?}");
    }
}

/// `pmessage pattern channel key` as (event, key).
fn event(items: &[Value]) -> (String, String) {
    let text = |i: usize| -> String { redis::from_redis_value(items[i].clone()).unwrap() };
    let channel = text(2);
    let name = channel.rsplit(':').next().unwrap().to_owned();
    (name, text(3))
}
