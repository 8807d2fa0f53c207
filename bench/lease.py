"""CL.LEASE and CL.RELEASE in the benchmark (scripts/bench.sh runs it):

  lease.py fill PORT            keys pool:0..999 with 10 holders each, and big with 10,000,
                                and the same as sorted sets (zpool:…, zbig) for the scripts
  lease.py calls KIND N         N calls of a workload, in the Redis protocol, on stdout:
                                renew, pair, churn, and each on big (renew-big …); with
                                -lua, the scripts'
  lease.py memory PORT          MEMORY USAGE per lease at 10,000 holders, beside a sorted set
  lease.py latency PORT         how soon a waiter's reply follows a CL.RELEASE, p50 and p99

Holders are `h:0`, `h:1`, …; every lease lasts an hour, so none ends during a run.
"""

import hashlib
import random
import sys
import time

from resp import Reader, connect, resp

POOLS = 1000
BIG = 10000
LIMIT = 1_000_000


class Connection:
    """One connection to the server, for calls one at a time or pipelined."""

    def __init__(self, port):
        self.sock = connect(port)
        self.reader = Reader(self.sock)

    def send(self, *args):
        self.sock.sendall(resp(*args))

    def reply(self):
        return self.reader.reply()

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(resp(*c) for c in commands))
        return [self.reply() for _ in commands]


def fill(port):
    con = Connection(port)
    commands = [("CL.LEASE", "pool:%d" % p, LIMIT, 3600, "h:%d" % h)
                for p in range(POOLS) for h in range(10)]
    commands += [("CL.LEASE", "big", LIMIT, 3600, "h:%d" % h) for h in range(BIG)]
    end = int(time.time() * 1000) + 3_600_000
    commands += [("ZADD", "zpool:%d" % p, end, "h:%d" % h) for p in range(POOLS) for h in range(10)]
    commands += [("ZADD", "zbig", end, "h:%d" % h) for h in range(BIG)]
    for start in range(0, len(commands), 1000):
        for reply in con.pipeline(commands[start:start + 1000]):
            assert reply == 1 or reply[0] == 0, reply


def calls(kind, n):
    """Each kind keeps the sets at their size: a renewal renews h:7; an acquisition and the
    release that follows it add and take away a holder of their own."""
    rng = random.Random(17)
    out = sys.stdout.buffer
    lua = kind.endswith("-lua")
    kind = kind.removesuffix("-lua")
    prefix = "z" if lua else ""

    def lease(pool, holder):
        if lua:
            return resp("EVALSHA", sha("lease"), 1, pool, LIMIT, 3600, holder)
        return resp("CL.LEASE", pool, LIMIT, 3600, holder)

    def release(pool, holder):
        if lua:
            return resp("EVALSHA", sha("release"), 1, pool, holder)
        return resp("CL.RELEASE", pool, holder)

    # Who holds a lease on each set, for churn: a random one of them lets go, a new one comes.
    held = {}
    pool = holder = None
    for i in range(n):
        if not kind.startswith(("pair", "churn")) or i % 2 == 0:
            pool = prefix + ("big" if kind.endswith("big") else "pool:%d" % rng.randrange(POOLS))
        if kind.startswith("churn"):
            holders = held.setdefault(pool, ["h:%d" % h for h in range(BIG if pool.endswith("big") else 10)])
            if i % 2 == 0:
                at = rng.randrange(len(holders))
                holders[at], holders[-1] = holders[-1], holders[at]
                out.write(release(pool, holders.pop()))
            else:
                holders.append("new:%d" % i)
                out.write(lease(pool, holders[-1]))
        elif kind.startswith("renew"):
            out.write(lease(pool, "h:7"))
        elif kind.startswith("pair"):
            # Half the calls acquire, half release: n calls in all.
            if i % 2 == 0:
                holder = "new:%d" % i
                out.write(lease(pool, holder))
            else:
                out.write(release(pool, holder))
        else:
            raise SystemExit("unknown kind " + kind)


def sha(script):
    """The SHA1 EVALSHA names bench/<script>.lua by, loaded as bench.sh loads it: its text
    without the final newline, which the shell's $(cat …) takes off."""
    with open(__file__.rsplit("/", 1)[0] + "/" + script + ".lua", "rb") as f:
        return hashlib.sha1(f.read().rstrip(b"\n")).hexdigest()


