//! What belongs to CL.ALL alone, on real servers: several limiters decided at one instant, all
//! or nothing. A random call sequence checked against the single commands on twin keys, its
//! grammar (numkeys, limiters, options), the binding rule, DETAIL, INFO, COMMAND GETKEYS, its
//! AOF transaction, all or nothing on a replica, and CROSSSLOT. What it shares with the single
//! commands is contract.rs's, over every limiter form.

use crate::harness::cluster::Cluster;
use crate::harness::run;
use crate::harness::{
    aof_options, dirty, dump, error_of, info_field, keyspace, limiter, replicate, snapshot,
    stats_line, wait_for_replica, Flavor, Options, Rng, Server, ServerKind,
};
use redis::Value;
use std::time::Duration;

both_servers!(
    a_random_call_sequence_decides_and_writes_as_the_single_commands_under_a_controlled_clock,
    bad_input_gets_an_error_naming_it_and_changes_no_key,
    when_admitted_the_reply_is_the_limiter_with_the_fewest_remaining_ties_to_the_first,
    when_denied_the_reply_is_the_denying_limiter_with_the_longest_wait_ties_to_the_first,
    detail_replies_each_limiter_in_key_order_and_a_peek_for_those_a_denial_spared,
    a_denied_call_writes_no_key_not_even_those_that_would_admit,
    a_peek_answers_without_writing_or_creating_any_key,
    keywords_are_case_insensitive_and_options_come_in_any_order,
    info_counts_calls_allowed_denied_peeks_and_errors,
    command_getkeys_lists_the_keys_and_command_docs_give_the_grammar,
    an_admitted_call_reaches_the_aof_as_one_transaction_of_what_each_single_command_writes,
    denied_and_peeking_calls_propagate_nothing,
    keys_in_different_slots_get_crossslot_and_change_nothing,
    in_a_transaction_and_a_script_the_limiters_decide_together_and_replicas_follow,
);

/// `CL.ALL` with these arguments: the binding limiter's five integers.
fn all(con: &mut redis::Connection, args: &[&str]) -> Vec<i64> {
    limiter(con, "CL.ALL", args)
}

/// `CL.ALL` with these arguments and `DETAIL`: five integers per key.
fn all_detail(con: &mut redis::Connection, args: &[&str]) -> Vec<Vec<i64>> {
    redis::cmd("CL.ALL")
        .arg(args)
        .arg("DETAIL")
        .query(con)
        .unwrap_or_else(|e| panic!("CL.ALL {args:?} DETAIL: {e}"))
}

/// A key's serialized value and absolute expiry.
type Stored = (Vec<u8>, Option<Vec<u8>>, i64);

/// Every key as DUMP and PEXPIRETIME give it. (`keyspace` reads values with GET, which a list
/// refuses.)
fn dumps(con: &mut redis::Connection) -> Vec<Stored> {
    let mut keys: Vec<Vec<u8>> = run(con, ("KEYS", "*"));
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let value = dump(con, &key);
            let expiry: i64 = run(con, ("PEXPIRETIME", &key));
            (key, value, expiry)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The random sequence against twin keys.

/// 2030-03-17T17:46:40Z, where the fake clock starts.
const BASE: i64 = 1_900_000_000_000;
const ROUNDS: u64 = 5;
const STEPS_PER_ROUND: u64 = 80;

/// One limiter of a call: its keyword and numbers.
#[derive(Debug, Clone)]
struct Spec {
    keyword: &'static str,
    params: Vec<String>,
}

impl Spec {
    fn command(&self) -> &'static str {
        command_of(self.keyword)
    }
}

/// The single command that decides as the limiter of this keyword does.
fn command_of(keyword: &str) -> &'static str {
    match keyword {
        "THROTTLE" => "CL.THROTTLE",
        "FIXED" => "CL.FIXED",
        _ => "CL.WINDOW",
    }
}

/// A round of the sequence: 2 or 3 limiters of random kinds with small limits, all in seconds
/// or all in milliseconds; also the longest period, in ms. Against real time, milliseconds
/// only: the run lasts about a second, and limiters must refill within it for calls to be
/// admitted as often as denied.
fn random_round(rng: &mut Rng, clock_under_control: bool) -> (Vec<Spec>, bool, i64) {
    let ms = !clock_under_control || rng.below(2) == 0;
    let mut longest_ms = 1;
    let mut specs = Vec::new();
    for _ in 0..2 + rng.below(2) {
        // Under a fake clock, periods long enough for many steps to fall within one; against
        // real time, a few steps long.
        let period = match (clock_under_control, ms) {
            (true, true) => 50 + rng.below(1_951),
            (true, false) => 1 + rng.below(3),
            (false, _) => 1 + rng.below(8),
        } as i64;
        longest_ms = longest_ms.max(if ms { period } else { period * 1_000 });
        let period = period.to_string();
        specs.push(match rng.below(3) {
            0 => Spec {
                keyword: "THROTTLE",
                params: vec![
                    rng.below(5).to_string(),
                    (1 + rng.below(3)).to_string(),
                    period,
                ],
            },
            1 => Spec {
                keyword: "FIXED",
                params: vec![(1 + rng.below(5)).to_string(), period],
            },
            _ => Spec {
                keyword: "WINDOW",
                params: vec![(1 + rng.below(5)).to_string(), period],
            },
        });
    }
    (specs, ms, longest_ms)
}

/// The keyword in upper, lower or capitalized case.
fn any_case(rng: &mut Rng, word: &str) -> String {
    match rng.below(3) {
        0 => word.to_uppercase(),
        1 => word.to_lowercase(),
        _ => word[..1].to_uppercase() + &word[1..].to_lowercase(),
    }
}

