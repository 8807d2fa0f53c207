//! Lockouts: `BAN span` on the rate limiters' commands, and `CL.BAN` / `CL.UNBAN`, on real
//! servers, under a controlled clock where an instant matters. A ban begins at the denial,
//! holds through its last millisecond, is over at its end, never extends itself, and leaves
//! the limiter's own state as it was: a twin key that saw the same calls but no ban answers
//! alike once the ban is over.

use crate::harness::run;
use crate::harness::{dump, error_of, limiter, snapshot, stats_field, Flavor, Server};

both_servers!(
    cl_ban_and_cl_unban_keep_the_state_and_refuse_what_is_no_limiter_s,
    bad_ban_arguments_are_refused_and_change_nothing,
);

const BASE: i64 = 1_900_000_000_000;

/// Each rate limiter's words after the key, in ms, for a limit that two calls fill.
const LIMITERS: [(&str, &[&str]); 5] = [
    ("CL.THROTTLE", &["1", "1", "60000", "1", "MS"]),
    ("CL.FIXED", &["2", "60000", "1", "MS"]),
    ("CL.WINDOW", &["2", "60000", "1", "MS"]),
    ("CL.WINDOW", &["2", "60000", "1", "MS", "BUCKETS", "6"]),
    ("CL.SMOOTH", &["1", "60000", "1", "MS", "BURST", "60000"]),
];

fn with(words: &[&str], more: &[&str]) -> Vec<String> {
    words.iter().chain(more).map(|w| w.to_string()).collect()
}

fn call(con: &mut redis::Connection, command: &str, key: &str, words: &[String]) -> Vec<i64> {
    let args: Vec<&str> = std::iter::once(key)
        .chain(words.iter().map(String::as_str))
        .collect();
    limiter(con, command, &args)
}

/// Every rate limiter: filled, then denied with `BAN 5000` (ms); the ban holds through its
/// last millisecond whatever is asked, says the same to a look and a dry run and writes
/// nothing then, is not extended by denials with BAN, and at its end the limiter answers as
/// its twin, which saw the same calls but no ban, with the same bytes once written again.
#[test]
fn a_ban_holds_until_its_end_and_leaves_the_limiter_as_it_was_under_a_controlled_clock() {
    // To the microsecond: the banned key and its twin are called at the same instants.
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = server.connection();
    for (i, (command, words)) in LIMITERS.iter().enumerate() {
        let (banned, twin) = (format!("banned:{i}"), format!("twin:{i}"));
        let plain = with(words, &[]);
        let ban = with(words, &["BAN", "5000"]);
        let start = BASE + i as i64 * 100_000;
        server.set_clock_us(start * 1000);
        // Filled: the limit admits its calls, with BAN or not.
        loop {
            let reply = call(&mut con, command, &banned, &ban);
            let twin_reply = call(&mut con, command, &twin, &plain);
            if reply[0] == 1 {
                // The denial that bans waits for the ban's end at least.
                assert_eq!(reply[..3], twin_reply[..3], "{command}");
                assert_eq!(reply[3], twin_reply[3].max(5000), "{command}");
                assert_eq!(reply[4], twin_reply[4].max(5000), "{command}");
                break;
            }
            assert_eq!(twin_reply, reply, "{command}");
        }
        let value = dump(&mut con, banned.as_bytes());
        let (raw, expiry) = snapshot(&mut con, banned.as_bytes());
        assert!(
            raw.as_ref().is_some_and(|raw| raw.starts_with(b"CLX")),
            "{command}"
        );
        let own_expiry = snapshot(&mut con, twin.as_bytes()).1;
        assert_eq!(expiry, own_expiry.max(start + 5000), "{command}");
        // Held: every call denied, none remaining, to retry at the ban's end.
        for at in [1, 2_500, 4_999] {
            server.set_clock_us((start + at) * 1000);
            let wait = 5000 - at;
            for more in [&[][..], &["BAN", "90000"], &["DRYRUN"]] {
                let reply = call(&mut con, command, &banned, &with(words, more));
                assert_eq!(
                    reply[..4],
                    [1, reply[1], 0, wait],
                    "{command} {more:?} at {at}"
                );
                assert!(reply[4] >= wait);
            }
            assert_eq!(
                dump(&mut con, banned.as_bytes()),
                value,
                "{command} at {at}"
            );
            assert_eq!(snapshot(&mut con, banned.as_bytes()).1, expiry, "{command}");
        }
        // Over: the limiter's own state is its twin's; it answers as its twin, and writes the
        // twin's bytes.
        server.set_clock_us((start + 5000) * 1000);
        let twin_state = snapshot(&mut con, twin.as_bytes());
        assert_eq!(
            raw.as_ref().map(|raw| raw[32..].to_vec()),
            twin_state.0,
            "{command}"
        );
        let reply = call(&mut con, command, &banned, &plain);
        assert_eq!(
            call(&mut con, command, &twin, &plain),
            reply,
            "{command} at the end"
        );
        // Once the limiter itself lets a call through, the banned key is written as the twin
        // is: unwrapped, the same bytes and expiry.
        server.set_clock_us((start + 61_000) * 1000);
        let reply = call(&mut con, command, &banned, &plain);
        assert_eq!(reply[0], 0, "{command}");
        assert_eq!(call(&mut con, command, &twin, &plain), reply, "{command}");
        assert_eq!(
            snapshot(&mut con, banned.as_bytes()),
            snapshot(&mut con, twin.as_bytes()),
            "{command}"
        );
    }
    let mut con = server.connection();
    assert_eq!(stats_field(&mut con, "cl_bans", "banned"), 5);
}

