#!/usr/bin/env python3
"""Draws docs/who-is-limited.svg, what an operator sees of a node under load: its denied and
admitted calls a second (INFO redis-cell, read twice a second) over a run, and CL.TOP's list
at the end of it, from the replies of a real server.

    .venv/bin/python scripts/top_picture.py

It starts a valkey-server with the module loaded (as scripts/pictures.py finds them) and runs
20 s of traffic in pipelines of 50 calls, three clients at once:
- the benchmark's: CL.THROTTLE on random keys of 100,000 (`user:<n>`, 10 a minute, bursts of
  10), nearly all admitted;
- API tenants: CL.THROTTLE on 1,000 keys (`api:tenant-<rank>`, 20 a second, bursts of 20), the
  tenant of each call drawn by Zipf's law (exponent 1.2, a fixed seed), so that a few tenants
  make most calls and are denied;
- a credential stuffer from 6 s to 14 s: CL.FIXED on one key (`login:203.0.113.9`, 5 a
  minute), denied from its sixth call on.
Prints the list as CL.TOP answered it.
"""

import bisect
import itertools
import os
import random
import threading
import time

import redis

from pictures import ROOT, line, scratch_server, svg_open, text

OUT = os.path.join(ROOT, "docs", "who-is-limited.svg")
RUN, SAMPLE, PIPELINE, COUNT = 20.0, 0.5, 50, 10
STUFFING = (6.0, 14.0)
MAX_BATCHES = 100_000  # far above what a run sends: a bound, never the stop
TENANTS, ZIPF = 1000, 1.2


def background(port, t0, stop, errors):
    rng = random.Random(1)
    calls = lambda: [("CL.THROTTLE", f"user:{rng.randrange(100_000)}", 9, 10, 60)
                     for _ in range(PIPELINE)]
    send(port, t0, (0.0, RUN), calls, stop, errors)


def tenants(port, t0, stop, errors):
    rng = random.Random(2)
    weights = list(itertools.accumulate(1 / (rank ** ZIPF) for rank in range(1, TENANTS + 1)))
    rank = lambda: bisect.bisect(weights, rng.random() * weights[-1]) + 1
    calls = lambda: [("CL.THROTTLE", f"api:tenant-{rank()}", 19, 20, 1)
                     for _ in range(PIPELINE)]
    send(port, t0, (0.0, RUN), calls, stop, errors)


def stuffer(port, t0, stop, errors):
    calls = lambda: [("CL.FIXED", "login:203.0.113.9", 5, 60)] * PIPELINE
    send(port, t0, STUFFING, calls, stop, errors)


def send(port, t0, span, calls, stop, errors):
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        time.sleep(max(0.0, t0 + span[0] - time.monotonic()))
        for _ in range(MAX_BATCHES):
            if stop.is_set() or time.monotonic() - t0 >= span[1]:
                break
            pipe = client.pipeline(transaction=False)
            for call in calls():
                pipe.execute_command(*call)
            pipe.execute()
    except Exception as error:  # re-raised by the main thread, which owns the server
        errors.append(error)


def counters(client):
    """Every limiter's denied and admitted calls so far, from INFO redis-cell."""
    denied = allowed = 0
    for name, fields in client.info("redis-cell").items():
        if name.startswith("redis-cell_cl_") and isinstance(fields, dict) and "denied" in fields:
            if not name.endswith(("_release", "_holders", "_top")):
                denied += int(fields["denied"])
                allowed += int(fields["allowed"])
    return denied, allowed