/// `CL.ALL` over `keys`, each with its limiter (keyword spelled as given), then `options`.
fn all_command(
    keys: &[String],
    specs: &[Spec],
    keywords: &[String],
    options: &[String],
) -> redis::Cmd {
    let mut cmd = redis::cmd("CL.ALL");
    cmd.arg(keys.len()).arg(keys);
    for (spec, keyword) in specs.iter().zip(keywords) {
        cmd.arg(keyword).arg(&spec.params);
    }
    cmd.arg(options);
    cmd
}

/// Makes each key of `to` hold exactly what the same key of `from` holds: value, encoding and
/// expiry. COPY keeps a key that expires at this very millisecond, where RESTORE ABSTTL would
/// drop it.
fn copy_keys(con: &mut redis::Connection, from: &[String], to: &[String]) {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for (source, target) in from.iter().zip(to) {
        pipe.cmd("DEL").arg(target).ignore();
        pipe.cmd("COPY").arg(source).arg(target).ignore();
    }
    pipe.query::<()>(con).unwrap();
}

/// Which limiter's reply CL.ALL gives without DETAIL, found from the DETAIL elements: when
/// denied, the denying one with the longest retry_after (−1, never, the longest); when
/// admitted, the one with the fewest remaining; ties to the first.
fn binding(detail: &[Vec<i64>]) -> usize {
    let denied = detail.iter().any(|e| e[0] == 1);
    let wait = |e: &[i64]| if e[3] == -1 { i64::MAX } else { e[3] };
    let mut best: Option<usize> = None;
    for (i, element) in detail.iter().enumerate() {
        let better = match best {
            None => !denied || element[0] == 1,
            Some(b) if denied => element[0] == 1 && wait(element) > wait(&detail[b]),
            Some(b) => element[2] < detail[b][2],
        };
        if better {
            best = Some(i);
        }
    }
    best.expect("at least one limiter")
}

fn next<T: redis::FromRedisValue>(replies: &mut impl Iterator<Item = Value>) -> T {
    let value = replies.next().expect("one reply per command");
    redis::from_redis_value(value.clone()).unwrap_or_else(|e| panic!("{value:?}: {e}"))
}

type State = (Option<Vec<u8>>, i64);

fn states(replies: &mut impl Iterator<Item = Value>, keys: usize) -> Vec<State> {
    (0..keys).map(|_| (next(replies), next(replies))).collect()
}

fn ms_of((seconds, micros): (i64, i64)) -> i64 {
    seconds * 1_000 + micros / 1_000
}

/// The server for the twin test, and the fake clock's start if it runs under one.
///
/// A step must be one instant for all the commands in it. Where the module reads the clock
/// to the millisecond (no RedisModule_Microseconds, Redis 7.0), a step inside MULTI … EXEC
/// with TIME first and last saw one instant whenever both TIMEs fall in the same
/// millisecond. Microseconds no bracket holds still: that server runs under libfaketime with
/// its monotonic clock frozen too, so every reading is the instant the test set, and where
/// it cannot, the test fails (it is one of those left out by name there).
fn twin_server(flavor: Flavor) -> (Server, Option<i64>) {
    let server = Server::start(flavor);
    if !ServerKind::of(&mut server.connection()).module_clock_in_microseconds() {
        return (server, None);
    }
    drop(server);
    (Server::with_exact_fake_clock_on(flavor, BASE), Some(BASE))
}