/// Only the limiter's own denial bans: an admission, a quantity over the limit (which never
/// fits), a dry run, a look and a call denied in a transaction-free pipeline all leave the key
/// unbanned; COUNTDENIED with BAN counts the denial and bans.
#[test]
fn only_a_denial_that_could_fit_later_bans_under_a_controlled_clock() {
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let fixed = |con: &mut redis::Connection, key: &str, more: &[&str]| {
        let args: Vec<&str> = [key, "2", "60000"].iter().chain(more).copied().collect();
        limiter(con, "CL.FIXED", &args)
    };
    assert_eq!(
        fixed(&mut con, "f", &["1", "MS", "BAN", "100"]),
        [0, 2, 1, -1, 60_000]
    );
    assert_eq!(
        fixed(&mut con, "f", &["3", "MS", "BAN", "100"]),
        [1, 2, 1, -1, 60_000]
    );
    assert_eq!(
        fixed(&mut con, "f", &["2", "MS", "DRYRUN", "BAN", "100"]),
        [1, 2, 1, 60_000, 60_000]
    );
    assert_eq!(
        fixed(&mut con, "f", &["0", "MS", "BAN", "100"]),
        [0, 2, 1, -1, 60_000]
    );
    assert_eq!(snapshot(&mut con, b"f").0, Some(b"1".to_vec()));
    // Denied with COUNTDENIED: the two units count, and the key is banned beside them.
    assert_eq!(
        fixed(&mut con, "f", &["2", "MS", "COUNTDENIED", "BAN", "100"]),
        [1, 2, 0, 60_000, 60_000]
    );
    let (raw, expiry) = snapshot(&mut con, b"f");
    let raw = raw.unwrap();
    assert_eq!(&raw[..3], b"CLX");
    assert_eq!(&raw[32..], b"3");
    assert_eq!(expiry, BASE + 60_000);
    assert_eq!(fixed(&mut con, "f", &["0", "MS"]), [1, 2, 0, 100, 60_000]);
    // Over: the window, fuller than its limit, as it was.
    server.set_clock_ms(BASE + 100);
    assert_eq!(
        fixed(&mut con, "f", &["0", "MS"]),
        [1, 2, 0, 59_900, 59_900]
    );
}

fn cl_ban_and_cl_unban_keep_the_state_and_refuse_what_is_no_limiter_s(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // A missing key, banned: every call denied until the end; CL.UNBAN lets it in, empty.
    let end: i64 = run(&mut con, ("CL.BAN", "addr", "60000", "MS"));
    let (_, expiry) = snapshot(&mut con, b"addr");
    assert_eq!(end, expiry);
    let reply = limiter(&mut con, "CL.THROTTLE", &["addr", "5", "10", "60"]);
    assert_eq!(reply[..3], [1, 6, 0]);
    assert!((59..=60).contains(&reply[3]));
    assert_eq!(run::<i64>(&mut con, ("CL.UNBAN", "addr")), 1);
    assert_eq!(run::<i64>(&mut con, ("EXISTS", "addr")), 0);
    assert_eq!(run::<i64>(&mut con, ("CL.UNBAN", "addr")), 0);
    // A limiter's key keeps its state beside the ban and after it.
    limiter(&mut con, "CL.FIXED", &["count", "5", "60", "2"]);
    let before = snapshot(&mut con, b"count");
    let end_s: i64 = run(&mut con, ("CL.BAN", "count", "10"));
    // The window ends after the ban: the key expires with it.
    assert!(end_s * 1000 < before.1 && end_s * 1000 > before.1 - 60_000);
    assert_eq!(snapshot(&mut con, b"count").1, before.1);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["count", "5", "60", "0"])[..3],
        [1, 5, 0]
    );
    assert_eq!(run::<i64>(&mut con, ("CL.UNBAN", "count")), 1);
    assert_eq!(snapshot(&mut con, b"count"), before);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["count", "5", "60", "0"])[..3],
        [0, 5, 3]
    );
    // A lease set, a string of no limiter's and another type are refused, unchanged.
    limiter(&mut con, "CL.LEASE", &["pool", "2", "60", "job:1"]);
    let _: () = run(&mut con, ("SET", "text", "hello"));
    let _: () = run(&mut con, ("RPUSH", "list", "x"));
    for (key, named) in [
        ("pool", "no rate limiter's state"),
        ("text", "no rate limiter's state"),
        ("list", "WRONGTYPE"),
    ] {
        let before = dump(&mut con, key.as_bytes());
        let error = error_of(&mut con, "CL.BAN", &[key.as_bytes(), b"60"]);
        assert!(error.contains(named), "{key}: {error}");
        assert_eq!(dump(&mut con, key.as_bytes()), before);
    }
    assert!(error_of(
        &mut con,
        "CL.LEASE",
        &[b"pool", b"2", b"60", b"j", b"BAN", b"5"]
    )
    .contains("cl.lease takes no BAN"));
    assert_eq!(stats_field(&mut con, "cl_bans", "by_hand"), 2);
    assert_eq!(stats_field(&mut con, "cl_bans", "lifted"), 2);
}

