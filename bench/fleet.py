"""A limit for a whole fleet (docs/fleet.md), against a running server with the module loaded
(scripts/bench.sh runs it): 8 processes on one hot key, each deciding through the Python
client, per call or batched (redis_cell.batch.Batched), for SECONDS each run.

1. Throughput: every process asks as fast as it can, on a limit no one reaches: decisions a
   second, server calls a second, and the server's CPU time per decision (/proc), per call
   against batched.
2. Demand at twice the limit (100,000 a second against 50,000): the share of the limit the
   fleet used, and the most it spent in any span of P - 2H, against the window's L.
3. The goal: 100,000 a second against a limit of 200,000 (every decision admissible): server
   calls per decision (goal: at most 0.05), with the bound held.

Usage: fleet.py PORT [SECONDS]
"""

import multiprocessing
import os
import sys
import time
from bisect import bisect_left

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python"))

import redis  # noqa: E402

from redis_cell import Client, Window  # noqa: E402
from redis_cell.batch import Batched  # noqa: E402

PORT = int(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
PROCESSES = 8
PERIOD_MS = 1000
HORIZON = 0.1


def server_cpu_seconds(r):
    pid = r.info("server")["process_id"]
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # utime and stime, the 14th and 15th fields (11th and 12th after the name).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_calls(r):
    stats = r.info("commandstats")
    return sum(v["calls"] for k, v in stats.items() if k.startswith("cmdstat_cl."))


def worker(key, limit, demand, batched, start_at, seconds, out):
    r = redis.Redis(port=PORT)
    client = Client(r, via="module")
    limiter = Batched(client, Window(key, limit, PERIOD_MS), ms=True) if batched else None
    spent, decisions = [], 0
    while time.monotonic() < start_at:
        time.sleep(0.001)
    end = start_at + seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        # Paced: the decisions due by now (all of them when demand is None), a few at a time.
        due = 64 if demand is None else int((now - start_at) * demand) - decisions
        if due <= 0:
            time.sleep(0.0005)
            continue
        for _ in range(min(due, 64)):
            decisions += 1
            if limiter is not None:
                decision = limiter.acquire()
                if decision.allowed:
                    spent.append(decision.at)
            elif not client.window(key, limit, PERIOD_MS, ms=True).limited:
                spent.append(time.monotonic())
    if limiter is not None:
        limiter.close()
    out.put((decisions, spent))


def run(key, limit, demand, batched):
    r = redis.Redis(port=PORT)
    r.delete(key)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    start_at = time.monotonic() + 1.0
    share = None if demand is None else demand / PROCESSES
    workers = [context.Process(target=worker,
                               args=(key, limit, share, batched, start_at, SECONDS, out))
               for _ in range(PROCESSES)]
    for w in workers:
        w.start()
    time.sleep(max(0.0, start_at - time.monotonic()))
    cpu, calls = server_cpu_seconds(r), server_calls(r)
    results = [out.get(timeout=SECONDS + 60) for _ in workers]
    cpu, calls = server_cpu_seconds(r) - cpu, server_calls(r) - calls
    for w in workers:
        w.join()
    decisions = sum(d for d, _ in results)
    spent = sorted(t for _, s in results for t in s)
    span = PERIOD_MS / 1000 - 2 * HORIZON
    most = max((bisect_left(spent, t + span) - i for i, t in enumerate(spent)), default=0)
    return decisions, calls, cpu, spent, most


def main():
    print(f"One hot key, {PROCESSES} processes, Python client, {SECONDS:g} s a run "
          f"(exact window of one second; batched: H = {HORIZON * 1000:g} ms)")
    print()
    print("| run | decisions/s | server calls/s | calls per decision | server CPU µs per decision |")
    print("|---|---|---|---|---|")
    for name, batched in (("per call", False), ("batched", True)):
        decisions, calls, cpu, _, _ = run("fleet:free", 10**12, None, batched)
        print(f"| {name} | {decisions / SECONDS:,.0f} | {calls / SECONDS:,.0f} | "
              f"{calls / decisions:.4f} | {cpu * 1e6 / decisions:.2f} |")
    print()
    print("| demand | limit | decisions/s | calls per decision | share of the limit used | "
          "most in any 0.8 s | bound |")
    print("|---|---|---|---|---|---|---|")
    for demand, limit in ((100_000, 50_000), (100_000, 200_000)):
        decisions, calls, _, spent, most = run("fleet:limited", limit, demand, True)
        used = len(spent) / (limit * SECONDS)
        print(f"| {demand:,}/s | {limit:,}/s | {decisions / SECONDS:,.0f} | "
              f"{calls / max(decisions, 1):.4f} | {min(used, 1):.1%} | {most:,} | {limit:,} |")


if __name__ == "__main__":
    main()