fn a_random_call_sequence_decides_and_writes_as_the_single_commands_under_a_controlled_clock(
    flavor: Flavor,
) {
    let (server, mut now_ms) = twin_server(flavor);
    let mut con = server.connection();
    let mut rng = Rng::new(0xa11_5eed ^ flavor as u64);
    let (mut admitted, mut denied, mut peeked, mut conclusive) = (0u64, 0u64, 0u64, 0u64);
    for round in 0..ROUNDS {
        let (specs, ms, longest_ms) = random_round(&mut rng, now_ms.is_some());
        let n = specs.len();
        // The keys CL.ALL decides over with DETAIL; the twins the single commands decide
        // over; the copies CL.ALL decides over without DETAIL.
        let [main, twins, copies] = ["all", "twin", "copy"].map(|set| {
            (0..n)
                .map(|i| format!("{set}:{round}:{i}"))
                .collect::<Vec<_>>()
        });
        let unit: &[&str] = if ms { &["MS"] } else { &[] };
        for step in 0..STEPS_PER_ROUND {
            // Mostly within the periods, now and then past all of them; at least a
            // millisecond on, as GCRA's single-command tests keep their instants.
            let most = if rng.below(12) == 0 {
                2 * longest_ms
            } else {
                (longest_ms / 4).max(1)
            };
            let advance_ms = 1 + rng.below(most as u64) as i64;
            match now_ms.as_mut() {
                Some(now) => {
                    *now += advance_ms;
                    server.set_clock_ms(*now);
                }
                // A clock that cannot be steered is let run as far: how many calls are
                // admitted then depends on the steps, not on how fast this machine is.
                None => std::thread::sleep(Duration::from_millis(advance_ms as u64)),
            }
            let quantity = [0, 1, 1, 1, 1, 2, 3, 6][rng.below(8) as usize];
            let keywords: Vec<String> = specs
                .iter()
                .map(|s| any_case(&mut rng, s.keyword))
                .collect();
            let mut options: Vec<Vec<String>> = Vec::new();
            if quantity != 1 || rng.below(2) == 0 {
                options.push(vec![any_case(&mut rng, "QUANTITY"), quantity.to_string()]);
            }
            if ms {
                options.push(vec![any_case(&mut rng, "MS")]);
            }
            let plain_options = rng.shuffled(options.clone()).concat();
            options.push(vec![any_case(&mut rng, "DETAIL")]);
            let detail_options = rng.shuffled(options).concat();

            // Inside EXEC every command sees the same keys expired; TIME brackets only the
            // commands that read the clock.
            let mut pipe = redis::pipe();
            pipe.atomic();
            for key in &main {
                pipe.cmd("GET").arg(key).cmd("PEXPIRETIME").arg(key);
            }
            pipe.cmd("TIME");
            for q in [0, quantity] {
                for (spec, twin) in specs.iter().zip(&twins) {
                    pipe.cmd(spec.command())
                        .arg(twin)
                        .arg(&spec.params)
                        .arg(q)
                        .arg(unit);
                }
            }
            pipe.add_command(all_command(&main, &specs, &keywords, &detail_options));
            pipe.add_command(all_command(&copies, &specs, &keywords, &plain_options));
            pipe.cmd("TIME");
            for key in main.iter().chain(&twins).chain(&copies) {
                pipe.cmd("GET").arg(key).cmd("PEXPIRETIME").arg(key);
            }
            let replies: Vec<Value> = pipe.query(&mut con).unwrap_or_else(|e| {
                panic!("round {round} step {step}: {specs:?} {detail_options:?}: {e}")
            });
            let mut replies = replies.into_iter();
            let before = states(&mut replies, n);
            let first: (i64, i64) = next(&mut replies);
            let peeks: Vec<Vec<i64>> = (0..n).map(|_| next(&mut replies)).collect();
            let singles: Vec<Vec<i64>> = (0..n).map(|_| next(&mut replies)).collect();
            let detail: Vec<Vec<i64>> = next(&mut replies);
            let plain: Vec<i64> = next(&mut replies);
            let last: (i64, i64) = next(&mut replies);
            let [main_after, twins_after, copies_after] =
                [0, 1, 2].map(|_| states(&mut replies, n));
            let context = format!(
                "round {round} step {step} at {first:?}: {specs:?} {detail_options:?}, \
                 before {before:?}"
            );

            match now_ms {
                Some(now) => {
                    assert_eq!(first, last, "{context}");
                    assert_eq!((ms_of(first), first.1 % 1_000), (now, 0), "{context}");
                }
                None if ms_of(first) != ms_of(last) => {
                    // Not one instant: nothing to compare; start the next step level.
                    copy_keys(&mut con, &main, &twins);
                    copy_keys(&mut con, &main, &copies);
                    continue;
                }
                None => {}
            }
            conclusive += 1;

            assert_eq!(detail.len(), n, "{context}");
            assert!(detail.iter().all(|e| e.len() == 5), "{detail:?}: {context}");
            let all_admit = detail.iter().all(|e| e[0] == 0);
            assert_eq!(
                all_admit,
                singles.iter().all(|r| r[0] == 0),
                "admitted iff each single command admits: {detail:?} vs {singles:?}: {context}"
            );
            if all_admit {
                assert_eq!(detail, singles, "{context}");
                assert_eq!(
                    main_after, twins_after,
                    "each key is written as its single command writes it: {context}"
                );
                if quantity == 0 {
                    assert_eq!(main_after, before, "a peek writes nothing: {context}");
                    peeked += 1;
                } else {
                    admitted += 1;
                }
            } else {
                // A denying limiter's single call writes nothing either; the others are
                // shown as a peek of their single command would show them.
                let expected: Vec<Vec<i64>> = singles
                    .iter()
                    .zip(&peeks)
                    .map(|(single, peek)| if single[0] == 1 { single } else { peek }.clone())
                    .collect();
                assert_eq!(detail, expected, "{context}");
                assert_eq!(
                    main_after, before,
                    "a denied call writes nothing: {context}"
                );
                denied += 1;
                // The twins of limiters that would have admitted took their units.
                copy_keys(&mut con, &main, &twins);
            }
            assert_eq!(
                plain,
                detail[binding(&detail)],
                "the binding limiter's reply: {detail:?}: {context}"
            );
            assert_eq!(
                copies_after, main_after,
                "DETAIL changes only the reply: {context}"
            );
        }
    }
    let steps = ROUNDS * STEPS_PER_ROUND;
    println!(
        "{flavor:?}: {conclusive} of {steps} steps conclusive: {admitted} admitted, \
         {denied} denied, {peeked} peeks"
    );
    assert!(
        conclusive * 2 > steps,
        "only {conclusive} of {steps} steps saw one instant"
    );
    assert!(
        admitted * 10 >= conclusive && denied * 10 >= conclusive && peeked > 0,
        "{admitted} admitted, {denied} denied, {peeked} peeks of {conclusive}"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input.

/// What a refused call must answer.
#[derive(Clone)]
enum Expect {
    /// Exactly what the single command answers for the same numbers or the same key.
    Same(String),
    /// ERR naming the problem: one of these words, in any case (none: any ERR).
    Naming(&'static [&'static str]),
    /// An error with this code.
    Code(&'static str),
}

/// Arguments separated by spaces; `''` is an empty one.
fn words(text: &str) -> Vec<String> {
    text.split(' ')
        .map(|w| {
            if w == "''" {
                String::new()
            } else {
                w.to_owned()
            }
        })
        .collect()
}

fn single_error(con: &mut redis::Connection, command: &str, args: &[String]) -> Expect {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Expect::Same(error_of(con, command, &args))
}

fn bad_input_gets_an_error_naming_it_and_changes_no_key(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // Limiters with room, which every call below would admit if it were not refused.
    limiter(&mut con, "CL.FIXED", &["a", "5", "60"]);
    limiter(&mut con, "CL.FIXED", &["f", "5", "60"]);
    limiter(&mut con, "CL.THROTTLE", &["t", "5", "1", "60"]);
    limiter(&mut con, "CL.WINDOW", &["w", "5", "60"]);
    run::<()>(&mut con, ("RPUSH", &["list", "x", "y"]));
    run::<()>(&mut con, ("SET", &["abc", "abc", "PX", "600000"]));
    // What INCR + EXPIRE leaves when it dies between the two: a window that never ends.
    run::<()>(&mut con, ("SET", &["noexp", "2"]));

    let mut cases: Vec<(Vec<String>, Expect)> = vec![
        (words("0 a FIXED 5 60"), Expect::Naming(&["numkeys"])),
        (words("-1 a FIXED 5 60"), Expect::Naming(&["numkeys"])),
        (words("x a FIXED 5 60"), Expect::Naming(&["numkeys"])),
        (words("'' a FIXED 5 60"), Expect::Naming(&["numkeys"])),
        (words("3 a t"), Expect::Naming(&[])),
        (words("2 a"), Expect::Naming(&[])),
        (
            words("2 a a FIXED 5 60 FIXED 5 60"),
            Expect::Naming(&["twice", "same", "duplicate", "more than once", "repeat"]),
        ),
        (words("2 a t FIXED 5 60"), Expect::Naming(&["limiter"])),
        (
            words("2 a t FIXED 5 60 QUANTITY 1"),
            Expect::Naming(&["limiter"]),
        ),
        (
            words("1 a FIXED 5 60 FIXED 5 60"),
            Expect::Naming(&["limiter"]),
        ),
        (
            words("2 a t FIXED 5 60 LEAKY 5 60"),
            Expect::Naming(&["limiter", "leaky"]),
        ),
        (
            words("1 a FIXED 5 60 HOURS"),
            Expect::Naming(&["hours", "syntax"]),
        ),
        (words("2 a t FIXED 5 60 THROTTLE 5 1"), Expect::Naming(&[])),
        (words("1 a FIXED 5 60 QUANTITY"), Expect::Naming(&[])),
        (
            words("2 a list FIXED 5 60 FIXED 5 60"),
            Expect::Code("WRONGTYPE"),
        ),
        (
            words("2 a list FIXED 5 60 WINDOW 5 60 QUANTITY 0"),
            Expect::Code("WRONGTYPE"),
        ),
        (
            words("3 fresh list t FIXED 5 60 THROTTLE 5 1 60 THROTTLE 5 1 60"),
            Expect::Code("WRONGTYPE"),
        ),
    ];
    let mut seventeen = vec!["17".to_owned()];
    seventeen.extend((0..17).map(|i| format!("k{i}")));
    for _ in 0..17 {
        seventeen.extend(words("FIXED 5 60"));
    }
    cases.push((seventeen, Expect::Naming(&["numkeys"])));

    // Each limiter's numbers, bad one at a time, with the second key: the same error as its
    // own command gives.
    let max = "9223372036854775807";
    let bad_numbers = [
        ("THROTTLE", "CL.THROTTLE", "t", "-1 1 60", ""),
        ("THROTTLE", "CL.THROTTLE", "t", "x 1 60", ""),
        ("THROTTLE", "CL.THROTTLE", "t", "1 0 60", ""),
        ("THROTTLE", "CL.THROTTLE", "t", "1 1.5 60", ""),
        ("THROTTLE", "CL.THROTTLE", "t", "1 1 0", ""),
        ("THROTTLE", "CL.THROTTLE", "t", "1 1 ''", ""),
        ("THROTTLE", "CL.THROTTLE", "t", &format!("1 1 {max}"), ""),
        ("THROTTLE", "CL.THROTTLE", "t", "1 1 9223372036854775", "MS"),
        ("THROTTLE", "CL.THROTTLE", "t", "1 2000000000 1", ""),
        ("THROTTLE", "CL.THROTTLE", "t", &format!("{max} 1 1"), ""),
        ("FIXED", "CL.FIXED", "f", "0 60", ""),
        ("FIXED", "CL.FIXED", "f", "-3 60", ""),
        ("FIXED", "CL.FIXED", "f", "x 60", ""),
        ("FIXED", "CL.FIXED", "f", "5 1.5", ""),
        ("FIXED", "CL.FIXED", "f", "5 0", ""),
        ("FIXED", "CL.FIXED", "f", &format!("5 {max}"), ""),
        ("FIXED", "CL.FIXED", "f", "5 9223372036854775", "MS"),
        ("WINDOW", "CL.WINDOW", "w", "0 60", ""),
        ("WINDOW", "CL.WINDOW", "w", "'' 60", ""),
        ("WINDOW", "CL.WINDOW", "w", "5 -60", ""),
        ("WINDOW", "CL.WINDOW", "w", "5 6O", ""),
        ("WINDOW", "CL.WINDOW", "w", &format!("5 {max}"), ""),
        ("WINDOW", "CL.WINDOW", "w", "5 9223372036854775", "MS"),
    ];
    for (keyword, command, key, params, unit) in bad_numbers {
        let mut args = words(&format!("2 a {key} FIXED 5 60 {keyword} {params}"));
        let mut single = words(&format!("scratch {params}"));
        if !unit.is_empty() {
            args.push(unit.to_owned());
            single.extend(["1".to_owned(), unit.to_owned()]);
        }
        cases.push((args, single_error(&mut con, command, &single)));
    }
    for (quantity, command, params) in [
        ("-1", "CL.FIXED", "5 60"),
        ("x", "CL.FIXED", "5 60"),
        ("''", "CL.FIXED", "5 60"),
        ("1.0", "CL.FIXED", "5 60"),
        (max, "CL.THROTTLE", "5 1 60"),
    ] {
        let limiters = if command == "CL.THROTTLE" {
            "2 a t FIXED 5 60 THROTTLE 5 1 60"
        } else {
            "2 a f FIXED 5 60 FIXED 5 60"
        };
        let single = words(&format!("scratch {params} {quantity}"));
        cases.push((
            words(&format!("{limiters} QUANTITY {quantity}")),
            single_error(&mut con, command, &single),
        ));
    }
    // Values that are not the limiter's state, on the second key: the single command's error.
    for (key, keyword, command, params, quantity) in [
        ("abc", "THROTTLE", "CL.THROTTLE", "5 1 60", "1"),
        ("abc", "THROTTLE", "CL.THROTTLE", "5 1 60", "0"),
        ("abc", "FIXED", "CL.FIXED", "5 60", "1"),
        ("abc", "WINDOW", "CL.WINDOW", "5 60", "1"),
        ("noexp", "FIXED", "CL.FIXED", "5 60", "1"),
        ("noexp", "FIXED", "CL.FIXED", "5 60", "0"),
        ("w", "FIXED", "CL.FIXED", "5 60", "1"),
        ("w", "THROTTLE", "CL.THROTTLE", "5 1 60", "1"),
        ("t", "WINDOW", "CL.WINDOW", "5 60", "1"),
    ] {
        let single = words(&format!("{key} {params} {quantity}"));
        let expected = single_error(&mut con, command, &single);
        if let Expect::Same(text) = &expected {
            assert!(text.starts_with("ERR"), "{single:?}: {text}");
        }
        for first in ["a", "fresh"] {
            let args = words(&format!(
                "2 {first} {key} FIXED 5 60 {keyword} {params} QUANTITY {quantity}"
            ));
            cases.push((args, expected.clone()));
        }
    }

    let before = dumps(&mut con);
    let changes = dirty(&mut con);
    for (args, expected) in cases {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let error = error_of(&mut con, "CL.ALL", &bytes);
        match expected {
            Expect::Same(text) => assert_eq!(error, text, "CL.ALL {args:?}"),
            Expect::Naming(words) => {
                assert!(error.starts_with("ERR "), "CL.ALL {args:?}: {error}");
                let lower = error.to_lowercase();
                assert!(
                    words.is_empty() || words.iter().any(|w| lower.contains(w)),
                    "CL.ALL {args:?}: {error} names none of {words:?}"
                );
            }
            Expect::Code(code) => {
                assert!(error.starts_with(code), "CL.ALL {args:?}: {error}")
            }
        }
        assert_eq!(dumps(&mut con), before, "CL.ALL {args:?} changed a key");
        assert_eq!(dirty(&mut con), changes, "CL.ALL {args:?} wrote");
    }
    let pong: String = run(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
}

// ---------------------------------------------------------------------------------------------
// The reply. Real time moves on between calls by far less than the seconds the waits round up
// to, so these replies are those of one instant.

fn when_admitted_the_reply_is_the_limiter_with_the_fewest_remaining_ties_to_the_first(
    flavor: Flavor,
) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // After the call: 9 of 10 left, 2 of 3, 4 of 5.
    assert_eq!(
        all(
            &mut con,
            &[
                "3", "x", "y", "z", "FIXED", "10", "60", "WINDOW", "3", "60", "THROTTLE", "4", "1",
                "60"
            ]
        ),
        [0, 3, 2, -1, 60]
    );
    // 2 of 3 left on both: the first key's, told apart by its reset.
    assert_eq!(
        all(
            &mut con,
            &["2", "p", "q", "FIXED", "3", "60", "WINDOW", "3", "30"]
        ),
        [0, 3, 2, -1, 60]
    );
    assert_eq!(
        all(
            &mut con,
            &["2", "q2", "p2", "WINDOW", "3", "30", "FIXED", "3", "60"]
        ),
        [0, 3, 2, -1, 30]
    );
}

fn when_denied_the_reply_is_the_denying_limiter_with_the_longest_wait_ties_to_the_first(
    flavor: Flavor,
) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.FIXED", &["f", "1", "60"]);
    limiter(&mut con, "CL.WINDOW", &["w", "1", "30"]);
    limiter(&mut con, "CL.FIXED", &["g", "2", "600", "2"]);
    limiter(&mut con, "CL.FIXED", &["h", "2", "60", "2"]);
    // Both deny: f for 60 s, w for 30 s.
    assert_eq!(
        all(
            &mut con,
            &["2", "w", "f", "WINDOW", "1", "30", "FIXED", "1", "60"]
        ),
        [1, 1, 0, 60, 60]
    );
    // A limiter that would admit answers −1 too, but does not bind a denied call.
    assert_eq!(
        all(
            &mut con,
            &["2", "open", "f", "FIXED", "100", "600", "FIXED", "1", "60"]
        ),
        [1, 1, 0, 60, 60]
    );
    // Two units never fit in f (−1: never) and fit in g in 600 s: never is longer.
    assert_eq!(
        all(
            &mut con,
            &["2", "g", "f", "FIXED", "2", "600", "FIXED", "1", "60", "QUANTITY", "2"]
        ),
        [1, 1, 0, -1, 60]
    );
    // f and h both free up in 60 s: the first key's, told apart by its limit.
    assert_eq!(
        all(
            &mut con,
            &["2", "f", "h", "FIXED", "1", "60", "FIXED", "2", "60"]
        ),
        [1, 1, 0, 60, 60]
    );
    assert_eq!(
        all(
            &mut con,
            &["2", "h", "f", "FIXED", "2", "60", "FIXED", "1", "60"]
        ),
        [1, 2, 0, 60, 60]
    );
}

fn detail_replies_each_limiter_in_key_order_and_a_peek_for_those_a_denial_spared(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        all_detail(
            &mut con,
            &[
                "3", "x", "y", "z", "FIXED", "10", "60", "WINDOW", "3", "60", "THROTTLE", "4", "1",
                "60"
            ]
        ),
        [[0, 10, 9, -1, 60], [0, 3, 2, -1, 60], [0, 5, 4, -1, 60]]
    );
    limiter(&mut con, "CL.FIXED", &["full", "1", "60"]);
    let detail = all_detail(
        &mut con,
        &[
            "4", "x", "full", "y", "z", "FIXED", "10", "60", "FIXED", "1", "60", "WINDOW", "3",
            "60", "THROTTLE", "4", "1", "60",
        ],
    );
    assert_eq!(
        detail,
        [
            limiter(&mut con, "CL.FIXED", &["x", "10", "60", "0"]),
            limiter(&mut con, "CL.FIXED", &["full", "1", "60"]),
            limiter(&mut con, "CL.WINDOW", &["y", "3", "60", "0"]),
            limiter(&mut con, "CL.THROTTLE", &["z", "4", "1", "60", "0"]),
        ]
    );
    assert_eq!(detail[0], [0, 10, 9, -1, 60]);
    assert_eq!(detail[1], [1, 1, 0, 60, 60]);
}