fn bad_ban_arguments_are_refused_and_change_nothing(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.FIXED", &["k", "1", "60"]);
    let before = dump(&mut con, b"k");
    for (args, named) in [
        (&[&b"BAN"[..], b"0"][..], "BAN must be >= 1"),
        (&[b"BAN", b"-1"], "BAN must be >= 1"),
        (&[b"BAN", b"x"], "BAN is not an integer"),
        (&[b"BAN", b"5", b"BAN", b"5"], "syntax error"),
        (&[b"BAN"], "syntax error"),
        (
            &[b"REFUND", b"BAN", b"5"],
            "BAN and REFUND options at the same time",
        ),
        (
            &[b"BAN", b"5", b"BLOCK", b"10"],
            "BAN and BLOCK options at the same time",
        ),
        (&[b"BAN", b"4611686019"], "BAN is too large"),
    ] {
        let args: Vec<&[u8]> = [&b"k"[..], b"1", b"60", b"1"]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let error = error_of(&mut con, "CL.FIXED", &args);
        assert!(error.contains(named), "{args:?}: {error}");
        assert_eq!(dump(&mut con, b"k"), before);
    }
    for (args, named) in [
        (&[&b"k"[..]][..], "wrong number of arguments"),
        (&[b"k", b"0"], "span must be >= 1"),
        (&[b"k", b"5", b"BLOCK", b"1"], "syntax error"),
    ] {
        let error = error_of(&mut con, "CL.BAN", args);
        assert!(error.contains(named), "{args:?}: {error}");
        assert_eq!(dump(&mut con, b"k"), before);
    }
    assert!(error_of(&mut con, "CL.UNBAN", &[b"k", b"MS"]).contains("syntax error"));
}

/// docs/commands.md's login lockout, "5 failures, then 15 minutes out", under a controlled
/// clock: a peek before each attempt refuses a banned user; four failures count, the fifth
/// bans for 15 minutes from then, however old the window; the address's own limit bans the
/// same way, in a key of its own.
#[test]
fn the_login_lockout_recipe_under_a_controlled_clock() {
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let mut at = |seconds: i64, args: &[&str]| {
        server.set_clock_ms(BASE + seconds * 1000);
        limiter(&mut con, "CL.FIXED", args)
    };
    let peek = ["login:alice", "4", "900", "0"];
    let failure = ["login:alice", "4", "900", "1", "BAN", "900"];
    assert_eq!(at(0, &peek), [0, 4, 4, -1, 0]);
    for (seconds, left) in [(0, 3), (20, 2), (40, 1), (60, 0)] {
        assert_eq!(at(seconds, &failure), [0, 4, left, -1, 900 - seconds]);
    }
    assert_eq!(at(88, &peek), [0, 4, 0, -1, 812]);
    assert_eq!(at(88, &failure), [1, 4, 0, 900, 900]);
    assert_eq!(at(88, &peek), [1, 4, 0, 900, 900]);
    // Locked out past the window's end, which no longer counts the failures.
    assert_eq!(at(900, &peek), [1, 4, 0, 88, 88]);
    assert_eq!(at(987, &failure), [1, 4, 0, 1, 1]);
    assert_eq!(at(988, &peek), [0, 4, 4, -1, 0]);
    // The address's limit, in its own key: twenty failures, then an hour out.
    let address = ["login-ip:203.0.113.9", "20", "900", "1", "BAN", "3600"];
    for _ in 0..20 {
        assert_eq!(at(1000, &address)[0], 0);
    }
    assert_eq!(at(1000, &address), [1, 20, 0, 3600, 3600]);
    assert_eq!(
        at(
            4599,
            &address[..3]
                .iter()
                .copied()
                .chain(["0"])
                .collect::<Vec<_>>()
        )[..4],
        [1, 20, 0, 1]
    );
}