def svg(samples, listed, total, k, version):
    w, h = 720, 548
    left, right, top, bottom = 64, 700, 44, 250
    ymax = max(max(d, a) for _, d, a in samples) * 1.1 or 1
    x = lambda s: left + (right - left) * s / RUN
    y = lambda r: bottom - (bottom - top) * r / ymax
    middle = 'text-anchor="middle"'
    out = svg_open(w, h) + [
        text(w / 2, 24, "Who is being limited: one node under load, and CL.TOP at the end",
             middle + ' font-size="15" font-weight="bold"'),
        f'<rect x="{x(STUFFING[0]):.1f}" y="{top}" width="{x(STUFFING[1]) - x(STUFFING[0]):.1f}" '
        f'height="{bottom - top}" fill="#f3f3f3"/>',
        text(x(sum(STUFFING) / 2), top + 14, "credential stuffing", middle + ' fill="#777"')]
    step = 10 ** max(0, len(str(int(ymax))) - 1)
    for r in range(0, int(ymax) + 1, step):
        out += [line(left - 4, y(r), left, y(r), 'stroke="#333"'),
                text(left - 7, y(r) + 4, f"{r:,}", 'text-anchor="end"')]
    for s in range(0, int(RUN) + 1, 2):
        out += [line(x(s), bottom, x(s), bottom + 4, 'stroke="#333"'),
                text(x(s), bottom + 16, str(s), middle)]
    out += [f'<path d="M{left},{top}V{bottom}H{right}" fill="none" stroke="#333"/>',
            text(16, (top + bottom) / 2, "calls a second",
                 f'{middle} transform="rotate(-90 16 {(top + bottom) / 2})"'),
            text((left + right) / 2, bottom + 32, "seconds since the first call", middle)]
    for i, (name, colour, index) in enumerate((("admitted", "#9e9e9e", 2), ("denied", "#d62728", 1))):
        points = " ".join(f"{x(sample[0]):.1f},{y(sample[index]):.1f}" for sample in samples)
        out += [f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2" '
                'stroke-linejoin="round"/>',
                line(left + 460, bottom + 140 + 16 * i, left + 482, bottom + 140 + 16 * i,
                     f'stroke="{colour}" stroke-width="2"'),
                text(left + 488, bottom + 144 + 16 * i, f"{name} a second")]
    # The list, as CL.TOP COUNT 10 answered it.
    row, head = 18, bottom + 62
    out += [text(left, head, f"CL.TOP COUNT {COUNT}, at {RUN:g} s", 'font-weight="bold"'),
            text(left + 460, head + row, f"{total:,} calls denied in the run;", 'fill="#555"'),
            text(left + 460, head + 2 * row, f"k = {k:,} entries a minute, so", 'fill="#555"'),
            text(left + 460, head + 3 * row, f"error ≤ {total:,} / {k:,} = {total // k:,}",
                 'fill="#555"')]
    columns = [(left, "key", ""), (left + 330, "denied", 'text-anchor="end"'),
               (left + 420, "error", 'text-anchor="end"')]
    for cx, label, attrs in columns:
        out.append(text(cx, head + row, label, f'{attrs} fill="#555"'))
    out.append(line(left, head + row + 5, left + 430, head + row + 5, 'stroke="#999"'))
    for i, (key, denied, error) in enumerate(listed):
        cy = head + row * (i + 2)
        for (cx, _, attrs), value in zip(columns, (key, f"{denied:,}", f"{error:,}")):
            out.append(text(cx, cy, value, attrs + ' font-family="monospace"'))
    out += [text(w / 2, h - 10, f"traffic of scripts/top_picture.py · INFO redis-cell every "
                 f"{int(SAMPLE * 1000)} ms · {version}", middle + ' font-size="10" fill="#555"'),
            "</svg>"]
    return "\n".join(out) + "\n"


def main():
    with scratch_server("top_picture", ["CL.TOP", "COUNT", 1]) as (client, port, module, version):
        t0, stop, errors = time.monotonic() + 0.2, threading.Event(), []
        threads = [threading.Thread(target=run, daemon=True, args=(port, t0, stop, errors))
                   for run in (background, tenants, stuffer)]
        for thread in threads:
            thread.start()
        samples, before = [], counters(client)
        k = int(client.config_get("redis-cell.top-keys")["redis-cell.top-keys"])
        for tick in range(1, int(RUN / SAMPLE) + 1):
            time.sleep(max(0.0, t0 + tick * SAMPLE - time.monotonic()))
            now = counters(client)
            samples.append((tick * SAMPLE - SAMPLE / 2, (now[0] - before[0]) / SAMPLE,
                            (now[1] - before[1]) / SAMPLE))
            before = now
        flat = client.execute_command("CL.TOP", "COUNT", COUNT)
        total = counters(client)[0]
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        if errors or any(thread.is_alive() for thread in threads):
            raise errors[0] if errors else RuntimeError("a client is still calling")
    listed = [(flat[i].decode(), int(flat[i + 1]), int(flat[i + 2]))
              for i in range(0, len(flat) - 2, 3)]
    for key, denied, error in listed:
        print(f"{key:24} {denied:8} {error:6}")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(svg(samples, listed, total, k, version))
    print(f"wrote {os.path.relpath(OUT, ROOT)} ({version}, {os.path.relpath(module, ROOT)})")


if __name__ == "__main__":
    main()