fn a_denied_call_writes_no_key_not_even_those_that_would_admit(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.THROTTLE", &["t", "4", "1", "60"]);
    limiter(&mut con, "CL.FIXED", &["full", "1", "60"]);
    let before = dumps(&mut con);
    let changes = dirty(&mut con);
    for args in [
        &[
            "3", "t", "new", "full", "THROTTLE", "4", "1", "60", "WINDOW", "5", "60", "FIXED", "1",
            "60",
        ][..],
        &[
            "2", "full", "t", "FIXED", "1", "60", "THROTTLE", "4", "1", "60", "MS",
        ],
        &[
            "2", "t", "new", "THROTTLE", "4", "1", "60", "WINDOW", "5", "60", "QUANTITY", "6",
        ],
    ] {
        assert_eq!(all(&mut con, args)[0], 1, "{args:?}");
        assert_eq!(dumps(&mut con), before, "{args:?}");
        assert_eq!(dirty(&mut con), changes, "{args:?}");
    }
}

fn a_peek_answers_without_writing_or_creating_any_key(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    limiter(&mut con, "CL.THROTTLE", &["t", "4", "1", "60"]);
    limiter(&mut con, "CL.FIXED", &["full", "1", "60"]);
    let before = dumps(&mut con);
    let changes = dirty(&mut con);
    let args = [
        "3", "t", "full", "new", "THROTTLE", "4", "1", "60", "FIXED", "1", "60", "WINDOW", "5",
        "60", "QUANTITY", "0",
    ];
    // Not limited even where full: a peek asks for nothing.
    assert_eq!(
        all_detail(&mut con, &args),
        [[0, 5, 4, -1, 60], [0, 1, 0, -1, 60], [0, 5, 5, -1, 0]]
    );
    assert_eq!(all(&mut con, &args), [0, 1, 0, -1, 60]);
    assert_eq!(dumps(&mut con), before);
    assert_eq!(dirty(&mut con), changes);
}

