//! Every way in is guarded: a panic in the module becomes an error reply, and the server
//! keeps serving. A debug build of the module (what `cargo test` loads) panics on purpose on
//! test-only keys: in a command's body, while a call is being parked, as a waiter's timer
//! looks at it, as an admitted waiter takes its units, and as a denial is counted for CL.TOP;
//! a release build has no such keys, so this module runs against the debug build only.

use crate::harness::run;
use crate::harness::{error_of, limiter, log_lines, stats_line, Flavor, Server};

both_servers!(
    a_panic_in_a_command_body_answers_an_error_and_the_server_serves_on,
    a_panic_while_parking_answers_an_error_and_the_server_serves_on,
    a_panic_while_a_waiter_is_tried_answers_it_an_error_and_its_line_moves_on,
    a_panic_after_a_client_was_blocked_answers_it_once_and_unblocks_it,
    a_panic_while_a_denial_is_counted_leaves_its_reply_and_the_list_whole,
);

const BODY: &str = "redis-cell:test-panic:body";
const PARK: &str = "redis-cell:test-panic:park";
const PARKED: &str = "redis-cell:test-panic:parked";
const TIMER: &str = "redis-cell:test-panic:timer";
const REPLY: &str = "redis-cell:test-panic:reply";
const TOP: &str = "redis-cell:test-panic:top";
const INTERNAL: &str = "ERR internal error in redis-cell; nothing was changed";

fn error_for(con: &mut redis::Connection, command: &str, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
    error_of(con, command, &args)
}

fn assert_serving(server: &mut Server, con: &mut redis::Connection) {
    assert!(
        server.is_running(),
        "the server died: {}",
        server.log_tail()
    );
    let pong: String = run(con, &["PING"]);
    assert_eq!(pong, "PONG");
    assert_eq!(
        limiter(con, "CL.THROTTLE", &["after", "0", "1", "60"]),
        [0, 1, 0, -1, 60]
    );
    assert!(
        !log_lines(server, "a defect in the module was caught").is_empty(),
        "no log line for the panic"
    );
    // One line says where it struck, in place of the default hook's report, whose walk of the
    // stack (the servers run with RUST_BACKTRACE=1) brings down a server linked with a system
    // jemalloc, as Debian's Redis 8 and Valkey 8 are.
    assert!(
        !log_lines(server, "redis-cell: panicked at src/fault.rs:").is_empty(),
        "no log line saying where the panic struck"
    );
}

fn a_panic_in_a_command_body_answers_an_error_and_the_server_serves_on(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    let calls: [(&str, &[&str]); 4] = [
        ("CL.THROTTLE", &[BODY, "0", "1", "60"]),
        ("CL.FIXED", &[BODY, "1", "60"]),
        ("CL.WINDOW", &[BODY, "1", "60"]),
        // The panic strikes at the second key, after the first was decided: nothing is written.
        (
            "CL.ALL",
            &["2", "first", BODY, "FIXED", "1", "60", "FIXED", "1", "60"],
        ),
    ];
    for (command, args) in calls {
        assert_eq!(error_for(&mut con, command, args), INTERNAL, "{command}");
    }
    let size: i64 = run(&mut con, &["DBSIZE"]);
    assert_eq!(size, 0, "a panicking call wrote");
    for name in ["cl_throttle", "cl_fixed", "cl_window", "cl_all"] {
        assert_eq!(
            stats_line(&mut con, name),
            "calls=1,allowed=0,denied=0,peeks=0,refunds=0,errors=1",
            "{name}"
        );
    }
    assert_serving(&mut server, &mut con);
}

