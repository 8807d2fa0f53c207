//! The library's Lua (`lua/`), run by the server's own Lua: both generated forms load and
//! answer (`lua/dist`, from scripts/lua_forms.py); its exact integers agree with Rust's
//! `i128` on sums, products, truncated quotients and remainders, and read integers as the
//! module reads them (`string2ll`).

use redis_cell::decimal::parse_i64;

use crate::harness::cluster::Cluster;
use crate::harness::{
    aof_options, info_field, keyspace, replicate, stats_field, wait_for_replica, Flavor, Rng,
    Server, ServerKind,
};

both_servers!(
    both_forms_load_and_answer_with_the_crates_version,
    the_library_reads_the_clock_at_the_modules_precision,
    the_library_reads_arguments_as_the_module_does,
    cl_all_reads_arguments_as_the_module_does,
    the_librarys_writes_reach_a_replica_and_the_aof_as_they_are,
    in_a_cluster_the_library_runs_by_its_keys_and_cl_all_across_slots_is_refused,
    exact_integers_compute_as_i128_does,
    exact_integers_are_read_as_the_module_reads_them,
);

/// Two connections to `server`: one on DB 0 for the module's commands, one on DB 1 for the
/// library's functions, the library loaded.
fn module_and_library(server: &Server) -> (redis::Connection, redis::Connection) {
    let module = server.connection();
    let mut library = server.connection();
    let _: () = redis::cmd("SELECT")
        .arg(1)
        .query(&mut library)
        .expect("SELECT 1");
    load_library(&mut library);
    (module, library)
}

/// Loads the library (its FUNCTION LOAD form) on the server behind `con`.
pub fn load_library(con: &mut redis::Connection) {
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(read("lua/dist/redis_cell.lua"))
        .query(con)
        .expect("FUNCTION LOAD");
    assert_eq!(name, "redis_cell");
}

/// Each function FUNCTION LIST names, with its flags: the entries, at any depth, whose
/// fields include `name` and `flags`.
fn function_flags(listed: &redis::Value, found: &mut Vec<(String, Vec<String>)>) {
    let text = |value: &redis::Value| match value {
        redis::Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        redis::Value::SimpleString(text) => text.clone(),
        _ => String::new(),
    };
    let redis::Value::Array(items) = listed else {
        return;
    };
    let field = |key: &str| {
        items
            .chunks(2)
            .find(|pair| pair.len() == 2 && text(&pair[0]) == key)
            .map(|pair| &pair[1])
    };
    if let (Some(name), Some(redis::Value::Array(flags))) = (field("name"), field("flags")) {
        found.push((text(name), flags.iter().map(text).collect()));
    }
    for item in items {
        function_flags(item, found);
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).expect(path)
}

fn both_forms_load_and_answer_with_the_crates_version(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let library = read("lua/dist/redis_cell.lua");
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(&library)
        .query(&mut con)
        .expect("FUNCTION LOAD");
    assert_eq!(name, "redis_cell");
    // A second load replaces the first only when asked to.
    let again: redis::RedisResult<String> = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(&library)
        .query(&mut con);
    assert!(again.is_err(), "{again:?}");
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(&library)
        .query(&mut con)
        .expect("FUNCTION LOAD REPLACE");
    // no-writes: FCALL_RO may call it.
    let version: String = redis::cmd("FCALL_RO")
        .arg("cl_version")
        .arg(0)
        .query(&mut con)
        .expect("FCALL_RO cl_version");
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    // The flags the commands have: CL.HOLDERS reads (FCALL_RO takes it), CL.RELEASE is not
    // deny-oom.
    let holders: Vec<redis::Value> = redis::cmd("FCALL_RO")
        .arg("cl_holders")
        .arg(1)
        .arg("no-key")
        .query(&mut con)
        .expect("FCALL_RO cl_holders");
    assert!(holders.is_empty());
    let listed: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .query(&mut con)
        .expect("FUNCTION LIST");
    let mut flags = Vec::new();
    function_flags(&listed, &mut flags);
    for (function, flag) in [("cl_release", "allow-oom"), ("cl_holders", "no-writes")] {
        let (_, of) = flags
            .iter()
            .find(|(name, _)| name == function)
            .expect(function);
        assert!(of.iter().any(|f| f == flag), "{function}: {of:?}");
    }
    let by_script: String = redis::cmd("EVAL")
        .arg(read("lua/dist/redis_cell.script.lua"))
        .arg(0)
        .arg("cl_version")
        .query(&mut con)
        .expect("EVAL … cl_version");
    assert_eq!(by_script, version);
}

/// The same random mix of calls (every flag, keys damaged now and then) to the module's
/// `command` on DB 0 and to the library's `function` on DB 1, under one controlled clock
/// moved by `step_us` between calls: every reply and error alike, and each key's value and
/// absolute expiry alike after each call. With `binary`, the damage includes the module's
/// own value with a byte changed, cut short, or resealed after a change to its header (a
/// window's log), and the other form of window. Answers how many calls were admitted and
/// denied, and the longest value a key held.
fn differential(
    seed: u64,
    command: &str,
    function: &str,
    binary: bool,
    step_us: impl Fn(&mut Rng) -> i64,
    args_of: impl Fn(&mut Rng) -> Vec<String>,
) -> (u32, u32, usize) {
    differential_mix(seed, binary, step_us, |rng, key| {
        let args = args_of(rng);
        (
            command.to_owned(),
            function.to_owned(),
            vec![key.to_owned()],
            args,
        )
    })
}