fn keywords_are_case_insensitive_and_options_come_in_any_order(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (i, tail) in [
        "FIXED 5 60 WINDOW 4 60 QUANTITY 2",
        "fixed 5 60 window 4 60 quantity 2",
        "Fixed 5 60 wInDoW 4 60 Quantity 2",
    ]
    .into_iter()
    .enumerate()
    {
        let args = words(&format!("2 a{i} b{i} {tail}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(all(&mut con, &args), [0, 4, 2, -1, 60], "{tail}");
    }
    for (i, options) in [
        "QUANTITY 2 DETAIL",
        "DETAIL QUANTITY 2",
        "detail quantity 2",
        "QUANTITY 2 MS DETAIL",
        "DETAIL MS QUANTITY 2",
        "ms detail quantity 2",
    ]
    .into_iter()
    .enumerate()
    {
        let (period, reset) = if options.to_uppercase().contains("MS") {
            ("60000", 60_000)
        } else {
            ("60", 60)
        };
        let args = words(&format!(
            "2 c{i} d{i} FIXED 5 {period} WINDOW 4 {period} {options}"
        ));
        let detail: Vec<Vec<i64>> = run(&mut con, ("CL.ALL", &args));
        // The fixed window's reset is exact at the call that opens it; the sliding window's
        // counts down from its unit's admission with real time.
        assert_eq!(detail[0], [0, 5, 3, -1, reset], "{options}");
        assert_eq!(detail[1][..4], [0, 4, 2, -1], "{options}");
        assert!(
            (reset - 5..=reset).contains(&detail[1][4]),
            "{options}: {detail:?}"
        );
    }
}

fn info_counts_calls_allowed_denied_peeks_and_errors(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    assert_eq!(
        stats_line(&mut con, "cl_all"),
        "calls=0,allowed=0,denied=0,peeks=0,refunds=0,errors=0"
    );
    let args = [
        "2", "k", "j", "FIXED", "1", "60", "THROTTLE", "3", "1", "60",
    ];
    assert_eq!(all(&mut con, &args)[0], 0);
    assert_eq!(all(&mut con, &args)[0], 1);
    assert_eq!(all_detail(&mut con, &args)[0][0], 1);
    let mut peek = args.to_vec();
    peek.extend(["QUANTITY", "0"]);
    all(&mut con, &peek);
    error_of(&mut con, "CL.ALL", &[b"0", b"k", b"FIXED", b"1", b"60"]);
    run::<()>(&mut con, ("RPUSH", &["list", "x"]));
    error_of(&mut con, "CL.ALL", &[b"1", b"list", b"FIXED", b"1", b"60"]);
    assert_eq!(
        stats_line(&mut con, "cl_all"),
        "calls=6,allowed=1,denied=2,peeks=1,refunds=0,errors=2"
    );
}

/// Every string in a reply, depth first.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => out.push(text.clone()),
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        _ => {}
    }
}