def memory(port):
    con = Connection(port)
    con.call("DEL", "mem:lease", "mem:zset")
    holders = ["h:%d" % h for h in range(BIG)]
    con.pipeline([("CL.LEASE", "mem:lease", LIMIT, 3600, h) for h in holders])
    end = int(time.time() * 1000) + 3_600_000
    con.pipeline([("ZADD", "mem:zset", end, h) for h in holders])
    grown = con.call("MEMORY", "USAGE", "mem:lease", "SAMPLES", "0")
    value = con.call("STRLEN", "mem:lease")
    zset = con.call("MEMORY", "USAGE", "mem:zset", "SAMPLES", "0")
    # The same bytes in a string allocated to their size, as a replica's full sync or a
    # restart from RDB loads it.
    dumped = con.call("DUMP", "mem:lease")
    con.call("RESTORE", "mem:exact", 0, dumped, "REPLACE")
    exact = con.call("MEMORY", "USAGE", "mem:exact", "SAMPLES", "0")
    # Churn: a random holder lets go, and a new one takes its slot, 40,000 times.
    rng = random.Random(18)
    churn = []
    live = list(holders)
    for i in range(40000):
        at = rng.randrange(len(live))
        live[at], live[-1] = live[-1], live[at]
        churn.append(("CL.RELEASE", "mem:lease", live.pop()))
        live.append("c:%d" % i)
        churn.append(("CL.LEASE", "mem:lease", LIMIT, 3600, live[-1]))
    for start in range(0, len(churn), 1000):
        con.pipeline(churn[start:start + 1000])
    churned = con.call("MEMORY", "USAGE", "mem:lease", "SAMPLES", "0")
    churned_len = sum(len(h) for h in live) / BIG
    holder_len = sum(len(h) for h in holders) / BIG
    print()
    print("MEMORY USAGE of one key holding %d leases, holders h:0 … h:%d (%.2f bytes on average):"
          % (BIG, BIG - 1, holder_len))
    print("| %-48s | %10s | %14s | %16s |" % ("key", "bytes", "per lease", "holder + 16"))
    print("|%s|%s|%s|%s|" % ("-" * 50, "-" * 12, "-" * 16, "-" * 18))
    for name, size in [("set of leases, its value (STRLEN)", value),
                       ("set of leases, as loaded (RESTORE, RDB, sync)", exact),
                       ("set of leases, as grown by CL.LEASE", grown),
                       ("sorted set of the same (lease.lua)", zset)]:
        print("| %-48s | %10d | %14.2f | %16.2f |" % (name, size, size / BIG, holder_len + 16))
    print("| %-48s | %10d | %14.2f | %16.2f |" % (
        "set of leases, after 40,000 random churns", churned, churned / BIG, churned_len + 16))
    con.call("DEL", "mem:lease", "mem:zset", "mem:exact")


def waiting_now(con):
    info = con.call("INFO", "redis-cell").decode()
    for line in info.splitlines():
        if "cl_waiting" in line and "now=" in line:
            return int(line.split("now=")[1].split(",")[0])
    raise RuntimeError("no cl_waiting line in INFO")


def latency(port, rounds=1000):
    holder, waiter, watch = Connection(port), Connection(port), Connection(port)
    holder.call("DEL", "lat")
    samples = []
    for i in range(rounds):
        assert holder.call("CL.LEASE", "lat", 1, 60, "holder:%d" % i)[0] == 0
        waiter.send("CL.LEASE", "lat", 1, 60, "waiter:%d" % i, "BLOCK", 10000)
        deadline = time.monotonic() + 10
        while waiting_now(watch) != 1:
            assert time.monotonic() < deadline, "the waiter never parked"
        start = time.perf_counter_ns()
        holder.send("CL.RELEASE", "lat", "holder:%d" % i)
        reply = waiter.reply()
        samples.append(time.perf_counter_ns() - start)
        assert reply[0] == 0, reply
        assert holder.reply() == 1
        assert holder.call("CL.RELEASE", "lat", "waiter:%d" % i) == 1
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] / 1e6
    print()
    print("Release-to-reply latency of a waiter (%d rounds: a holder releases, the one waiter"
          " blocked on the key is admitted; from sending CL.RELEASE to the waiter's reply,"
          " on the client's clock):" % rounds)
    print("| %8s | %8s | %8s |" % ("p50", "p99", "worst"))
    print("|%s|%s|%s|" % ("-" * 10, "-" * 10, "-" * 10))
    print("| %5.3f ms | %5.3f ms | %5.3f ms |" % (pick(0.5), pick(0.99), samples[-1] / 1e6))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "fill":
        fill(int(sys.argv[2]))
    elif what == "calls":
        calls(sys.argv[2], int(sys.argv[3]))
    elif what == "memory":
        memory(int(sys.argv[2]))
    elif what == "latency":
        latency(int(sys.argv[2]))
    else:
        raise SystemExit(__doc__)
