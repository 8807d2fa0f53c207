//! Random argument vectors sent to real servers, to every command, CL.ALL included: random arity, numbers at and beyond the
//! limits of i64, empty strings, non-UTF-8 bytes, keys of other types and stored values
//! damaged at random. Every reply must be a valid five-integer array or an ERR / WRONGTYPE
//! error, and the server must answer PING throughout. REDIS_CELL_FUZZ_INPUTS sets how many
//! (default 20,000 per server).

use crate::harness::run;
use crate::harness::{Flavor, Rng, Server};
use redis::Value;

both_servers!(random_inputs_get_a_reply_or_an_error_and_never_crash);

fn inputs() -> u64 {
    std::env::var("REDIS_CELL_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

const COMMANDS: [&str; 4] = ["CL.THROTTLE", "CL.FIXED", "CL.WINDOW", "CL.ALL"];
const KEYS: [&[u8]; 8] = [
    b"limiter:a",
    b"limiter:b",
    b"list",
    b"hash",
    b"damaged",
    b"",
    &[0xff, 0xfe, 0x00],
    b"limiter:c",
];
const NUMBERS: [&str; 16] = [
    "0",
    "1",
    "-1",
    "2",
    "7",
    "60",
    "1000",
    "-0",
    "007",
    "+5",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999",
    "4611686018427",
    "1e3",
];

fn random_arg(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=4 => NUMBERS[rng.below(NUMBERS.len() as u64) as usize]
            .as_bytes()
            .to_vec(),
        5 => [
            "MS", "ms", "AT", "at", "Ms", "THROTTLE", "fixed", "WINDOW", "QUANTITY", "DETAIL",
            "REFUND", "refund",
        ][rng.below(12) as usize]
            .as_bytes()
            .to_vec(),
        6 => Vec::new(),
        7 => (0..rng.below(12)).map(|_| rng.below(256) as u8).collect(),
        _ => (1 + rng.below(1_000_000)).to_string().into_bytes(),
    }
}

/// Overwrites a random limiter key with a random or damaged value, or deletes it so that it
/// starts afresh.
fn damage(con: &mut redis::Connection, rng: &mut Rng) {
    let key = KEYS[[0, 1, 4, 7][rng.below(4) as usize]];
    if rng.below(2) == 0 {
        run::<()>(con, ("DEL", key));
        return;
    }
    let current: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(con).unwrap_or(None);
    let mut value = current.unwrap_or_default();
    if value.is_empty() || rng.below(3) == 0 {
        value = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect();
    } else {
        for _ in 0..=rng.below(3) {
            let at = rng.below(value.len() as u64) as usize;
            value[at] ^= 1 + rng.below(255) as u8;
        }
    }
    run::<()>(con, ("SET", key, value));
}

fn random_inputs_get_a_reply_or_an_error_and_never_crash(flavor: Flavor) {
    let mut server = Server::start(flavor);
    let mut con = server.connection();
    run::<()>(&mut con, ("RPUSH", &["list", "x"]));
    run::<()>(&mut con, ("HSET", &["hash", "f", "v"]));
    let mut rng = Rng::new(0xc0ffee ^ flavor as u64);
    let (mut replies, mut errors) = (0u64, 0u64);
    for i in 0..inputs() {
        if rng.below(50) == 0 {
            damage(&mut con, &mut rng);
        }
        let command = COMMANDS[rng.below(4) as usize];
        let mut cmd = redis::cmd(command);
        if command == "CL.ALL" {
            all_args(&mut cmd, &mut rng);
        } else {
            cmd.arg(KEYS[rng.below(KEYS.len() as u64) as usize]);
            if rng.below(2) == 0 {
                // Well formed, so that calls reach the stored state.
                let limit = (1 + rng.below(5)).to_string();
                if command == "CL.THROTTLE" {
                    cmd.arg(&limit);
                }
                cmd.arg(&[limit.as_str(), "60", &rng.below(4).to_string()]);
                if rng.below(2) == 0 {
                    cmd.arg("MS");
                }
                if rng.below(3) == 0 {
                    cmd.arg("REFUND");
                }
            } else {
                // Any arity, any arguments.
                for _ in 0..rng.below(9) {
                    cmd.arg(random_arg(&mut rng));
                }
            }
        }
        match cmd.query::<Value>(&mut con) {
            // CL.ALL's DETAIL: one reply per limiter.
            Ok(Value::Array(items)) if matches!(items.first(), Some(Value::Array(_))) => {
                for item in &items {
                    assert_valid_reply(item);
                }
                replies += 1;
            }
            Ok(reply) => {
                assert_valid_reply(&reply);
                replies += 1;
            }
            Err(error) => {
                let code = error.code().unwrap_or_default().to_owned();
                assert!(
                    code == "ERR" || code == "WRONGTYPE",
                    "unexpected error {error}"
                );
                assert!(!error.to_string().contains("internal error"), "{error}");
                errors += 1;
            }
        }
        if i % 1_000 == 0 {
            let pong: String = run(&mut con, &["PING"]);
            assert_eq!(pong, "PONG");
            assert!(server.is_running());
        }
    }
    assert!(
        replies > inputs() / 20,
        "only {replies} valid calls among {errors} errors"
    );
    println!("{flavor:?}: {replies} replies, {errors} errors");
}

/// A well-formed CL.ALL call half the time (keys among KEYS, so that some repeat, and random
/// limiters of small limits), anything after `CL.ALL` otherwise.
fn all_args(cmd: &mut redis::Cmd, rng: &mut Rng) {
    if rng.below(2) == 0 {
        for _ in 0..rng.below(12) {
            cmd.arg(random_arg(rng));
        }
        return;
    }
    let numkeys = 1 + rng.below(3) as usize;
    cmd.arg(numkeys);
    for _ in 0..numkeys {
        cmd.arg(KEYS[rng.below(KEYS.len() as u64) as usize]);
    }
    for _ in 0..numkeys {
        let limit = (1 + rng.below(5)).to_string();
        match rng.below(3) {
            0 => cmd.arg(&["THROTTLE", &limit, &limit, "60"]),
            1 => cmd.arg(&["FIXED", &limit, "60"]),
            _ => cmd.arg(&["WINDOW", &limit, "60"]),
        };
    }
    if rng.below(2) == 0 {
        cmd.arg(&["QUANTITY", &rng.below(4).to_string()]);
    }
    if rng.below(3) == 0 {
        cmd.arg("MS");
    }
    if rng.below(3) == 0 {
        cmd.arg("DETAIL");
    }
    if rng.below(3) == 0 {
        cmd.arg("REFUND");
    }
}

/// Five integers: `limited` 0 or 1, `remaining` within the limit, waits never negative.
fn assert_valid_reply(reply: &Value) {
    let Value::Array(items) = reply else {
        panic!("unexpected reply {reply:?}");
    };
    let values: Vec<i64> = items
        .iter()
        .map(|item| match item {
            Value::Int(v) => *v,
            other => panic!("not an integer: {other:?}"),
        })
        .collect();
    assert_eq!(values.len(), 5, "{values:?}");
    assert!(values[0] == 0 || values[0] == 1);
    assert!(values[2] >= 0 && values[2] <= values[1], "{values:?}");
    assert!(values[3] == -1 || values[3] >= 0, "{values:?}");
    assert!(values[4] >= 0, "{values:?}");
}