fn command_getkeys_lists_the_keys_and_command_docs_give_the_grammar(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    for (args, keys) in [
        (words("1 only WINDOW 5 60"), &["only"][..]),
        (
            words("2 {api:42}:s {api:42}:day THROTTLE 9 10 1 FIXED 100 86400 QUANTITY 2 MS DETAIL"),
            &["{api:42}:s", "{api:42}:day"],
        ),
        (
            words("3 a b c fixed 1 60 window 1 60 throttle 1 1 60 detail"),
            &["a", "b", "c"],
        ),
    ] {
        let got: Vec<String> = run(&mut con, ("COMMAND", &["GETKEYS", "CL.ALL"], &args));
        assert_eq!(got, keys, "{args:?}");
    }
    let docs: Value = run(&mut con, ("COMMAND", &["DOCS", "cl.all"]));
    let mut found = Vec::new();
    strings(&docs, &mut found);
    let found: Vec<String> = found.iter().map(|s| s.to_lowercase()).collect();
    for name in [
        "numkeys",
        "key",
        "throttle",
        "max_burst",
        "count",
        "period",
        "fixed",
        "window",
        "limit",
        "quantity",
        "ms",
        "detail",
    ] {
        assert!(
            found.iter().any(|s| s == name),
            "COMMAND DOCS cl.all lacks {name}: {found:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Replication and the AOF.

/// The commands in a stretch of AOF, each as its arguments.
pub fn aof_commands(mut rest: &[u8]) -> Vec<Vec<String>> {
    fn line<'a>(rest: &mut &'a [u8]) -> &'a str {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a RESP line");
        let text = std::str::from_utf8(&rest[..end]).expect("a RESP header");
        *rest = &rest[end + 2..];
        text
    }
    let mut commands = Vec::new();
    while !rest.is_empty() {
        let count: usize = line(&mut rest)[1..].parse().expect("*<count>");
        let args = (0..count)
            .map(|_| {
                let len: usize = line(&mut rest)[1..].parse().expect("$<len>");
                let arg = String::from_utf8_lossy(&rest[..len]).into_owned();
                rest = &rest[len + 2..];
                arg
            })
            .collect();
        commands.push(args);
    }
    commands
}

/// The file the server appends its writes to.
pub fn incremental_aof(server: &Server) -> std::path::PathBuf {
    let dir = server.dir.join("appendonlydir");
    std::fs::read_dir(&dir)
        .expect("an AOF directory")
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".incr.aof"))
        .expect("an incremental AOF")
}