/// A `BLOCK` call on a banned key waits for the ban's end when its timeout allows, and is
/// admitted then, not a millisecond before; one whose timeout ends first is denied then.
#[test]
fn a_waiter_on_a_banned_key_waits_for_the_ban_s_end_under_a_controlled_clock() {
    use crate::harness::waiting::{connect, waiting_field, Waiter};
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = connect(&server);
    let _: i64 = run(&mut con, ("CL.BAN", "user", "10000", "MS"));
    let admitted = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.FIXED",
        &["user", "5", "60", "1", "BLOCK", "20000"],
    );
    let timed_out = Waiter::parked(
        &server,
        &mut con,
        2,
        "CL.THROTTLE",
        &["user", "5", "10", "60", "1", "BLOCK", "3000"],
    );
    server.set_clock_ms(BASE + 3_000);
    assert_eq!(timed_out.reply().0, [1, 6, 0, 7, 7]);
    server.set_clock_ms(BASE + 9_999);
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(waiting_field(&mut con, "now"), 1);
    server.set_clock_ms(BASE + 10_000);
    assert_eq!(admitted.reply().0, [0, 5, 4, -1, 60]);
    assert_eq!(snapshot(&mut con, b"user").0, Some(b"1".to_vec()));
}

/// A denied CL.ALL with BAN locks out each key whose own limiter denied, and no other: the
/// admitting limiter's key and a lease are left as they were.
#[test]
fn a_denied_cl_all_bans_the_keys_whose_limiters_denied_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = server.connection();
    limiter(&mut con, "CL.FIXED", &["full", "1", "60"]);
    let pool_before = {
        limiter(&mut con, "CL.LEASE", &["pool", "1", "60", "other"]);
        dump(&mut con, b"pool")
    };
    let roomy_before = dump(&mut con, b"roomy");
    let reply: Vec<Vec<i64>> = redis::cmd("CL.ALL")
        .arg(3)
        .arg(&[
            "full", "roomy", "pool", "FIXED", "1", "60", "FIXED", "5", "60",
        ])
        .arg(&["LEASE", "1", "60", "HOLDER", "me", "BAN", "30", "DETAIL"])
        .query(&mut con)
        .unwrap();
    assert_eq!(reply[0][..4], [1, 1, 0, 60]);
    assert_eq!(reply[1][0], 0);
    assert_eq!(reply[2][0], 1);
    let (raw, expiry) = snapshot(&mut con, b"full");
    assert!(raw.unwrap().starts_with(b"CLX"));
    assert_eq!(expiry, BASE + 60_000);
    assert_eq!(dump(&mut con, b"roomy"), roomy_before);
    assert_eq!(dump(&mut con, b"pool"), pool_before);
    // Banned for 30 s; then the window, full for its minute, as it was.
    server.set_clock_ms(BASE + 29_999);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["full", "1", "60", "0"]),
        [1, 1, 0, 1, 31]
    );
    server.set_clock_ms(BASE + 30_000);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["full", "1", "60", "0"]),
        [0, 1, 0, -1, 30]
    );
    server.set_clock_ms(BASE + 60_000);
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["full", "1", "60"]),
        [0, 1, 0, -1, 60]
    );
    assert_eq!(stats_field(&mut con, "cl_bans", "banned"), 1);
}

/// CL.UNBAN lets the key in again at once: the first call waiting on it is admitted then; a
/// ban that has ended is taken off and answered 0.
#[test]
fn cl_unban_wakes_the_first_waiter_under_a_controlled_clock() {
    use crate::harness::waiting::{connect, Waiter};
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = connect(&server);
    let _: i64 = run(&mut con, ("CL.BAN", "door", "60"));
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.FIXED",
        &["door", "5", "60", "1", "BLOCK", "0"],
    );
    assert_eq!(run::<i64>(&mut con, ("CL.UNBAN", "door")), 1);
    assert_eq!(waiter.reply().0, [0, 5, 4, -1, 60]);
    let _: i64 = run(&mut con, ("CL.BAN", "gate", "1"));
    server.set_clock_ms(BASE + 1_000);
    assert_eq!(run::<i64>(&mut con, ("CL.UNBAN", "gate")), 0);
    assert_eq!(run::<i64>(&mut con, ("EXISTS", "gate")), 0);
}