/// As `differential`, each call's command (and the library's function), keys and arguments
/// chosen by `call_of`, given the key the run picked (and damages now and then). CL.ALL
/// takes its keys after their count, as FCALL does.
fn differential_mix(
    seed: u64,
    binary: bool,
    step_us: impl Fn(&mut Rng) -> i64,
    call_of: impl Fn(&mut Rng, &str) -> (String, String, Vec<String>, Vec<String>),
) -> (u32, u32, usize) {
    let mut now_us: i64 = 1_795_910_400_000_000;
    let server = Server::with_exact_fake_clock(now_us / 1000);
    let (mut module, mut library) = module_and_library(&server);
    let mut rng = Rng::new(seed);
    let (mut admitted, mut denied, mut longest) = (0, 0, 0);
    let mut asked_to_ban = 0;
    for _ in 0..4000 {
        now_us += step_us(&mut rng);
        server.set_clock_us(now_us);
        let key = format!("k{}", rng.below(3));
        // k2 is never damaged: its value grows as long as the calls make it.
        let damaged = key != "k2";
        if damaged && binary && rng.below(80) == 0 {
            let value = binary_damage(&mut rng, &mut module, &key);
            for con in [&mut module, &mut library] {
                let _: () = redis::cmd("SET")
                    .arg(&key)
                    .arg(&value)
                    .arg("PX")
                    .arg(5_000)
                    .query(con)
                    .expect("SET damage");
            }
            continue;
        }
        if damaged && rng.below(40) == 0 {
            // The same damage on both sides: a non-integer, an integer without expiry,
            // another type, or no key.
            let damage: Vec<&str> = match rng.below(7) {
                0 => vec!["SET", &key, "abc", "PX", "5000"],
                1 => vec!["SET", &key, "2"],
                2 => vec!["RPUSH", &key, "x"],
                // Numbers at the ends of 64 bits, and an expiry centuries away.
                3 => vec!["SET", &key, "9223372036854775000", "PX", "60000"],
                4 => vec!["SET", &key, "9223372036854775807", "PX", "60000"],
                5 => vec!["SET", &key, "3", "PXAT", "9000000000000000"],
                _ => vec!["DEL", &key],
            };
            for con in [&mut module, &mut library] {
                let _: redis::Value = redis::cmd("DEL").arg(&key).query(con).expect("DEL");
                let _: redis::Value = redis::Cmd::new().arg(&damage).query(con).expect("damage");
            }
            continue;
        }
        if damaged && rng.below(60) == 0 {
            // A lockout by hand (the module's alone), copied to the library's side byte for
            // byte; a lease set refuses it.
            let span = [1, 700, 2_500][rng.below(3) as usize];
            let banned: redis::RedisResult<i64> = redis::cmd("CL.BAN")
                .arg(&key)
                .arg(span)
                .arg("MS")
                .query(&mut module);
            if banned.is_ok() {
                let value: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut module).expect("GET");
                let at: i64 = redis::cmd("PEXPIRETIME")
                    .arg(&key)
                    .query(&mut module)
                    .expect("PEXPIRETIME");
                let _: () = redis::cmd("SET")
                    .arg(&key)
                    .arg(value)
                    .arg("PXAT")
                    .arg(at)
                    .query(&mut library)
                    .expect("SET the ban");
            }
            continue;
        }
        let (command, function, keys, mut args) = call_of(&mut rng, &key);
        // Now and then a denial locks the key out, where the command takes BAN.
        let takes_ban = !["CL.LEASE", "CL.RELEASE", "CL.HOLDERS"].contains(&command.as_str());
        let refunds = args.iter().any(|a| a.eq_ignore_ascii_case("REFUND"));
        if takes_ban && !refunds && rng.below(6) == 0 {
            asked_to_ban += 1;
            let ms = args.iter().any(|a| a.eq_ignore_ascii_case("MS"));
            let span = if ms {
                [1, 700, 2_500][rng.below(3) as usize]
            } else {
                1 + rng.below(2)
            };
            args.extend(["BAN".to_owned(), span.to_string()]);
        }
        let mut by_module = redis::cmd(&command);
        if command == "CL.ALL" {
            by_module.arg(keys.len());
        }
        let by_module: redis::RedisResult<redis::Value> =
            by_module.arg(&keys).arg(&args).query(&mut module);
        let by_library: redis::RedisResult<redis::Value> = redis::cmd("FCALL")
            .arg(&function)
            .arg(keys.len())
            .arg(&keys)
            .arg(&args)
            .query(&mut library);
        match (&by_module, &by_library) {
            (Ok(m), Ok(l)) => {
                assert_eq!(l, m, "{key} {command} {args:?} at {now_us} µs");
                // A limiter's reply starts with whether it was limited.
                match m {
                    redis::Value::Array(reply) if reply.first() == Some(&redis::Value::Int(0)) => {
                        admitted += 1
                    }
                    redis::Value::Array(reply) if reply.first() == Some(&redis::Value::Int(1)) => {
                        denied += 1
                    }
                    _ => {}
                }
            }
            (Err(m), Err(l)) => {
                assert_eq!(l.to_string(), m.to_string(), "{key} {command} {args:?}")
            }
            _ => panic!(
                "{key} {command} {args:?} at {now_us} µs: {by_module:?} against {by_library:?}"
            ),
        }
        for key in &keys {
            let state = |con: &mut redis::Connection| -> (redis::Value, i64) {
                let value = redis::cmd("DUMP").arg(key).query(con).expect("DUMP");
                let expiry = redis::cmd("PEXPIRETIME")
                    .arg(key)
                    .query(con)
                    .expect("PEXPIRETIME");
                (value, expiry)
            };
            let by_module = state(&mut module);
            let len: usize = redis::cmd("STRLEN")
                .arg(key)
                .query(&mut module)
                .unwrap_or(0);
            longest = longest.max(len);
            assert_eq!(
                state(&mut library),
                by_module,
                "{key} {command} {args:?} at {now_us} µs"
            );
        }
    }
    // The lockouts were made, and then read, on both sides alike.
    if asked_to_ban > 100 {
        assert!(stats_field(&mut module, "cl_bans", "banned") > 0);
        assert!(stats_field(&mut module, "cl_bans", "denied") > 0);
    }
    (admitted, denied, longest)
}

/// A value made from what the module holds at `key`: a byte changed, cut short, a log's
/// header changed and resealed so that the checks behind the checksum are reached, or the
/// other form of sliding window. Never one the library refuses where the module would not,
/// as docs/without-the-module.md says: one whose instants or counts pass 2^53.
fn binary_damage(rng: &mut Rng, module: &mut redis::Connection, key: &str) -> Vec<u8> {
    loop {
        let value = damaged_value(rng, module, key);
        if within_doubles(&value) {
            return value;
        }
    }
}

/// Whether a window's value keeps its instants and counts where the library's numbers are
/// exact: a log's header and block instants, and the instant a bucketed window's newest cell
/// leaves, below 2^52 (a period added stays below 2^53); its sum and its cells below 2^53.
fn within_doubles(value: &[u8]) -> bool {
    const EXACT: i128 = 1 << 53;
    const INSTANT: i128 = 1 << 52;
    let field = |at: usize| -> i128 {
        value.get(at..at + 8).map_or(0, |b| {
            i64::from_le_bytes(b.try_into().unwrap_or_default()) as i128
        })
    };
    match value.get(..3) {
        Some(b"CLW") => (12..value.len())
            .step_by(8)
            .filter(|&at| at == 12 || at == 20 || (at >= 48 && (at - 48) % 128 == 0))
            .all(|at| field(at).abs() < INSTANT),
        Some(b"CLB") if value.len() >= 32 => {
            let n = i128::from(u16::from_le_bytes([value[5], value[6]]));
            let mut width = [0u8; 8];
            width[..6].copy_from_slice(&value[9..15]);
            let width = i128::from(i64::from_le_bytes(width));
            let eight = value[4] == 8;
            (field(15) + n) * width < INSTANT
                && (0..EXACT).contains(&field(23))
                && (!eight
                    || (32..value.len())
                        .step_by(8)
                        .all(|at| (0..EXACT).contains(&field(at))))
        }
        _ => true,
    }
}

fn damaged_value(rng: &mut Rng, module: &mut redis::Connection, key: &str) -> Vec<u8> {
    let held: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(module).unwrap_or(None);
    let mut value = held.unwrap_or_default();
    if value.is_empty() || rng.below(5) == 0 {
        let n = [2, 3, 4, 10][rng.below(4) as usize];
        let _: Vec<i64> = redis::cmd("CL.WINDOW")
            .arg("damage:cells")
            .arg(5)
            .arg(n * 1000)
            .arg("MS")
            .arg("BUCKETS")
            .arg(n)
            .query(module)
            .expect("a bucketed window");
        let cells: Vec<u8> = redis::cmd("GETDEL")
            .arg("damage:cells")
            .query(module)
            .expect("GETDEL");
        return cells;
    }
    let at = rng.below(value.len() as u64) as usize;
    match rng.below(3) {
        0 => value[at] ^= 1 << rng.below(8),
        1 => value.truncate(at),
        _ => {
            let field = rng.below(redis_cell::window::HEADER_LEN as u64 - 4) as usize;
            if let Some(byte) = value.get_mut(field) {
                *byte = byte.wrapping_add(1 + rng.below(3) as u8);
            }
            redis_cell::window::reseal(&mut value);
        }
    }
    value
}

/// A quantity (most often none, which is 1) and each flag now and then, after `args`.
fn with_tail(rng: &mut Rng, mut args: Vec<String>, flags: &[&str]) -> Vec<String> {
    let quantity = [0, 1, 1, 1, 2, 3, 7][rng.below(7) as usize];
    if quantity != 1 || rng.below(2) == 0 {
        args.push(quantity.to_string());
    }
    for flag in flags {
        if rng.below(if *flag == "MS" { 2 } else { 5 }) == 0 {
            args.push((*flag).to_owned());
        }
    }
    args
}

