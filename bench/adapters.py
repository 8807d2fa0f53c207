"""The adapters in the benchmark (scripts/bench.sh runs it, with the project's .venv, where
limits is): each library's own Redis path against the same operation decided in the module,
as the adapters send it.

  adapters.py load PORT        SCRIPT LOAD the libraries' scripts and the adapter's, as the
                               installed packages have them (limits in .venv, and
                               rate-limiter-flexible in clients/node/node_modules)
  adapters.py fill PORT        the moving windows, in db 3: 1,000 keys of 50 hits under a
                               limit of 100, and 10 keys of 5,000 under 10,000, each hit
                               apart, for the module's log and for limits' list alike
  adapters.py calls KIND N     N operations of a workload, in the Redis protocol, on stdout

Workloads, each `<name>` the module's path, `<name>-lib` the library's and `<name>-fn` the
module's path through its Functions library (lua/dist, loaded by bench/functions.py load):
`moving-100` and
`moving-10000` (a moving-window hit, admitted), `stats-100` and `stats-10000` (limits'
get_moving_window, as Flask-Limiter asks it for its headers), `fixed` (a fixed-window hit on
random keys) and `consume` (rate-limiter-flexible's consume on random keys).
"""

import hashlib
import pathlib
import random
import re
import sys
import time

from resp import Reader, connect, resp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python"))
from redis_cell.limits.core import MOVING_WINDOW_SCRIPT  # noqa: E402

DB = 3
PERIOD_S = 3600
WINDOWS = {100: (1000, 50), 10000: (10, 5000)}  # limit: (keys, hits each)


def limits_script(name):
    import limits

    return (pathlib.Path(limits.__file__).parent / "resources" / "redis" / "lua_scripts"
            / f"{name}.lua").read_text()


def rate_limiter_flexible_script():
    """RateLimiterRedis's script, from its source: a template literal whose lines end in
    backslashes, which JavaScript drops with the newline."""
    source = (ROOT / "clients" / "node" / "node_modules" / "rate-limiter-flexible" / "lib"
              / "RateLimiterRedis.js").read_text()
    literal = re.search(r"const incrTtlLuaScript = `(.*?)`;", source, re.S)
    if not literal:
        sys.exit("rate-limiter-flexible's script is missing: run scripts/setup.sh")
    return literal.group(1).replace("\\\n", "")


SCRIPTS = {
    "acquire": lambda: limits_script("acquire_moving_window"),
    "moving": lambda: limits_script("moving_window"),
    "incr": lambda: limits_script("incr_expire"),
    "rlf": rate_limiter_flexible_script,
    "cell-moving": lambda: MOVING_WINDOW_SCRIPT,
}


def sha(name):
    return hashlib.sha1(SCRIPTS[name]().encode()).hexdigest()


def window_hit(limit, key, ts, lib, fn=False):
    if lib:
        return ("EVALSHA", sha("acquire"), 1, f"LIMITS:{key}", ts, limit, PERIOD_S, 1)
    if fn:
        # The same key as the module's: the library reads and writes its log.
        return ("FCALL", "cl_window", 1, f"LIMITS:window:{key}", limit, PERIOD_S * 1000, 1, "MS")
    return ("CL.WINDOW", f"LIMITS:window:{key}", limit, PERIOD_S * 1000, 1, "MS")


def load(port):
    con, reader = connect(port), None
    reader = Reader(con)
    for name, text in SCRIPTS.items():
        con.sendall(resp("SCRIPT", "LOAD", text()))
        assert reader.reply().decode() == sha(name), name


def fill(port):
    con = connect(port)
    reader = Reader(con)
    commands = [("SELECT", DB)]
    now = time.time()
    for limit, (keys, hits) in WINDOWS.items():
        for k in range(keys):
            for h in range(hits):
                for lib in (False, True):
                    commands.append(window_hit(limit, f"mw{limit}:{k}", now + h * 1e-6, lib))
    for start in range(0, len(commands), 2000):
        batch = commands[start:start + 2000]
        con.sendall(b"".join(resp(*c) for c in batch))
        for _ in batch:
            reply = reader.reply()
            # SELECT, then admissions: the module's replies, and limits' 1 for true.
            assert reply in ("OK", 1) or reply[0] == 0, reply


def calls(kind, n):
    rng = random.Random(kind)
    lib = kind.endswith("-lib")
    fn = kind.endswith("-fn")
    name = kind.removesuffix("-lib").removesuffix("-fn")
    out = [resp("SELECT", DB)]
    now = time.time()
    for i in range(n):
        if name.startswith(("moving-", "stats-")):
            limit = int(name.split("-")[1])
            key = f"mw{limit}:{rng.randrange(WINDOWS[limit][0])}"
            if name.startswith("moving-"):
                command = window_hit(limit, key, now + i * 1e-6, lib, fn)
            elif lib:
                command = ("EVALSHA", sha("moving"), 1, f"LIMITS:{key}", now - PERIOD_S, limit)
            else:
                command = ("EVALSHA", sha("cell-moving"), 1, f"LIMITS:window:{key}", limit,
                           PERIOD_S * 1000)
            out.append(resp(*command))
        elif name == "fixed":
            key = f"LIMITS:fw:{rng.randrange(100000)}"
            if fn:
                out.append(resp("FCALL", "cl_fixed", 1, key, 100, 60, 1, "COUNTDENIED"))
            else:
                out.append(resp(*(("EVALSHA", sha("incr"), 1, key, 60, 1) if lib else
                                  ("CL.FIXED", key, 100, 60, 1, "COUNTDENIED"))))
        elif name == "consume":
            key = f"rlflx:{rng.randrange(100000)}"
            if lib:
                out.append(resp("EVALSHA", sha("rlf"), 1, key, 1, 60, 100, 60))
            elif fn:
                out += [resp("MULTI"),
                        resp("FCALL", "cl_fixed", 1, key, 100, 60000, 1, "MS", "COUNTDENIED"),
                        resp("GET", key), resp("EXEC")]
            else:
                out += [resp("MULTI"), resp("CL.FIXED", key, 100, 60000, 1, "MS", "COUNTDENIED"),
                        resp("GET", key), resp("EXEC")]
        else:
            sys.exit(f"no workload {kind}")
    sys.stdout.buffer.write(b"".join(out))


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "load":
        load(int(sys.argv[2]))
    elif verb == "fill":
        fill(int(sys.argv[2]))
    elif verb == "calls":
        calls(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