/// Runs `call` and returns the commands it appended to the AOF (appendfsync always: written
/// before the reply).
pub fn appended(
    server: &Server,
    con: &mut redis::Connection,
    call: impl FnOnce(&mut redis::Connection),
) -> Vec<Vec<String>> {
    let aof = incremental_aof(server);
    let start = std::fs::read(&aof).unwrap().len();
    call(con);
    aof_commands(&std::fs::read(&aof).unwrap()[start..])
}

fn an_admitted_call_reaches_the_aof_as_one_transaction_of_what_each_single_command_writes(
    flavor: Flavor,
) {
    let server = Server::start_with(flavor, aof_options(None));
    let mut con = server.connection();
    let limiters = [
        ("CL.THROTTLE", "THROTTLE", &["5", "1", "60"][..]),
        ("CL.FIXED", "FIXED", &["5", "60"]),
        ("CL.WINDOW", "WINDOW", &["5", "60"]),
    ];
    let wrapper =
        |c: &Vec<String>| ["MULTI", "EXEC", "SELECT"].contains(&c[0].to_uppercase().as_str());
    // What each single command writes, by command name.
    let mut expected = Vec::new();
    for (command, _, params) in limiters {
        let key = format!("single:{command}");
        let written = appended(&server, &mut con, |con| {
            let mut args = vec![key.as_str()];
            args.extend(params);
            assert_eq!(limiter(con, command, &args)[0], 0);
        });
        let names: Vec<String> = written
            .iter()
            .filter(|c| !wrapper(c))
            .map(|c| {
                assert_eq!(c.get(1), Some(&key), "{written:?}");
                c[0].to_uppercase()
            })
            .collect();
        assert!(!names.is_empty(), "{command} wrote nothing");
        expected.push(names);
    }

    let keys = ["all:throttle", "all:fixed", "all:window"];
    let mut args = vec!["3"];
    args.extend(keys);
    for (_, keyword, params) in limiters {
        args.push(keyword);
        args.extend(params);
    }
    let written = appended(&server, &mut con, |con| assert_eq!(all(con, &args)[0], 0));
    let body: Vec<&Vec<String>> = written
        .iter()
        .skip_while(|c| c[0].eq_ignore_ascii_case("SELECT"))
        .collect();
    assert!(
        body.len() >= 2
            && body[0][0].eq_ignore_ascii_case("MULTI")
            && body[body.len() - 1][0].eq_ignore_ascii_case("EXEC"),
        "not one transaction: {written:?}"
    );
    let inner = &body[1..body.len() - 1];
    for (key, names) in keys.iter().zip(&expected) {
        let got: Vec<String> = inner
            .iter()
            .filter(|c| c.get(1).map(String::as_str) == Some(key))
            .map(|c| c[0].to_uppercase())
            .collect();
        assert_eq!(&got, names, "{key}: {written:?}");
    }
    assert_eq!(
        inner.len(),
        expected.iter().map(Vec::len).sum::<usize>(),
        "{written:?}"
    );
}

