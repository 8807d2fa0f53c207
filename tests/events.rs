//! Keyspace notifications: each write fires what the server commands it stands in for fire,
//! peeks, denials and errors fire nothing, and a replica fires the same as its primary.

mod harness;

use std::time::Duration;

use harness::{replicate, Flavor, Options, Server};

both_servers!(writes_fire_the_events_of_the_commands_they_replace);

fn notifying(flavor: Flavor) -> Server {
    Server::start_with(
        flavor,
        Options {
            args: vec!["--notify-keyspace-events".into(), "KEA".into()],
            ..Options::default()
        },
    )
}

/// Collects `(event, key)` pairs from `__keyevent@0__:*` until the `SET` on `marker` arrives.
struct Events {
    con: redis::Connection,
}

impl Events {
    fn subscribe(server: &Server) -> Events {
        let mut con = server.connection();
        con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _: () = redis::cmd("PSUBSCRIBE")
            .arg("__keyevent@0__:*")
            .query(&mut con)
            .unwrap();
        Events { con }
    }

    fn until_marker(&mut self, marker: &str) -> Vec<(String, String)> {
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let message = self.con.recv_response().expect("an event in time");
            let redis::Value::Push { data, .. } = &message else {
                let items: Vec<redis::Value> = redis::from_redis_value(message).unwrap();
                seen.push(event(&items));
                if seen.last().is_some_and(|(_, key)| key == marker) {
                    seen.pop();
                    return seen;
                }
                continue;
            };
            seen.push(event(data));
            if seen.last().is_some_and(|(_, key)| key == marker) {
                seen.pop();
                return seen;
            }
        }
        panic!("no marker among {seen:?}");
    }
}

/// `pmessage pattern channel key` as (event, key).
fn event(items: &[redis::Value]) -> (String, String) {
    let text = |i: usize| -> String { redis::from_redis_value(items[i].clone()).unwrap() };
    let channel = text(2);
    let name = channel.rsplit(':').next().unwrap().to_owned();
    (name, text(3))
}

fn writes_fire_the_events_of_the_commands_they_replace(flavor: Flavor) {
    let primary = notifying(flavor);
    let replica = notifying(flavor);
    replicate(&replica, &primary);
    let mut on_primary = Events::subscribe(&primary);
    let mut on_replica = Events::subscribe(&replica);
    let mut con = primary.connection();
    let call = |con: &mut redis::Connection, args: &[&str]| {
        redis::cmd(args[0])
            .arg(&args[1..])
            .query::<redis::Value>(con)
            .ok();
    };
    let _: () = redis::cmd("SET")
        .arg(&["other", "x"])
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(&["list", "x"])
        .query(&mut con)
        .unwrap();
    for args in [
        &["CL.THROTTLE", "t", "0", "1", "60"][..],
        &["CL.THROTTLE", "t", "0", "1", "60"],      // denied
        &["CL.THROTTLE", "t", "0", "1", "60", "0"], // peek
        &["CL.FIXED", "f", "2", "60"],              // opens a window
        &["CL.FIXED", "f", "2", "60"],              // counts into it
        &["CL.FIXED", "f", "2", "60"],              // denied
        &["CL.FIXED", "f", "2", "60", "0"],         // peek
        &["CL.WINDOW", "w", "1", "60"],
        &["CL.WINDOW", "w", "1", "60"], // denied
        &["CL.WINDOW", "w", "1", "60", "0"],
        // Errors: a string that is not a TAT, a TAT that is not a window log, a list.
        &["CL.THROTTLE", "other", "0", "1", "60"],
        &["CL.WINDOW", "t", "1", "60"],
        &["CL.FIXED", "list", "1", "60"],
    ] {
        call(&mut con, args);
    }
    let _: () = redis::cmd("SET")
        .arg(&["marker", "1"])
        .query(&mut con)
        .unwrap();
    let expected: Vec<(String, String)> = [
        ("set", "other"),
        ("rpush", "list"),
        ("set", "t"),
        ("expire", "t"),
        ("incrby", "f"),
        ("expire", "f"),
        ("incrby", "f"),
        ("cl.window", "w"),
        ("expire", "w"),
    ]
    .iter()
    .map(|(e, k)| (e.to_string(), k.to_string()))
    .collect();
    assert_eq!(on_primary.until_marker("marker"), expected, "primary");
    assert_eq!(on_replica.until_marker("marker"), expected, "replica");
}