#[test]
fn cl_fixed_answers_and_writes_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, _) = differential(
        0xf1ed_c10c,
        "CL.FIXED",
        "cl_fixed",
        false,
        |rng| 1000 * [0, 1, 7, 250, 999, 1000, 1001, 4000][rng.below(8) as usize],
        |rng| {
            let head = vec![
                (1 + rng.below(5)).to_string(),
                (1 + rng.below(4)).to_string(),
            ];
            let mut args = with_tail(
                rng,
                head,
                &["MS", "REFUND", "DRYRUN", "COUNTDENIED", "ATMOST", "ALIGN"],
            );
            // Now and then a calendar's unit for the period (ALIGN beside it is refused).
            if rng.below(4) == 0 {
                args[1] = ["DAY", "week", "MONTH", "Year"][rng.below(4) as usize].to_owned();
            }
            // A grid, now and then in a local time off UTC either way.
            let grid = args.iter().any(|a| a == "ALIGN") || args[1].parse::<i64>().is_err();
            if grid && rng.below(2) == 0 {
                let minutes = rng.below(2 * 1439 + 1) as i64 - 1439;
                args.extend(["OFFSET".to_owned(), minutes.to_string()]);
            }
            if args.iter().any(|a| a == "MS") && args[1].parse::<i64>().is_ok() {
                args[1] = (1 + rng.below(3000)).to_string();
            }
            // Now and then numbers whose sums pass 2^53, which the library decides in exact
            // integers rather than in doubles.
            if rng.below(20) == 0 {
                args[0] = ((1u64 << 53) - 1 - rng.below(3)).to_string();
                if args.len() > 2 && args[2].parse::<u64>().is_ok() {
                    args[2] = ((1u64 << 52) + rng.below(3)).to_string();
                }
            }
            args
        },
    );
    assert!(
        admitted > 500 && denied > 500,
        "{admitted} admitted, {denied} denied"
    );
}

#[test]
fn cl_throttle_answers_and_writes_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, _) = differential(
        0x7407_c10c,
        "CL.THROTTLE",
        "cl_throttle",
        false,
        // Microseconds, and whole seconds.
        |rng| [0, 1, 333, 1000, 20_001, 250_000, 1_000_000, 3_000_000][rng.below(8) as usize],
        |rng| {
            let head = vec![
                rng.below(5).to_string(),
                (1 + rng.below(7)).to_string(),
                (1 + rng.below(4)).to_string(),
            ];
            let mut args = with_tail(rng, head, &["MS", "REFUND", "DRYRUN", "ATMOST"]);
            if args.iter().any(|a| a == "MS") {
                args[2] = (1 + rng.below(3000)).to_string();
            }
            // Now and then a period of weeks, whose GCRA reaches past 2^51 ns from now: the
            // library decides it in exact integers rather than in doubles.
            if rng.below(10) == 0 {
                args[2] = (30 * 86_400 + rng.below(30 * 86_400)).to_string();
            }
            args
        },
    );
    assert!(
        admitted > 500 && denied > 500,
        "{admitted} admitted, {denied} denied"
    );
}

/// The exact window's log, long enough to span blocks and to be compacted: many limits are
/// large, and calls come milliseconds apart.
#[test]
fn cl_window_answers_and_writes_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, longest) = differential(
        0x3d0e_c10c,
        "CL.WINDOW",
        "cl_window",
        true,
        |rng| [0, 0, 1, 2, 5, 50, 130, 999, 1001, 7000][rng.below(10) as usize] * 1000,
        |rng| {
            let limit = match rng.below(4) {
                0 | 1 => 1 + rng.below(5),
                2 => 20 + rng.below(100),
                _ => 300 + rng.below(3000),
            };
            // A long period keeps a long log; a short one finds most of it expired, and
            // an admission under it reclaims the dead blocks.
            let period = if rng.below(150) == 0 {
                1 + rng.below(10)
            } else {
                3600
            };
            let head = vec![limit.to_string(), period.to_string()];
            let mut args = with_tail(rng, head, &["MS", "REFUND", "DRYRUN", "ATMOST"]);
            if args.iter().any(|a| a == "MS") {
                args[1] = if period == 3600 {
                    3_600_000
                } else {
                    1 + rng.below(20_000)
                }
                .to_string();
            }
            args
        },
    );
    assert!(
        admitted > 500 && denied > 200,
        "{admitted} admitted, {denied} denied"
    );
    assert!(longest > 150, "the longest log was {longest} bytes");
}

/// The bucketed form: cells on one grid and on another (a key whose n or period changed), a
/// cell count that outgrows its bytes, refunds across cells, and the exact form now and then
/// on the same keys, which each form names in its error.
#[test]
fn cl_window_buckets_answers_and_writes_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, _) = differential(
        0xb0c4_c10c,
        "CL.WINDOW",
        "cl_window",
        true,
        |rng| [0, 1, 7, 50, 250, 999, 1000, 1001, 4000][rng.below(9) as usize] * 1000,
        |rng| {
            let limit = match rng.below(4) {
                0 | 1 => 1 + rng.below(6),
                2 => 200 + rng.below(200),
                _ => 60_000 + rng.below(10_000),
            };
            let period = [2, 4, 10, 60][rng.below(4) as usize];
            let head = vec![limit.to_string(), period.to_string()];
            let mut args = with_tail(rng, head, &["MS", "REFUND", "DRYRUN", "ATMOST"]);
            if args.iter().any(|a| a == "MS") {
                args[1] = (period * 1000).to_string();
            }
            // Now and then more units than a cell of one byte holds.
            if args.len() > 2 && args[2].parse::<u32>().is_ok() && rng.below(8) == 0 {
                args[2] = "300".to_owned();
            }
            if rng.below(12) > 0 {
                let n = [2, 4, 5, 10, 20][rng.below(5) as usize];
                // Last most often, where most calls name it; else among the flags.
                let at = if rng.below(3) > 0 {
                    args.len()
                } else {
                    3.min(args.len())
                };
                args.insert(at, n.to_string());
                args.insert(at, "BUCKETS".to_owned());
            }
            args
        },
    );
    assert!(
        admitted > 500 && denied > 300,
        "{admitted} admitted, {denied} denied"
    );
}

/// A newest entry stored in a longer encoding than it needs (units 1 as `81 00`): a merge
/// into it re-encodes it shorter, and the value shrinks with it, as the module's does.
#[test]
fn a_merge_into_a_padded_entry_shortens_the_log_under_a_controlled_clock() {
    let now_ms = 1_795_910_400_000;
    let server = Server::with_exact_fake_clock(now_ms);
    let (mut module, mut library) = module_and_library(&server);
    let _: Vec<i64> = redis::cmd("CL.WINDOW")
        .arg("made")
        .arg(10)
        .arg(60)
        .query(&mut module)
        .expect("a log of one entry");
    let mut log: Vec<u8> = redis::cmd("GET")
        .arg("made")
        .query(&mut module)
        .expect("GET");
    assert_eq!(log.pop(), Some(1), "one unit, in one byte");
    log.extend([0x81, 0x00]);
    redis_cell::window::reseal(&mut log);
    let mut after = Vec::new();
    for (con, call) in [
        (&mut module, vec!["CL.WINDOW"]),
        (&mut library, vec!["FCALL", "cl_window", "1"]),
    ] {
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(&log)
            .arg("PX")
            .arg(60_000)
            .query(con)
            .expect("SET");
        let reply: Vec<i64> = redis::Cmd::new()
            .arg(&call)
            .arg("k")
            .arg(&["10", "60", "1"])
            .query(con)
            .expect("a merge");
        let value: Vec<u8> = redis::cmd("GET").arg("k").query(con).expect("GET");
        after.push((reply, value));
    }
    assert_eq!(after[0].0, [0, 10, 8, -1, 60]);
    assert_eq!(after[1], after[0]);
}

