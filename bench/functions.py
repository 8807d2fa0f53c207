"""The Functions library in the benchmark (scripts/bench.sh runs it): each command of the
module against the same call through the library (lua/dist/redis_cell.lua), as FCALL.

  functions.py load PORT      FUNCTION LOAD REPLACE the library
  functions.py calls KIND N   N calls of a workload, in the Redis protocol, on stdout

Workloads, each `<name>` the module's command and `<name>-fn` the library's function, on
100,000 random keys in db 4 (a lease on 1,000, ten holders each): `throttle`, `fixed`,
`window` (exact), `buckets` (BUCKETS 60), `lease`, `smooth` and `all` (a THROTTLE and a
FIXED limiter under one hash tag), every call admitted; and `floor-fn`, bench/floor.lua's
function on keys of its own: TIME, GET, SET … PXAT and five integers, the least any function
that decides as the module does can cost.
"""

import pathlib
import random
import sys

from resp import Reader, connect, resp

ROOT = pathlib.Path(__file__).resolve().parents[1]
DB = 4


def load(port):
    con = connect(port)
    reader = Reader(con)
    for path, name in [(ROOT / "lua" / "dist" / "redis_cell.lua", b"redis_cell"),
                       (ROOT / "bench" / "floor.lua", b"cell_floor")]:
        con.sendall(resp("FUNCTION", "LOAD", "REPLACE", path.read_text()))
        assert reader.reply() == name, f"FUNCTION LOAD {path.name}"


def call(name, rng):
    """One call's command, its key and its arguments."""
    key = f"fn:{name}:{rng.randrange(100000)}"
    if name == "throttle":
        return "CL.THROTTLE", [key], [1000, 100, 60]
    if name in ("fixed", "floor"):
        return "CL.FIXED", [key], [1000, 60]
    if name == "window":
        return "CL.WINDOW", [key], [1000, 60]
    if name == "buckets":
        return "CL.WINDOW", [key], [1000, 3600, 1, "BUCKETS", 60]
    if name == "lease":
        key = f"fn:lease:{rng.randrange(1000)}"
        return "CL.LEASE", [key], [1000, 60, f"h{rng.randrange(10)}"]
    if name == "smooth":
        return "CL.SMOOTH", [key], [1000, 1]
    if name == "all":
        tag = f"{{fn:all:{rng.randrange(100000)}}}"
        return "CL.ALL", [f"{tag}:t", f"{tag}:f"], ["THROTTLE", 1000, 100, 60, "FIXED", 1000, 60]
    sys.exit(f"no workload {name}")


def calls(kind, n):
    rng = random.Random("fixed" if kind == "floor-fn" else kind.removesuffix("-fn"))
    library = kind.endswith("-fn")
    out = [resp("SELECT", DB)]
    for _ in range(n):
        command, keys, args = call(kind.removesuffix("-fn"), rng)
        if library:
            function = "cl_" + command.removeprefix("CL.").lower()
            if kind == "floor-fn":
                function = "floor_fixed"
            out.append(resp("FCALL", function, len(keys), *keys, *args))
        elif command == "CL.ALL":
            out.append(resp(command, len(keys), *keys, *args))
        else:
            out.append(resp(command, *keys, *args))
    sys.stdout.buffer.write(b"".join(out))


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "load":
        load(int(sys.argv[2]))
    elif verb == "calls":
        calls(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
