#!/usr/bin/env python3
"""The sentence that says which servers CI tests on, made from the servers themselves.

    python3 scripts/tested_servers.py SERVER...               # prints the sentence
    python3 scripts/tested_servers.py --check FILE... -- SERVER...

Each SERVER is a redis-server or valkey-server binary (or launcher) that the test command ran
the suites on; the sentence names each by product and minor version, as the README claims
support. With --check, every FILE must hold the sentence as made, word for word (wrapped
anywhere): a server added, dropped or moved to another minor version fails the check until
the docs say so.
"""

import re
import subprocess
import sys


def version(server):
    """('Redis', (8, 0)) from `redis-server --version`'s `Redis server v=8.0.2 …`."""
    out = subprocess.run([server, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.match(r"(Redis|Valkey) server v=(\d+)\.(\d+)\.", out)
    if not match:
        sys.exit(f"tested_servers: cannot read the version of {server}: {out!r}")
    return match.group(1), (int(match.group(2)), int(match.group(3)))


def sentence(servers):
    by_product = {}
    for server in servers:
        product, minor = version(server)
        by_product.setdefault(product, set()).add(minor)
    parts = []
    for product in ("Redis", "Valkey"):
        minors = sorted(by_product.get(product, ()))
        if minors:
            names = [f"{major}.{minor}" for major, minor in minors]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            parts.append(f"{product} {listed}")
    return "CI runs the tests on " + " and on ".join(parts) + "."


def main(args):
    if args[:1] == ["--check"]:
        if "--" not in args:
            sys.exit(__doc__)
        split = args.index("--")
        files, servers = args[1:split], args[split + 1:]
        expected = sentence(servers)
        # Prose is wrapped: the sentence may break across lines.
        missing = [
            path
            for path in files
            if expected not in " ".join(open(path, encoding="utf-8").read().split())
        ]
        if missing:
            sys.exit(f"tested_servers: {', '.join(missing)} should say, as CI ran: {expected}")
        print(f"tested_servers: {', '.join(files)} say what CI ran: {expected}")
    elif args:
        print(sentence(args))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