/// Leases taken, renewed, released and listed on shared keys, holders coming and going,
/// under limits that change from call to call: the set's bytes (its holes, packing, tail and
/// indexes) and its expiry alike after every call.
#[test]
fn cl_lease_release_and_holders_answer_and_write_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, longest) = differential_mix(
        0x1ea5_c10c,
        true,
        |rng| [0, 1, 3, 40, 300, 999, 2000, 9000][rng.below(8) as usize] * 1000,
        |rng, key| {
            let holder = format!("h{}", rng.below(40));
            let holder = if rng.below(10) == 0 {
                holder.repeat(1 + rng.below(30) as usize)
            } else {
                holder
            };
            let (command, function, mut args) = match rng.below(10) {
                0..=5 => {
                    let limit = [1, 2, 3, 5, 10, 40][rng.below(6) as usize];
                    let time = 1 + rng.below(30);
                    (
                        "CL.LEASE",
                        "cl_lease",
                        vec![limit.to_string(), time.to_string(), holder],
                    )
                }
                6..=8 => ("CL.RELEASE", "cl_release", vec![holder]),
                _ => ("CL.HOLDERS", "cl_holders", vec![]),
            };
            if rng.below(3) == 0 && command != "CL.RELEASE" {
                args.push("MS".to_owned());
                if command == "CL.LEASE" {
                    args[1] = (1 + rng.below(30_000)).to_string();
                }
            }
            if command == "CL.LEASE" && rng.below(8) == 0 {
                args.push("DRYRUN".to_owned());
            }
            let keys = vec![key.to_owned()];
            (command.to_owned(), function.to_owned(), keys, args)
        },
    );
    assert!(
        admitted > 800 && denied > 300,
        "{admitted} admitted, {denied} denied"
    );
    assert!(longest > 200, "the longest set was {longest} bytes");
}

/// Sets of hundreds of leases that mostly end together: a call that drops many at once, and
/// the packing and shortening after it.
#[test]
fn cl_lease_sets_of_hundreds_answer_and_write_as_the_module_under_a_controlled_clock() {
    let (admitted, _, longest) = differential_mix(
        0x5e75_c10c,
        false,
        |rng| {
            if rng.below(150) == 0 {
                3_500_000
            } else {
                rng.below(3) as i64 * 1000
            }
        },
        |rng, key| {
            let keys = vec![key.to_owned()];
            let holder = format!("holder-{}", rng.below(700)).repeat(1 + rng.below(3) as usize);
            match rng.below(20) {
                0 => (
                    "CL.RELEASE".to_owned(),
                    "cl_release".to_owned(),
                    keys,
                    vec![holder],
                ),
                1 => (
                    "CL.HOLDERS".to_owned(),
                    "cl_holders".to_owned(),
                    keys,
                    vec![],
                ),
                roll => {
                    // Most leases short; now and then one that keeps the key alive.
                    let time = if roll == 2 { "60" } else { "3" };
                    let args = vec!["1000".to_owned(), time.to_owned(), holder];
                    ("CL.LEASE".to_owned(), "cl_lease".to_owned(), keys, args)
                }
            }
        },
    );
    assert!(admitted > 1200, "{admitted} admitted");
    assert!(longest > 3000, "the longest set was {longest} bytes");
}

/// A limiter's words for CL.ALL on one of the mix's keys, each of which keeps one kind:
/// k0 a THROTTLE, k1 a FIXED, k2 a WINDOW (now and then of BUCKETS), k3 a LEASE. Periods
/// in the call's unit.
fn all_limiter(rng: &mut Rng, key: &str, ms: bool) -> Vec<String> {
    let span = |rng: &mut Rng| {
        if ms {
            (1 + rng.below(5000)).to_string()
        } else {
            (1 + rng.below(6)).to_string()
        }
    };
    let mut words = match key {
        "k0" => vec![
            "THROTTLE".to_owned(),
            rng.below(4).to_string(),
            (1 + rng.below(5)).to_string(),
        ],
        "k1" => vec!["FIXED".to_owned(), (1 + rng.below(6)).to_string()],
        "k2" => vec!["WINDOW".to_owned(), (1 + rng.below(6)).to_string()],
        _ => vec!["LEASE".to_owned(), (1 + rng.below(3)).to_string()],
    };
    words.push(span(rng));
    if key == "k2" && rng.below(6) == 0 {
        // A period that the cells cut, or not.
        words.extend([
            "BUCKETS".to_owned(),
            ["2", "3", "4"][rng.below(3) as usize].to_owned(),
        ]);
    }
    if key == "k1" {
        // Windows on the clock: aligned, or a calendar's unit, in a local time or not.
        match rng.below(6) {
            0 => words.push("ALIGN".to_owned()),
            1 => words[2] = ["DAY", "WEEK", "MONTH", "YEAR"][rng.below(4) as usize].to_owned(),
            _ => {}
        }
        let grid = words.len() > 3 || words[2].parse::<i64>().is_err();
        if grid && rng.below(2) == 0 {
            let minutes = rng.below(2 * 1439 + 1) as i64 - 1439;
            words.extend(["OFFSET".to_owned(), minutes.to_string()]);
        }
    }
    words
}

/// CL.ALL over one to four of the mix's keys, every option now and then, with the single
/// commands of those keys' limiters in between, and bad input: a key twice, a limiter
/// missing or extra, a lease without its holder, a holder without a lease.
#[test]
fn cl_all_answers_and_writes_as_the_module_under_a_controlled_clock() {
    // Whole milliseconds from half of one: a refund that moves a TAT back to a whole
    // millisecond is the one documented difference (docs/without-the-module.md).
    let started = std::cell::Cell::new(false);
    let (admitted, denied, _) = differential_mix(
        0xa11c_c10c,
        false,
        |rng| {
            let half = if started.replace(true) { 0 } else { 500 };
            [0, 1, 5, 200, 999, 1000, 3000][rng.below(7) as usize] * 1000 + half
        },
        |rng, _| {
            let ms = rng.below(3) == 0;
            let mut keys: Vec<String> = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let key = format!("k{}", rng.below(4));
                if !keys.contains(&key) || rng.below(30) == 0 {
                    keys.push(key);
                }
            }
            let mut args: Vec<String> = Vec::new();
            for key in &keys {
                args.extend(all_limiter(rng, key, ms));
            }
            match rng.below(40) {
                0 => {
                    args.drain(..);
                }
                1 => args.extend(["FIXED".to_owned(), "3".to_owned(), "6".to_owned()]),
                _ => {}
            }
            let quantity = [0, 1, 1, 1, 2, 3][rng.below(6) as usize];
            if quantity != 1 || rng.below(3) == 0 {
                args.extend(["QUANTITY".to_owned(), quantity.to_string()]);
            }
            for (flag, one_in) in [
                ("MS", 0),
                ("REFUND", 6),
                ("DRYRUN", 6),
                ("DETAIL", 3),
                ("ATMOST", 4),
            ] {
                if (flag == "MS" && ms) || (one_in > 0 && rng.below(one_in) == 0) {
                    args.push(flag.to_owned());
                }
            }
            let leases = keys.iter().any(|key| key == "k3");
            if (leases && rng.below(12) > 0) || rng.below(40) == 0 {
                args.extend(["HOLDER".to_owned(), format!("h{}", rng.below(6))]);
            }
            // Now and then one key's own command instead.
            if rng.below(5) == 0 {
                let key = keys[0].clone();
                let mut words = all_limiter(rng, &key, ms);
                let command = words.remove(0);
                if command == "LEASE" {
                    words.push(format!("h{}", rng.below(6)));
                }
                if ms {
                    words.push("MS".to_owned());
                }
                let function = format!("cl_{}", command.to_lowercase());
                return (format!("CL.{command}"), function, vec![key], words);
            }
            ("CL.ALL".to_owned(), "cl_all".to_owned(), keys, args)
        },
    );
    assert!(
        admitted > 500 && denied > 500,
        "{admitted} admitted, {denied} denied"
    );
}

