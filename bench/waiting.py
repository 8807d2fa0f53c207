"""BLOCK under load, against a running server with the module loaded (scripts/bench.sh runs it):

1. 1,000 waiters on one key at 1,000 per second: how late each admission comes after the
   instant its unit fits (as the client sees it: the reply's arrival, on the same clock as the
   server's), p50, p99 and worst, and whether they came in arrival order;
2. 10,000 waiters on one key, then one waiter on each of 10,000 keys: the server's memory per
   waiter, and GET's latency from redis-benchmark while they wait and are admitted, beside
   GET's latency with no one waiting.

Usage: waiting.py PORT
"""

import resource
import selectors
import subprocess
import sys
import time

from resp import Reader, connect, resp

PORT = int(sys.argv[1])
# One descriptor per waiter: as many as the hard limit allows, up to 10,000.
_, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (HARD, HARD))
SCALE = min(10000, HARD - 500)
NS_PER_MS = 1_000_000


control = connect(PORT)
reader = Reader(control)


def call(*args):
    control.sendall(resp(*args))
    return reader.reply()


def server_now_ns():
    seconds, micros = call("TIME")
    return int(seconds) * 1_000_000_000 + int(micros) * 1000


def info_field(section, field):
    text = call("INFO", section).decode()
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise KeyError(field)


def waiting_now():
    line = info_field("redis-cell", "redis-cell_cl_waiting")
    return int(line.split(",")[0].split("=")[1])


def until_waiting(count, seconds=30):
    deadline = time.monotonic() + seconds
    while waiting_now() != count:
        if time.monotonic() > deadline:
            raise RuntimeError("never %d waiting" % count)
        time.sleep(0.0005)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def lateness():
    """1,000 waiters on one key, one unit per ms with a tolerance of 100 ms: the i-th unit fits
    at start + i ms whether or not the ones before came late, so lateness does not add up.
    Each waiter also takes a fixed window of its own (CL.ALL), whose expiry records, on the
    server, the millisecond it was admitted: the order is checked there, since replies that
    leave in one turn of the event loop reach the client in no particular order."""
    waiters = 1000
    call("FLUSHALL")
    start_ns = server_now_ns() + 3000 * NS_PER_MS
    start_ms = start_ns // NS_PER_MS
    # A TAT 100 ms after the start: with a tolerance of 100 ms the first unit fits then.
    call("SET", "late", start_ns + 100 * NS_PER_MS, "PX", 60000)
    socks = []
    for i in range(waiters):
        sock = connect(PORT)
        sock.sendall(
            resp("CL.ALL", 2, "late", "own:%d" % i, "THROTTLE", 100, 1000, 1000,
                 "FIXED", 1, 60000, "MS", "BLOCK", 0)
        )
        until_waiting(i + 1)
        socks.append(sock)
    if server_now_ns() >= start_ns:
        raise RuntimeError("queueing took too long: the first unit fit before the last came")
    selector = selectors.DefaultSelector()
    for index, sock in enumerate(socks):
        selector.register(sock, selectors.EVENT_READ, index)
    arrivals, replies = {}, {}
    deadline = time.monotonic() + 60
    while len(arrivals) < waiters and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            arrivals[key.data] = time.time_ns()
            replies[key.data] = Reader(key.fileobj).reply()
            selector.unregister(key.fileobj)
    for sock in socks:
        sock.close()
    admitted = sum(1 for reply in replies.values() if reply[0] == 0)
    # The admission's millisecond on the server: its own window ends 60 s after it.
    admitted_ms = [call("PEXPIRETIME", "own:%d" % i) - 60000 for i in range(waiters)]
    in_order = all(a <= b for a, b in zip(admitted_ms, admitted_ms[1:]))
    server_late = [admitted_ms[i] - (start_ms + i) for i in range(waiters)]
    client_late = [(arrivals[i] - (start_ns + i * NS_PER_MS)) / NS_PER_MS for i in arrivals]
    print()
    print(
        "Waiting: %d waiters on one key (CL.ALL of its THROTTLE and a window of each waiter's"
        " own), one unit per ms, BLOCK 0. Late: after the instant its unit fits, on the server"
        " (admission, whole ms) and at the client (the reply's arrival)" % waiters
    )
    print("| admitted | in arrival order | early | server p50 / p99 / worst | client p50 / p99 / worst |")
    print("|----------|------------------|-------|--------------------------|--------------------------|")
    print(
        "| %d / %d | %s | %d | %d / %d / %d ms | %.2f / %.2f / %.2f ms |"
        % (
            admitted,
            waiters,
            "yes" if in_order else "no",
            sum(1 for late in server_late if late < 0),
            percentile(server_late, 50),
            percentile(server_late, 99),
            max(server_late),
            percentile(client_late, 50),
            percentile(client_late, 99),
            max(client_late),
        )
    )


