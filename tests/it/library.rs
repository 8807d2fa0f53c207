//! The library's Lua (`lua/`), run by the server's own Lua: both generated forms load and
//! answer (`lua/dist`, from scripts/lua_forms.py); its exact integers agree with Rust's
//! `i128` on sums, products, truncated quotients and remainders, and read integers as the
//! module reads them (`string2ll`).

use redis_cell::decimal::parse_i64;

use crate::harness::{Flavor, Options, Rng, Server};

both_servers!(
    both_forms_load_and_answer_with_the_crates_version,
    exact_integers_compute_as_i128_does,
    exact_integers_are_read_as_the_module_reads_them,
);

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
    let by_script: String = redis::cmd("EVAL")
        .arg(read("lua/dist/redis_cell.script.lua"))
        .arg(0)
        .arg("cl_version")
        .query(&mut con)
        .expect("EVAL … cl_version");
    assert_eq!(by_script, version);
}

/// Redis 6.2, which has no Functions and cannot load the module, runs the script form.
#[test]
fn redis_6_runs_the_script_form() {
    let server = Server::start_with(
        Flavor::Redis6,
        Options {
            without_module: true,
            ..Options::default()
        },
    );
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