/// Guava's limiter, bursty and warming up, at rates that change from call to call on shared
/// keys (a rescale), a shape now and then that the key does not hold, steps down to a
/// microsecond.
#[test]
fn cl_smooth_answers_and_writes_as_the_module_under_a_controlled_clock() {
    let (admitted, denied, _) = differential(
        0x5300_c10c,
        "CL.SMOOTH",
        "cl_smooth",
        false,
        |rng| [0, 1, 7, 333, 1000, 20_001, 250_000, 1_000_000][rng.below(8) as usize],
        |rng| {
            let mut args = vec![
                (1 + rng.below(10)).to_string(),
                (1 + rng.below(3)).to_string(),
            ];
            if rng.below(3) > 0 {
                args.push(rng.below(4).to_string());
            }
            let ms = rng.below(3) == 0;
            if ms {
                args[1] = (1 + rng.below(3000)).to_string();
                args.push("MS".to_owned());
            }
            let span = |rng: &mut Rng| {
                if ms {
                    (1 + rng.below(5000)).to_string()
                } else {
                    (1 + rng.below(5)).to_string()
                }
            };
            // Mostly one shape per key, so that most calls find the shape they name.
            match rng.below(10) {
                0..=3 => {}
                4..=5 => args.extend(["BURST".to_owned(), span(rng)]),
                6..=8 => {
                    args.extend(["WARMUP".to_owned(), span(rng)]);
                    if rng.below(2) == 0 {
                        args.extend(["COLD".to_owned(), (1 + rng.below(5)).to_string()]);
                    }
                }
                _ => args.push("DRYRUN".to_owned()),
            }
            args
        },
    );
    assert!(
        admitted > 500 && denied > 200,
        "{admitted} admitted, {denied} denied"
    );
}

/// Long logs, milliseconds apart: the searches over blocks (the oldest live entry, when
/// enough units leave), the walk back of a refund, and the reclaiming of dead blocks once a
/// short period finds most of a log expired.
#[test]
fn cl_window_keeps_long_logs_as_the_module_does_under_a_controlled_clock() {
    let (admitted, denied, longest) = differential(
        0x1096_c10c,
        "CL.WINDOW",
        "cl_window",
        false,
        |rng| [0, 1, 1, 2, 3, 200][rng.below(6) as usize] * 1000,
        |rng| {
            let roll = rng.below(100);
            let limit = if roll < 25 {
                1 + rng.below(50)
            } else {
                1_000_000
            };
            let period = if roll == 99 { 2 + rng.below(5) } else { 3600 };
            let mut args = vec![
                limit.to_string(),
                period.to_string(),
                (1 + rng.below(3)).to_string(),
            ];
            match roll {
                25..=27 => args.push("REFUND".to_owned()),
                28..=31 => args.push("DRYRUN".to_owned()),
                _ => {}
            }
            args
        },
    );
    assert!(
        admitted > 1000 && denied > 100,
        "{admitted} admitted, {denied} denied"
    );
    assert!(longest > 400, "the longest log was {longest} bytes");
}

/// On the server's real clock, which no test can steer on every server: the module and the
/// library write TATs in the same steps, a microsecond where the module API reads one
/// (Redis 7.2+, Valkey) and a millisecond on Redis 7.0, and count alike.
fn the_library_reads_the_clock_at_the_modules_precision(flavor: Flavor) {
    let server = Server::start(flavor);
    let (mut module, mut library) = module_and_library(&server);
    let step_ns: i64 = if ServerKind::of(&mut module).module_clock_in_microseconds() {
        1_000
    } else {
        1_000_000
    };
    let (mut finer, mut calls) = (0, 0);
    // A unit a second, in bursts of 100: every call is admitted, and the key lives a second,
    // long after it is read even on a loaded machine.
    for i in 0..20 {
        let key = format!("clock:{i}");
        let by_module: Vec<i64> = redis::cmd("CL.THROTTLE")
            .arg(&key)
            .arg(&[99, 1000, 1000][..])
            .query(&mut module)
            .expect("CL.THROTTLE");
        let by_library: Vec<i64> = redis::cmd("FCALL")
            .arg("cl_throttle")
            .arg(1)
            .arg(&key)
            .arg(&[99, 1000, 1000][..])
            .query(&mut library)
            .expect("FCALL cl_throttle");
        assert_eq!(by_library[..3], by_module[..3], "{key}");
        for con in [&mut module, &mut library] {
            let tat: i64 = redis::cmd("GET").arg(&key).query(con).expect("GET");
            assert_eq!(
                tat % step_ns,
                0,
                "{key}: {tat} is not in steps of {step_ns} ns"
            );
            finer += i32::from(tat % (step_ns * 1000) != 0);
            calls += 1;
        }
    }
    // In steps of exactly that size, not coarser: most readings fall between milliseconds.
    assert!(
        finer > calls / 2 || step_ns == 1_000_000,
        "{finer} of {calls} finer than a ms"
    );
}

/// The library's constants, written as limbs (FUNCTION LOAD's top level cannot parse), are
/// the numbers they stand for.
#[test]
fn the_librarys_constants_are_the_modules_numbers() {
    let server = Server::start(Flavor::Valkey);
    let mut con = server.connection();
    let script = read("lua/errors.lua")
        + &read("lua/grammar.lua")
        + &read("lua/exact.lua")
        + &read("lua/args.lua")
        + r#"
local function n(x) return string.format('%d', x) end
return { exact_tostring(ARGS_I64_MAX), exact_tostring(ARGS_MAX_SPAN_NS),
  n(ARGS_LIBRARY_MAX), n(ARGS_MAX_SPAN.ms), n(ARGS_MAX_SPAN.s),
  exact_tostring(ARGS_NANOS.s), exact_tostring(ARGS_NANOS.ms) }
"#;
    let constants: Vec<String> = redis::cmd("EVAL")
        .arg(script)
        .arg(0)
        .query(&mut con)
        .expect("the constants");
    let expected = [
        i64::MAX,
        redis_cell::time::MAX_SPAN_NS,
        (1 << 53) - 1,
        redis_cell::args::MAX_BLOCK_MS,
        redis_cell::time::MAX_SPAN_NS / redis_cell::time::NANOS_PER_SECOND,
        redis_cell::time::NANOS_PER_SECOND,
        redis_cell::time::NANOS_PER_MILLI,
    ];
    assert_eq!(constants, expected.map(|n| n.to_string()));
}

/// Redis 6.2, which has no Functions and cannot load the module, runs the script form.
#[test]
fn redis_6_runs_the_script_form() {
    let server = Server::bare(Flavor::Redis6);
    let mut con = server.connection();
    let version: String = redis::cmd("EVAL")
        .arg(read("lua/dist/redis_cell.script.lua"))
        .arg(0)
        .arg("cl_version")
        .query(&mut con)
        .expect("EVAL … cl_version on Redis 6.2");
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let unknown: redis::RedisResult<String> = redis::cmd("EVAL")
        .arg(read("lua/dist/redis_cell.script.lua"))
        .arg(0)
        .arg("cl_nothing")
        .query(&mut con);
    let error = unknown.expect_err("an unknown function");
    assert!(
        error
            .to_string()
            .contains("the library has no function cl_nothing"),
        "{error}"
    );
    // Its limiters, on keys that exist the second time (6.2 has no PEXPIRETIME).
    for (key, function, args, first, second) in [
        ("fixed", "cl_fixed", &["3", "60"][..], [0, 3, 2], [0, 3, 1]),
        (
            "throttle",
            "cl_throttle",
            &["2", "3", "60"][..],
            [0, 3, 2],
            [0, 3, 1],
        ),
        (
            "window",
            "cl_window",
            &["3", "60"][..],
            [0, 3, 2],
            [0, 3, 1],
        ),
        (
            "cells",
            "cl_window",
            &["3", "60", "BUCKETS", "6"][..],
            [0, 3, 2],
            [0, 3, 1],
        ),
    ] {
        for expected in [first, second] {
            let reply: Vec<i64> = redis::cmd("EVAL")
                .arg(read("lua/dist/redis_cell.script.lua"))
                .arg(1)
                .arg(key)
                .arg(function)
                .arg(args)
                .query(&mut con)
                .expect("a limiter on Redis 6.2");
            assert_eq!(reply[..3], expected, "{function}");
        }
    }
}