fn a_panic_while_parking_answers_an_error_and_the_server_serves_on(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &[PARK, "0", "1", "60"]),
        [0, 1, 0, -1, 60]
    );
    // Denied and asked to wait: it is being parked when the panic strikes, before its client
    // is blocked, so it is answered at once.
    let error = error_for(
        &mut con,
        "CL.THROTTLE",
        &[PARK, "0", "1", "60", "BLOCK", "5000"],
    );
    assert_eq!(error, INTERNAL);
    assert!(
        stats_line(&mut con, "cl_waiting").starts_with("now=0,waited=0,"),
        "{}",
        stats_line(&mut con, "cl_waiting")
    );
    // Waiting still works.
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["k", "0", "1", "1", "1", "MS"])[0],
        0
    );
    assert_eq!(
        limiter(
            &mut con,
            "CL.THROTTLE",
            &["k", "0", "1", "1", "1", "MS", "BLOCK", "5000"]
        )[0],
        0
    );
    assert_serving(&mut server, &mut con);
}

fn a_panic_while_a_waiter_is_tried_answers_it_an_error_and_its_line_moves_on(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    // One unit per 200 ms. The waiter's timer looks after 200 ms: on TIMER it panics there,
    // on REPLY once its units fit, as it takes them in its reply callback.
    for key in [TIMER, REPLY] {
        let args = [key, "0", "1", "200", "1", "MS"];
        assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[0], 0, "{key}");
        let mut waiting = args.to_vec();
        waiting.extend(["BLOCK", "5000"]);
        assert_eq!(
            error_for(&mut con, "CL.THROTTLE", &waiting),
            INTERNAL,
            "{key}"
        );
        assert!(
            stats_line(&mut con, "cl_waiting").starts_with("now=0,"),
            "{key}: {}",
            stats_line(&mut con, "cl_waiting")
        );
        // It took nothing, and no one stands in the key's line any more.
        assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[0], 0, "{key}");
    }
    assert_eq!(
        stats_line(&mut con, "cl_throttle"),
        "calls=6,allowed=4,denied=0,peeks=0,refunds=0,errors=2"
    );
    assert_serving(&mut server, &mut con);
}

fn a_panic_after_a_client_was_blocked_answers_it_once_and_unblocks_it(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    let args = [PARKED, "0", "1", "60"];
    assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[0], 0);
    let mut waiting = args.to_vec();
    waiting.extend(["BLOCK", "5000"]);
    // Its client was blocked when the panic struck: it gets one answer, the error, and is
    // unblocked; the next reply on the connection is its own PING's.
    assert_eq!(error_for(&mut con, "CL.THROTTLE", &waiting), INTERNAL);
    let pong: String = run(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
    assert_eq!(
        crate::harness::info_field(&mut con, "clients", "blocked_clients"),
        "0"
    );
    assert!(
        stats_line(&mut con, "cl_waiting").starts_with("now=0,"),
        "{}",
        stats_line(&mut con, "cl_waiting")
    );
    // Nothing waits in the key's line: the call is denied for the limiter's own reason.
    assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[..4], [1, 1, 0, 60]);
    assert_serving(&mut server, &mut con);
}

/// The denial is counted after its reply went out, under a guard of its own: the client has
/// its one reply (the denial), the call counts as denied, not as an error, and the list, whose
/// lock the panic let go of, goes on counting.
fn a_panic_while_a_denial_is_counted_leaves_its_reply_and_the_list_whole(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    let args = [TOP, "0", "1", "60"];
    assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[0], 0);
    assert_eq!(limiter(&mut con, "CL.THROTTLE", &args)[..4], [1, 1, 0, 60]);
    let pong: String = run(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
    assert_eq!(
        stats_line(&mut con, "cl_throttle"),
        "calls=2,allowed=1,denied=1,peeks=0,refunds=0,errors=0"
    );
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["other", "0", "1", "60"])[0],
        0
    );
    assert_eq!(
        limiter(&mut con, "CL.THROTTLE", &["other", "0", "1", "60"])[0],
        1
    );
    let listed: Vec<redis::Value> = run(&mut con, &["CL.TOP"]);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[0], redis::Value::BulkString(b"other".to_vec()));
    assert_serving(&mut server, &mut con);
}
