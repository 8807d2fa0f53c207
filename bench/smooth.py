"""CL.SMOOTH's held replies, against a running server with the module loaded (scripts/bench.sh
runs it): how late a reply held by BLOCK comes after the instant it reserved, as the client
sees it (the reply's arrival, on the same clock as the server's), p50, p99 and worst, and
whether any came early.

Each of CLIENTS connections calls its own key CALLS times, 200 a second with a burst of a
millisecond, so that every call after the first is held 5 ms after the one before; the
clients start spread over those 5 ms. A client reads its key's next free instant once (GET, at
the start, and again should it fall behind its pace), and from there knows each instant its
calls reserve: the one before plus 5,000 µs. The held replies are read as the selector sees
them, never by waiting on one connection. All connections run at once, so the server holds
CLIENTS replies and their timers at a time.

Usage: smooth.py PORT [CLIENTS] [CALLS]
"""

import selectors
import struct
import sys
import time

from resp import Reader, connect, resp

PORT = int(sys.argv[1])
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
CALLS = int(sys.argv[3]) if len(sys.argv) > 3 else 500
CALL = ("200", "1000", "MS", "BURST", "1", "BLOCK", "0")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def next_free_us(value):
    """The first field of a CL.SMOOTH key's 32 bytes: Guava's nextFreeTicketMicros."""
    return struct.unpack_from("<q", value)[0] if value else None


def anchor(client):
    """Calls at once on the client's key and reads its next free instant: the instant its next
    call reserves. Used at the start, and whenever the client fell behind its pace."""
    client["sock"].sendall(resp("CL.SMOOTH", client["key"], *CALL) + resp("GET", client["key"]))
    client["reader"].reply()
    client["reserved"] = next_free_us(client["reader"].reply())
    send(client)


def send(client):
    """Sends the client's next call. Each reserves the instant its predecessor's one permit
    pushed the limiter to: the one before plus 5,000 µs (Guava's wait, 1e6 / 200, exact)."""
    client["sent_us"] = time.time_ns() / 1000
    client["sock"].sendall(resp("CL.SMOOTH", client["key"], *CALL))


def main():
    control = connect(PORT)
    control.sendall(resp("FLUSHALL"))
    Reader(control).reply()
    selector = selectors.DefaultSelector()
    clients = {}
    # The clients start a fraction of the 5 ms apart, so that their reservations, which keep
    # the pace they start at, fall evenly over it rather than all at once.
    for index in range(CLIENTS):
        sock = connect(PORT)
        client = {"sock": sock, "key": "held:%d" % index, "reader": Reader(sock), "calls": 2}
        clients[sock] = client
        anchor(client)
        selector.register(sock, selectors.EVENT_READ)
        time.sleep(0.005 / CLIENTS)
    late_ms, early = [], 0
    deadline = time.monotonic() + 60 + CALLS * 0.005 * 2
    pending = len(clients)
    while pending and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            client = clients[key.fileobj]
            reply = client["reader"].reply()
            arrived_us = time.time_ns() / 1000
            if reply[0] != 0:
                raise RuntimeError("a call with BLOCK 0 was denied: %r" % reply)
            # Held, unless the client sent it after its instant (then it went at once).
            if client["sent_us"] < client["reserved"]:
                late = (arrived_us - client["reserved"]) / 1000
                late_ms.append(late)
                early += late < 0
            if client["calls"] >= CALLS:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                pending -= 1
                continue
            client["calls"] += 1
            if client["sent_us"] < client["reserved"]:
                client["reserved"] += 5000
                send(client)
            else:
                client["calls"] += 1
                anchor(client)
    if pending:
        raise RuntimeError("%d clients never finished" % pending)
    print()
    print(
        "CL.SMOOTH held replies: %d connections, each %d calls of `CL.SMOOTH own-key %s`"
        " (every call after the first held 5 ms after the one before). Late: the reply's"
        " arrival at the client after the instant the call reserved" % (CLIENTS, CALLS, " ".join(CALL))
    )
    print("| held replies | early | p50 | p99 | worst |")
    print("|---|---|---|---|---|")
    print(
        "| %d | %d | %.2f ms | %.2f ms | %.2f ms |"
        % (len(late_ms), early, percentile(late_ms, 50), percentile(late_ms, 99), max(late_ms))
    )


main()