/// lua/exact.lua, and a test entry that applies `ARGV[1]` to the integers after it and
/// answers the result in decimal (false where parsing refuses a number).
fn script() -> String {
    read("lua/exact.lua")
        + r#"
local op = ARGV[1]
if op == 'parse' then
  local v = exact_parse(ARGV[2])
  return v and exact_tostring(v) or false
end
local a, b = exact_parse(ARGV[2]), exact_parse(ARGV[3])
if op == 'add' then return exact_tostring(exact_add(a, b)) end
if op == 'sub' then return exact_tostring(exact_sub(a, b)) end
if op == 'mul' then return exact_tostring(exact_mul(a, b)) end
if op == 'cmp' then return exact_cmp(a, b) end
if op == 'muldiv' then
  local q, r = exact_divmod(exact_mul(a, b), exact_parse(ARGV[4]))
  return { exact_tostring(q), exact_tostring(r) }
end
return redis.error_reply('no such op')
"#
}

/// A random i64 of a random magnitude, often an extreme.
fn number(rng: &mut Rng) -> i64 {
    match rng.below(10) {
        0 => [i64::MIN, i64::MAX, 0, 1, -1][rng.below(5) as usize],
        _ => {
            let bits = rng.below(64);
            let magnitude = (rng.next() >> (63 - bits.min(62))) as i64;
            if rng.below(2) == 0 {
                magnitude
            } else {
                -magnitude
            }
        }
    }
}

fn exact_integers_compute_as_i128_does(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let script = redis::Script::new(&script());
    let mut rng = Rng::new(0x1ee7 ^ flavor as u64);
    for _ in 0..1500 {
        let (a, b) = (number(&mut rng), number(&mut rng));
        let (wa, wb) = (i128::from(a), i128::from(b));
        let call = |op: &str, con: &mut redis::Connection, extra: Option<i64>| -> redis::Value {
            let mut invocation = script.arg(op);
            invocation.arg(a).arg(b);
            if let Some(c) = extra {
                invocation.arg(c);
            }
            invocation.invoke(con).expect("the script answers")
        };
        let text = |v: redis::Value| -> String { redis::from_redis_value(v).expect("text") };
        assert_eq!(
            text(call("add", &mut con, None)),
            (wa + wb).to_string(),
            "{a} + {b}"
        );
        assert_eq!(
            text(call("sub", &mut con, None)),
            (wa - wb).to_string(),
            "{a} - {b}"
        );
        assert_eq!(
            text(call("mul", &mut con, None)),
            (wa * wb).to_string(),
            "{a} * {b}"
        );
        let order: i64 = redis::from_redis_value(call("cmp", &mut con, None)).expect("order");
        assert_eq!(order, wa.cmp(&wb) as i64, "{a} <=> {b}");
        let c = match number(&mut rng) {
            0 => 7,
            c => c,
        };
        let (q, r): (String, String) =
            redis::from_redis_value(call("muldiv", &mut con, Some(c))).expect("a pair");
        let wc = i128::from(c);
        assert_eq!(
            (q, r),
            ((wa * wb / wc).to_string(), (wa * wb % wc).to_string()),
            "{a} * {b} / {c}"
        );
    }
}

fn exact_integers_are_read_as_the_module_reads_them(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let script = redis::Script::new(&script());
    let mut rng = Rng::new(0x5eed ^ flavor as u64);
    let mut texts: Vec<String> = [
        "0",
        "15",
        "-7",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999999",
        "",
        "-",
        "-0",
        "007",
        "+1",
        " 1",
        "1 ",
        "0x10",
        "1e3",
        "1.5",
        "inf",
        "nan",
        "10000000",
        "-10000000",
        "9999999",
    ]
    .iter()
    .map(|t| t.to_string())
    .collect();
    const ALPHABET: &[u8] = b"0123456789-+ .ex";
    for _ in 0..1000 {
        let len = rng.below(22) as usize;
        texts.push(
            (0..len)
                .map(|_| char::from(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]))
                .collect(),
        );
        texts.push(number(&mut rng).to_string());
    }
    for text in texts {
        let read: Option<String> = script
            .arg("parse")
            .arg(&text)
            .invoke(&mut con)
            .expect("the script answers");
        assert_eq!(
            read,
            parse_i64(text.as_bytes()).map(|v| v.to_string()),
            "{text:?}"
        );
    }
}

/// Two replies to the same call on untouched keys, made `apart_ms` apart on the real clock
/// (under a millisecond, but on a loaded machine): equal, but for the waits of a bucketed
/// window or an aligned one, which count to edges on a grid drawn from the epoch: they may
/// differ by the time between the calls and the unit it straddles, or, where the calls
/// straddle an edge, by a cell or a period (within that).
fn assert_alike(library: &redis::Value, module: &redis::Value, args: &[String], apart_ms: i64) {
    let cells = cell_widths(args);
    let slack = 1 + apart_ms;
    match (library, module) {
        (redis::Value::Array(l), redis::Value::Array(m))
            if !cells.is_empty() && l.len() == m.len() =>
        {
            for (i, (l, m)) in l.iter().zip(m).enumerate() {
                match (l, m) {
                    (redis::Value::Int(l), redis::Value::Int(m)) if i >= 3 => {
                        let apart = (l - m).abs();
                        assert!(
                            apart <= slack
                                || cells
                                    .iter()
                                    .any(|w| (apart as f64 - w).abs() <= slack as f64),
                            "{args:?}: {library:?} against {module:?}"
                        )
                    }
                    _ => assert_alike(l, m, args, apart_ms),
                }
            }
        }
        _ => assert_eq!(library, module, "{args:?}"),
    }
}

/// The width of a cell, in the call's unit, of each `BUCKETS n` among a call's words, its
/// period taken as CL.WINDOW's (the second word) or as CL.ALL's (the word before BUCKETS),
/// whichever the words hold; and each aligned window's period.
fn cell_widths(args: &[String]) -> Vec<f64> {
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<f64>().ok());
    let mut widths = Vec::new();
    for (i, word) in args.iter().enumerate() {
        if !word.eq_ignore_ascii_case("BUCKETS") {
            continue;
        }
        let Some(n) = number(i + 1).filter(|n| *n >= 1.0) else {
            continue;
        };
        for period in [number(1), i.checked_sub(1).and_then(number)]
            .into_iter()
            .flatten()
        {
            widths.push(period / n);
        }
    }
    // An aligned window's waits count to the edges of its period's grid alike: its period
    // is CL.FIXED's second word, or the one after a FIXED limiter's limit.
    if args.iter().any(|word| word.eq_ignore_ascii_case("ALIGN")) {
        let fixed = args
            .iter()
            .enumerate()
            .filter(|(_, w)| w.eq_ignore_ascii_case("FIXED"));
        widths.extend(number(1));
        widths.extend(fixed.filter_map(|(i, _)| number(i + 2)));
    }
    widths
}

/// A word the commands' grammar has an opinion on.
fn grammar_word(rng: &mut Rng) -> String {
    const WORDS: [&str; 36] = [
        "BAN",
        "ALIGN",
        "OFFSET",
        "month",
        "DAY",
        "YEAR",
        "ATMOST",
        "COUNT",
        "BURST",
        "warmup",
        "COLD",
        "QUANTITY",
        "MS",
        "ms",
        "Refund",
        "DRYRUN",
        "dryrun",
        "COUNTDENIED",
        "AT",
        "at",
        "BLOCK",
        "block",
        "BUCKETS",
        "x",
        "",
        "-1",
        "0",
        "1",
        "2",
        "007",
        "1e3",
        "0x10",
        " 5",
        "9007199254740992",
        "4611686018",
        "9223372036",
    ];
    match rng.below(3) {
        0 => number(rng).to_string(),
        1 => (rng.below(100)).to_string(),
        _ => WORDS[rng.below(WORDS.len() as u64) as usize].to_owned(),
    }
}