def get_latency(seconds_hint):
    """GET's latency percentiles from redis-benchmark: p50, p99, max in ms."""
    call("SET", "plain", "v")
    requests = 20000 * seconds_hint
    out = subprocess.run(
        ["redis-benchmark", "-p", str(PORT), "-n", str(requests), "-c", "10", "--csv", "GET", "plain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    header = [h.strip('"') for h in out[0].split(",")]
    values = [v.strip('"') for v in out[1].split(",")]
    row = dict(zip(header, values))
    return float(row["p50_latency_ms"]), float(row["p99_latency_ms"]), float(row["max_latency_ms"])


def used_memory():
    return int(info_field("memory", "used_memory"))


def scale():
    waiters = SCALE
    rows = []
    base = get_latency(2)
    rows.append(("no one waiting", "", base))
    for shape in ("BLPOP, one key", "one key", "10,000 keys"):
        call("FLUSHALL")
        socks = [connect(PORT) for _ in range(waiters)]
        # Connected, not waiting: the waits' own cost is what follows.
        time.sleep(0.2)
        before = used_memory()
        start_ns = server_now_ns() + 8000 * NS_PER_MS
        if shape.startswith("BLPOP"):
            keys, params = None, None
        elif shape == "one key":
            # One unit per 0.1 ms after the start: all admitted within a second.
            call("SET", "busy", start_ns + 1000 * NS_PER_MS, "PX", 120000)
            keys = ["busy"] * waiters
            params = (10000, 10000, 1000)
        else:
            # Each key's one unit fits at its own instant, one key per 0.1 ms after the start.
            pipe = b"".join(
                resp("SET", "k:%d" % i, start_ns + i * NS_PER_MS // 10 + 1000 * NS_PER_MS, "PX", 120000)
                for i in range(waiters)
            )
            control.sendall(pipe)
            for _ in range(waiters):
                reader.reply()
            keys = ["k:%d" % i for i in range(waiters)]
            params = (1, 1, 1000)
        if keys is None:
            # The server's own blocked clients, for comparison.
            for sock in socks:
                sock.sendall(resp("BLPOP", "list", 0))
            while int(info_field("clients", "blocked_clients")) != waiters:
                time.sleep(0.001)
        else:
            for sock, key in zip(socks, keys):
                sock.sendall(resp("CL.THROTTLE", key, *params, 1, "MS", "BLOCK", 0))
            until_waiting(waiters)
        per_waiter = (used_memory() - before) / waiters
        waiting = get_latency(2)
        if keys is None:
            rows.append((shape + ", waiting", "%.0f B" % per_waiter, waiting))
            for sock in socks:
                sock.close()
            continue
        # Then while they are admitted, from the start on.
        while server_now_ns() < start_ns:
            time.sleep(0.01)
        admitting = get_latency(2)
        rows.append((shape + ", waiting", "%.0f B" % per_waiter, waiting))
        rows.append((shape + ", being admitted", "", admitting))
        selector = selectors.DefaultSelector()
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        answered, deadline = 0, time.monotonic() + 60
        while answered < waiters and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                Reader(key.fileobj).reply()
                selector.unregister(key.fileobj)
                answered += 1
        for sock in socks:
            sock.close()
        if answered != waiters:
            raise RuntimeError("only %d of %d answered" % (answered, waiters))
    print()
    print(
        "Waiting at scale: %d waiters; memory per waiter (used_memory, beside its connection;"
        " BLPOP's for comparison); GET latency from redis-benchmark (10 clients) meanwhile" % waiters
    )
    print("| waiters | memory per waiter | GET p50 | GET p99 | GET max |")
    print("|---------|-------------------|---------|---------|---------|")
    for name, memory, (p50, p99, worst) in rows:
        print("| %s | %s | %.3f ms | %.3f ms | %.3f ms |" % (name, memory, p50, p99, worst))


lateness()
scale()
