#!/usr/bin/env python3
"""The library's two forms, generated from its one source (lua/*.lua, in SOURCES' order):

- lua/grammar.lua and lua/errors.lua first, the Lua forms of the module's grammar table
  (src/grammar.rs) and reply texts (src/error.rs), as `cargo run --example lua_tables`
  prints them (scripts/lua_tables.rs), and clients/grammar.json, the grammar the clients'
  tests hold their builders to;

- lua/dist/redis_cell.lua, for FUNCTION LOAD (Redis 7.0+, Valkey 7.2+): the `#!lua` line, the
  sources, and a register_function call for each entry of CELL_FUNCTIONS;
- lua/dist/redis_cell.script.lua, for EVAL/EVALSHA where Functions are missing or refused:
  the sources, and a dispatch on the function's name, given as the first argument.

    lua_forms.py --write    writes them all
    lua_forms.py --check    fails if any differs from what the sources give
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Generated from the Rust (`lua_tables`): the tables the sources after them read, and the
# grammar the clients' tests hold their builders to.
TABLES = {ROOT / "lua" / "grammar.lua": "grammar", ROOT / "lua" / "errors.lua": "errors",
          ROOT / "clients" / "grammar.json": "json"}
SOURCES = ["errors.lua", "grammar.lua", "exact.lua", "bytes.lua", "args.lua", "integers.lua", "clock.lua", "state.lua", "reply.lua", "ban.lua", "single.lua", "calendar.lua", "fixed.lua",
           "throttle.lua", "buckets.lua", "window.lua", "lease.lua", "smooth.lua", "all_args.lua",
           "all.lua", "library.lua"]
LIBRARY = ROOT / "lua" / "dist" / "redis_cell.lua"
SCRIPT = ROOT / "lua" / "dist" / "redis_cell.script.lua"
NOTE = "-- Generated from lua/*.lua by scripts/lua_forms.py: edit those, not this.\n"


# What the generated forms' own lines use of the sources.
TAIL_NAMES = {"CELL_FUNCTIONS", "cell_unknown"}
DEFINITION = re.compile(r"^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)\b", re.M)


def sources() -> str:
    """The sources, each in a block of its own: Lua allows a function 200 locals, and the
    chunk is one function. The names a later source (or the forms' own lines) uses are
    declared once at the top, and each source assigns the ones it defines."""
    texts = [(ROOT / "lua" / name).read_text() for name in SOURCES]
    defined = [DEFINITION.findall(text) for text in texts]
    # Each top-level name is one source's, declared alone: the blocks share them by name.
    names = [name for names in defined for name in names]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise SystemExit(f"lua_forms: defined in more than one source: {', '.join(twice)}")
    for name, text in zip(SOURCES, texts):
        if re.search(r"^local [A-Za-z_][A-Za-z0-9_]*\s*,", text, re.M):
            raise SystemExit(f"lua_forms: {name} declares several names on one top-level line")
    shared = []
    for i, names in enumerate(defined):
        later = "\n".join(texts[i + 1:])
        for name in names:
            if name in TAIL_NAMES or re.search(rf"\b{name}\b", later):
                shared.append(name)
    blocks = []
    for text in texts:
        for name in shared:
            text = re.sub(rf"^local (function )?{name}\b", lambda m: (m.group(1) or "") + name, text,
                          flags=re.M)
        blocks.append("do\n" + text + "end\n")
    declaration = "local " + ",\n  ".join(shared) + "\n"
    return declaration + "\n" + "\n".join(blocks)


def library() -> str:
    return ("#!lua name=redis_cell\n" + NOTE + "\n" + sources()
            # FUNCTION LOAD runs this part with few globals (no ipairs): a plain loop.
            + "for i = 1, #CELL_FUNCTIONS do\n"
            + "  local f = CELL_FUNCTIONS[i]\n"
            + "  redis.register_function{ function_name = f.name, callback = f.callback, flags = f.flags }\n"
            + "end\n")


def script() -> str:
    return (NOTE + "-- EVAL script 0|n [key ...] name [arg ...]: the function `name`, as FCALL would call it.\n\n"
            + "-- Redis 6.2 replicates a script's effects only when asked; later servers always do.\n"
            + "if redis.replicate_commands then redis.replicate_commands() end\n\n"
            + sources()
            + "local wanted = ARGV[1]\n"
            + "for _, f in ipairs(CELL_FUNCTIONS) do\n"
            + "  if f.name == wanted then return f.callback(KEYS, { unpack(ARGV, 2) }) end\n"
            + "end\n"
            + "return cell_unknown(wanted)\n")


def tables() -> dict:
    """lua/grammar.lua and lua/errors.lua, as the Rust gives them."""
    made = {}
    for path, which in TABLES.items():
        made[path] = subprocess.run(
            ["cargo", "run", "--quiet", "--example", "lua_tables", "--", which],
            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return made


def main(argv: list[str]) -> None:
    made = tables()
    if argv == ["--write"]:
        for path, text in made.items():
            path.write_text(text)
    # The client packages' build hooks copy these into each package as it is built.
    forms = {LIBRARY: library(), SCRIPT: script()}
    if argv == ["--write"]:
        for path, text in forms.items():
            path.write_text(text)
    elif argv == ["--check"]:
        stale = [str(p.relative_to(ROOT)) for p, t in {**made, **forms}.items()
                 if not p.exists() or p.read_text() != t]
        if stale:
            raise SystemExit(f"lua_forms: {', '.join(stale)} differ from lua/: run scripts/lua_forms.py --write")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