/// The keywords that take a value.
const VALUED: [&str; 9] = [
    "QUANTITY", "BUCKETS", "BURST", "WARMUP", "COLD", "AT", "BLOCK", "OFFSET", "BAN",
];

/// A BLOCK the module would take, wherever it stands, waits at most 5 ms.
fn short_waits(args: &mut [String]) {
    for at in 1..args.len() {
        if args[at - 1].eq_ignore_ascii_case("BLOCK")
            && parse_i64(args[at].as_bytes()).is_some_and(|t| t >= 0)
        {
            args[at] = "5".to_owned();
        }
    }
}

/// Random argument lists, much of it bad input, to the module's `command` and to the
/// library's `function`, each call on a key of its own: the same error text, or the same
/// reply (on an untouched key, the reply does not depend on the instant). The library's own
/// refusals come only where the module would take a BLOCK or a number past 2^53 − 1.
fn grammar_differential(
    flavor: Flavor,
    (command, function): (&str, &str),
    head: usize,
    least: u32,
    known: &[&str],
) {
    let server = Server::start(flavor);
    let (mut module, mut library) = module_and_library(&server);
    let mut rng = Rng::new(0xf1ed ^ head as u64 ^ flavor as u64);
    let mut agreed = 0;
    for i in 0..known.len() + 3000 {
        if let Some(text) = known.get(i) {
            let args: Vec<String> = text.split(' ').map(str::to_owned).collect();
            agreed += u32::from(alike(
                &mut module,
                &mut library,
                (command, function),
                i,
                &args,
            ));
            continue;
        }
        let mut args: Vec<String> = (0..rng.below(13)).map(|_| grammar_word(&mut rng)).collect();
        // Mostly a plausible head first, so that the tail is reached.
        if rng.below(3) > 0 && args.len() >= head {
            for (j, arg) in args.iter_mut().take(head).enumerate() {
                *arg = (u64::from(j > 0) + rng.below(20)).to_string();
            }
        }
        // Now and then a value past the library's doubles after each keyword that takes one.
        for at in 1..args.len() {
            if VALUED.iter().any(|k| args[at - 1].eq_ignore_ascii_case(k)) && rng.below(3) == 0 {
                args[at] = "9007199254740993".to_owned();
            }
        }
        short_waits(&mut args);
        agreed += u32::from(alike(
            &mut module,
            &mut library,
            (command, function),
            i,
            &args,
        ));
    }
    assert!(
        agreed > least,
        "only {agreed} calls were answered alike by both"
    );
}

/// One call of `command` and of its `function`, each on a key of its own: the same error
/// text, or the same reply (whether they answered alike), or only the library's own refusals,
/// where the module would take a BLOCK or a number past 2^53 − 1.
fn alike(
    module: &mut redis::Connection,
    library: &mut redis::Connection,
    (command, function): (&str, &str),
    i: usize,
    args: &[String],
) -> bool {
    let too_large = |word: &String| parse_i64(word.as_bytes()).is_some_and(|v| v > (1 << 53) - 1);
    let key = format!("grammar:{i}");
    let asked = std::time::Instant::now();
    let by_module: redis::RedisResult<redis::Value> =
        redis::cmd(command).arg(&key).arg(args).query(module);
    let by_library: redis::RedisResult<redis::Value> = redis::cmd("FCALL")
        .arg(function)
        .arg(1)
        .arg(&key)
        .arg(args)
        .query(library);
    let apart_ms = asked.elapsed().as_millis() as i64;
    match (by_module, by_library) {
        (Err(m), Err(l)) => {
            assert_eq!(l.to_string(), m.to_string(), "{args:?}");
            false
        }
        (Ok(m), Ok(l)) => {
            assert_alike(&l, &m, args, apart_ms);
            true
        }
        (Ok(_), Err(l)) => {
            let l = l.to_string();
            // Every limiter takes BLOCK among its options, anywhere.
            let blocks = args.iter().any(|a| a.eq_ignore_ascii_case("BLOCK"));
            // A smooth limiter's reservation past 2^53 µs (docs/without-the-module.md).
            let far = command == "CL.SMOOTH" && l.contains("quantity is too large for the library");
            assert!(
                (blocks && l.contains("cannot wait in the library"))
                    || (args.iter().any(too_large) && l.contains("is too large for the library"))
                    || far,
                "{args:?}: {l}"
            );
            false
        }
        (Err(m), Ok(l)) => {
            panic!("{args:?}: the module refused ({m}), the library answered {l:?}")
        }
    }
}

fn the_library_reads_arguments_as_the_module_does(flavor: Flavor) {
    // The fewest calls both answer alike: a lease needs three words right.
    // And, first, calls random words reach too seldom: every value past the library's
    // doubles, beside what the module would refuse first.
    const PAST: &str = "9007199254740993";
    let fixed = [
        format!("5 60 {PAST}"),
        format!("5 60 1 BLOCK {PAST}"),
        format!("5 60 AT {PAST}"),
    ];
    let window = [
        format!("5 60 BUCKETS {PAST}"),
        format!("5 60 {PAST} DRYRUN"),
    ];
    let smooth = [
        format!("1 60 WARMUP 10 COLD {PAST}"),
        format!("1 60 COLD {PAST}"),
        format!("1 60 BURST 1 WARMUP 1 COLD {PAST}"),
        format!("{PAST} 60"),
        format!("1 60 BURST {PAST}"),
        format!("1 60 {PAST}"),
    ];
    fn strs(calls: &[String]) -> Vec<&str> {
        calls.iter().map(String::as_str).collect()
    }
    grammar_differential(flavor, ("CL.FIXED", "cl_fixed"), 2, 200, &strs(&fixed));
    grammar_differential(flavor, ("CL.THROTTLE", "cl_throttle"), 3, 200, &[]);
    grammar_differential(flavor, ("CL.WINDOW", "cl_window"), 2, 200, &strs(&window));
    grammar_differential(flavor, ("CL.LEASE", "cl_lease"), 2, 100, &[]);
    grammar_differential(flavor, ("CL.RELEASE", "cl_release"), 0, 100, &[]);
    grammar_differential(flavor, ("CL.HOLDERS", "cl_holders"), 0, 100, &[]);
    grammar_differential(flavor, ("CL.SMOOTH", "cl_smooth"), 2, 100, &strs(&smooth));
}