fn denied_and_peeking_calls_propagate_nothing(flavor: Flavor) {
    // No replication pings to move the offset while the test reads it.
    let primary = Server::start_with(
        flavor,
        Options {
            args: vec!["--repl-ping-replica-period".into(), "3600".into()],
            ..Options::default()
        },
    );
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let fill = [
        "2", "full", "open", "FIXED", "1", "3600", "WINDOW", "5", "3600",
    ];
    assert_eq!(all(&mut con, &fill)[0], 0);
    wait_for_replica(&mut con);
    let offset = info_field(&mut con, "replication", "master_repl_offset");
    let changes = dirty(&mut con);
    for args in [
        &fill[..],
        &[
            "2", "open", "full", "WINDOW", "5", "3600", "FIXED", "1", "3600", "MS",
        ],
        &[
            "2", "full", "open", "FIXED", "1", "3600", "WINDOW", "5", "3600", "QUANTITY", "0",
        ],
        &[
            "2", "new:a", "new:b", "THROTTLE", "1", "1", "60", "FIXED", "1", "60", "QUANTITY", "0",
        ],
    ] {
        all(&mut con, args);
        all_detail(&mut con, args);
    }
    assert_eq!(
        info_field(&mut con, "replication", "master_repl_offset"),
        offset
    );
    assert_eq!(dirty(&mut con), changes);
    wait_for_replica(&mut con);
    assert_eq!(keyspace(&mut replica.connection()), keyspace(&mut con));
}

// ---------------------------------------------------------------------------------------------
// A cluster.

fn keys_in_different_slots_get_crossslot_and_change_nothing(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    let args = ["2", "{a}x", "{b}y", "FIXED", "1", "60", "FIXED", "1", "60"];
    let mut con = cluster.client();
    let error = redis::cmd("CL.ALL")
        .arg(&args)
        .query::<Value>(&mut con)
        .expect_err("CROSSSLOT");
    assert_eq!(error.code(), Some("CROSSSLOT"), "{error}");
    // Straight to each primary, whichever slots it serves.
    for node in &cluster.nodes {
        let mut node_con = node.connection();
        if info_field(&mut node_con, "replication", "role") != "master" {
            continue;
        }
        let error = error_of(&mut node_con, "CL.ALL", &args.map(str::as_bytes));
        assert!(error.starts_with("CROSSSLOT"), "{error}");
        let keys: Vec<String> = run(&mut node_con, ("COMMAND", &["GETKEYS", "CL.ALL"], &args));
        assert_eq!(keys, ["{a}x", "{b}y"]);
    }
    for key in ["{a}x", "{b}y"] {
        let exists: i64 = run(&mut con, ("EXISTS", key));
        assert_eq!(exists, 0, "{key}");
    }
}

/// Inside MULTI/EXEC and inside a Lua script the limiters of a call decide together as they
/// do alone (DETAIL answering a limiter a denial spared as a peek), and the replica follows.
/// (That every form decides alike in a transaction and a script is the shared contract's.)
fn in_a_transaction_and_a_script_the_limiters_decide_together_and_replicas_follow(flavor: Flavor) {
    let primary = Server::start(flavor);
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    let args = [
        "2", "{u}:s", "{u}:d", "THROTTLE", "1", "2", "60", "FIXED", "2", "3600",
    ];
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("CL.ALL")
        .arg(&args)
        .cmd("CL.ALL")
        .arg(&args)
        .cmd("CL.ALL")
        .arg(&args);
    let replies: Vec<Vec<i64>> = pipe.query(&mut con).unwrap();
    assert_eq!(
        replies.iter().map(|r| r[0]).collect::<Vec<_>>(),
        [0, 0, 1],
        "{replies:?}"
    );
    run::<()>(&mut con, ("DEL", "{u}:d"));
    let script = "return redis.call('CL.ALL', '2', KEYS[1], KEYS[2], 'THROTTLE', '1', '2', \
                  '60', 'FIXED', '2', '3600', 'DETAIL')";
    let detail: Vec<Vec<i64>> = run(&mut con, ("EVAL", &[script, "2", "{u}:s", "{u}:d"]));
    // The per-second limiter is still full from the transaction: denied, and the fixed
    // window, emptied, left untouched (it answers as a peek).
    assert_eq!(detail[0][0], 1, "{detail:?}");
    assert_eq!(detail[1], [0, 2, 2, -1, 0], "{detail:?}");
    assert_eq!(snapshot(&mut con, b"{u}:d"), (None, -2));
    run::<()>(&mut con, ("DEL", "{u}:s"));
    let detail: Vec<Vec<i64>> = run(&mut con, ("EVAL", &[script, "2", "{u}:s", "{u}:d"]));
    assert_eq!((detail[0][0], detail[1][..3].to_vec()), (0, vec![0, 2, 1]));
    assert!(snapshot(&mut con, b"{u}:d").0.is_some());
    wait_for_replica(&mut con);
    assert_eq!(keyspace(&mut replica.connection()), keyspace(&mut con));
}