/// CL.ALL's grammar: one to three keys (now and then one twice, or none), then limiters,
/// options and bad words, each call on keys of its own. The same answers as the single
/// commands' grammar test asks for.
fn cl_all_reads_arguments_as_the_module_does(flavor: Flavor) {
    const WORDS: [&str; 14] = [
        "THROTTLE", "FIXED", "window", "LEASE", "SMOOTH", "QUANTITY", "DETAIL", "HOLDER", "MS",
        "REFUND", "DRYRUN", "BLOCK", "BUCKETS", "x",
    ];
    let server = Server::start(flavor);
    let (mut module, mut library) = module_and_library(&server);
    let mut rng = Rng::new(0xa11 ^ flavor as u64);
    let mut agreed = 0;
    for i in 0..3000 {
        let mut keys: Vec<String> = (0..rng.below(4)).map(|k| format!("all:{i}:{k}")).collect();
        if keys.len() > 1 && rng.below(10) == 0 {
            keys[1] = keys[0].clone();
        }
        let mut args: Vec<String> = Vec::new();
        if rng.below(3) > 0 {
            // A plausible call: a limiter per key, options, then maybe one word changed.
            for _ in 0..keys.len() {
                let kind = ["THROTTLE", "FIXED", "WINDOW", "LEASE"][rng.below(4) as usize];
                args.push(kind.to_owned());
                let numbers = if kind == "THROTTLE" { 3 } else { 2 };
                for j in 0..numbers {
                    args.push((u64::from(j > 0) + rng.below(20)).to_string());
                }
                if kind == "WINDOW" && rng.below(4) == 0 {
                    args.extend(["BUCKETS".to_owned(), (2 + rng.below(3)).to_string()]);
                }
                if kind == "FIXED" {
                    // The grid's words, in either order, each once or not, right or wrong.
                    if rng.below(4) == 0 {
                        let at = args.len() - 1;
                        args[at] =
                            ["DAY", "week", "MONTH", "YEAR"][rng.below(4) as usize].to_owned();
                    }
                    for _ in 0..rng.below(3) {
                        match rng.below(3) {
                            0 => args.push("ALIGN".to_owned()),
                            1 => args.extend([
                                "OFFSET".to_owned(),
                                (rng.below(3000) as i64 - 1500).to_string(),
                            ]),
                            _ => args.push("OFFSET".to_owned()),
                        }
                    }
                }
            }
            for _ in 0..rng.below(4) {
                match WORDS[5 + rng.below(9) as usize] {
                    "QUANTITY" => args.extend(["QUANTITY".to_owned(), rng.below(4).to_string()]),
                    "HOLDER" => args.extend(["HOLDER".to_owned(), "h".to_owned()]),
                    "BLOCK" => args.extend(["BLOCK".to_owned(), "5".to_owned()]),
                    word => args.push(word.to_owned()),
                }
            }
            if !args.is_empty() && rng.below(2) == 0 {
                let at = rng.below(args.len() as u64) as usize;
                args[at] = grammar_word(&mut rng);
            }
        } else {
            for _ in 0..rng.below(16) {
                args.push(match rng.below(3) {
                    0 => WORDS[rng.below(WORDS.len() as u64) as usize].to_owned(),
                    1 => rng.below(20).to_string(),
                    _ => grammar_word(&mut rng),
                });
            }
        }
        short_waits(&mut args);
        let asked = std::time::Instant::now();
        let by_module: redis::RedisResult<redis::Value> = redis::cmd("CL.ALL")
            .arg(keys.len())
            .arg(&keys)
            .arg(&args)
            .query(&mut module);
        let by_library: redis::RedisResult<redis::Value> = redis::cmd("FCALL")
            .arg("cl_all")
            .arg(keys.len())
            .arg(&keys)
            .arg(&args)
            .query(&mut library);
        let apart_ms = asked.elapsed().as_millis() as i64;
        let too_large =
            |word: &String| parse_i64(word.as_bytes()).is_some_and(|v| v > (1 << 53) - 1);
        match (by_module, by_library) {
            (Err(m), Err(l)) => assert_eq!(l.to_string(), m.to_string(), "{keys:?} {args:?}"),
            (Ok(m), Ok(l)) => {
                assert_alike(&l, &m, &args, apart_ms);
                agreed += 1;
            }
            (Ok(_), Err(l)) => {
                let l = l.to_string();
                assert!(
                    (args.iter().any(|a| a.eq_ignore_ascii_case("BLOCK"))
                        && l.contains("cannot wait in the library"))
                        || (args.iter().any(too_large)
                            && l.contains("is too large for the library")),
                    "{keys:?} {args:?}: {l}"
                );
            }
            (Err(m), Ok(l)) => {
                panic!("{keys:?} {args:?}: the module refused ({m}), the library answered {l:?}")
            }
        }
    }
    assert!(
        agreed > 200,
        "only {agreed} calls were answered alike by both"
    );
}

/// A random mix of every function over many keys on a primary that keeps an AOF, with a
/// replica: the library's effects replicate, so the replica, and the server restarted from
/// the AOF, hold every key as the primary does, value and absolute expiry.
fn the_librarys_writes_reach_a_replica_and_the_aof_as_they_are(flavor: Flavor) {
    let primary = Server::start_with(flavor, aof_options(None));
    let replica = Server::start(flavor);
    replicate(&replica, &primary);
    let mut con = primary.connection();
    load_library(&mut con);
    let mut rng = Rng::new(0x4e91 ^ flavor as u64);
    for _ in 0..20 {
        let mut pipe = redis::pipe();
        for _ in 0..500 {
            let id = rng.below(300);
            let key = format!("key:{id}");
            let limit = (1 + rng.below(20)).to_string();
            let quantity = rng.below(4).to_string();
            let refund: &[&str] = if rng.below(8) == 0 { &["REFUND"] } else { &[] };
            let holder = format!("h{}", rng.below(30));
            // The function follows from the key, so that a key holds one kind of state; every
            // period is an hour, so that no key expires while the copies are compared.
            let (function, args): (&str, Vec<String>) = match id % 8 {
                0 => (
                    "cl_throttle",
                    vec![limit, "10".into(), "3600".into(), quantity],
                ),
                1 => ("cl_fixed", vec![limit, "3600".into(), quantity]),
                2 => ("cl_window", vec![limit, "3600".into(), quantity]),
                3 => (
                    "cl_window",
                    vec![limit, "3600".into(), quantity, "BUCKETS".into(), "6".into()],
                ),
                4 => ("cl_lease", vec![limit, "3600".into(), holder]),
                5 => ("cl_release", vec![holder]),
                6 => (
                    "cl_smooth",
                    vec![
                        limit,
                        "3600".into(),
                        quantity,
                        "BURST".into(),
                        "3600".into(),
                    ],
                ),
                _ => ("cl_all", vec!["FIXED".into(), limit, "3600".into()]),
            };
            let refund = if matches!(id % 8, 0..=3) { refund } else { &[] };
            pipe.cmd("FCALL")
                .arg(function)
                .arg(1)
                .arg(&key)
                .arg(&args)
                .arg(refund)
                .ignore();
        }
        let _: () = pipe.query(&mut con).expect("the library's calls");
    }
    wait_for_replica(&mut con);
    let expected = keyspace(&mut con);
    assert!(expected.len() > 200, "{} keys", expected.len());
    assert_eq!(keyspace(&mut replica.connection()), expected, "replica");
    drop(replica);
    let dir = primary.shutdown();
    let from_aof = Server::start_with(flavor, aof_options(Some(dir)));
    assert_eq!(
        keyspace(&mut from_aof.connection()),
        expected,
        "AOF restart"
    );
}

/// In a cluster, loaded on every primary: a cluster client routes each call by the keys FCALL
/// declares, CL.ALL over keys of one slot runs, and over two slots gets the server's
/// CROSSSLOT, as the module's CL.ALL does.
fn in_a_cluster_the_library_runs_by_its_keys_and_cl_all_across_slots_is_refused(flavor: Flavor) {
    let cluster = Cluster::start(flavor);
    for node in &cluster.nodes {
        let mut con = node.connection();
        if info_field(&mut con, "replication", "role") == "master" {
            load_library(&mut con);
        }
    }
    let mut client = cluster.client();
    for user in 0..20 {
        let key = format!("{{user:{user}}}:fixed");
        let reply: Vec<i64> = redis::cmd("FCALL")
            .arg("cl_fixed")
            .arg(1)
            .arg(&key)
            .arg(&["2", "3600"])
            .query(&mut client)
            .expect("routed by its key");
        assert_eq!(reply[..3], [0, 2, 1], "{key}");
    }
    let node = cluster.primary_for("{user:42}");
    let mut con = node.connection();
    let together: Vec<i64> = redis::cmd("FCALL")
        .arg("cl_all")
        .arg(2)
        .arg(&["{user:42}:a", "{user:42}:b"])
        .arg(&["FIXED", "2", "3600", "WINDOW", "3", "3600"])
        .query(&mut con)
        .expect("one slot");
    assert_eq!(together[..3], [0, 2, 1]);
    let crossed = redis::cmd("FCALL")
        .arg("cl_all")
        .arg(2)
        .arg(&["{user:42}:a", "{user:43}:b"])
        .arg(&["FIXED", "2", "3600", "FIXED", "2", "3600"])
        .query::<redis::Value>(&mut con)
        .expect_err("CROSSSLOT");
    assert_eq!(crossed.code(), Some("CROSSSLOT"), "{crossed}");
}
