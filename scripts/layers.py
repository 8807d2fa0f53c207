#!/usr/bin/env python3
"""The import graph of src/, read from its `use crate::…` lines (and `crate::…` paths in code),
checked against the layers of docs/design.md: every module sits in one layer, imports only
from its own layer or those below it, and the graph has no cycle. Test modules are left out:
a test may reach anywhere.

    python3 scripts/layers.py                  # checks, and prints each layer with what it imports
    python3 scripts/layers.py --dot            # the graph in Graphviz's dot format
    python3 scripts/layers.py --check PAGE.md  # checks, and that PAGE.md draws the layers as printed

The page's picture is the fenced block after the line `<!-- scripts/layers.py -->`: the
layers as this script prints them, so that the picture is the code's.
"""

import os
import re
import sys

# Bottom to top. A module not listed here fails the check: a new file takes a layer.
LAYERS = [
    ("values", ["error", "time", "decimal", "outcome", "command", "grammar", "grammar::params", "grammar::values", "args", "all_args", "bytes", "fault"]),
    ("pure cores", ["ban", "calendar", "gcra", "fixed", "window", "window::log", "window::trim", "buckets", "buckets::cells", "smooth", "smooth::state", "lease", "lease::set", "lease::edit", "limiter", "all", "line_order", "top"]),
    ("ffi", ["ffi", "register", "strings", "alloc"]),
    (
        "effects",
        ["store", "propagate", "blocked", "clock", "reply", "counters", "denied", "resetstat", "info",
         "lines", "redirect"],
    ),
    (
        "commands",
        ["commands", "commands::call", "commands::answer", "commands::state", "commands::ban",
         "commands::single", "commands::release", "commands::holders", "commands::all",
         "commands::top"],
    ),
    ("blocking", ["blocking", "delayed"]),
    ("entry", ["entry"]),
    ("registration", ["command_table", "crate"]),
]

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def module_of(path):
    rel = os.path.relpath(path, SRC)[: -len(".rs")].split(os.sep)
    if rel == ["lib"]:
        return "crate"
    if rel[-1] == "mod":
        rel = rel[:-1]
    return "::".join(rel)


def without_tests_and_comments(text):
    # Everything from the test module on is tests (each file keeps them last).
    cut = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(pub(\(\w+\))?\s+)?mod \w+\s*\{", text, re.M)
    if cut:
        text = text[: cut.start()]
    return re.sub(r"//[^\n]*", "", text)


def expand(tree):
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rindex("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [prefix + leaf for part in parts if part.strip() for leaf in expand(part)]


def resolve_relative(module, path):
    """`super::x` or `self::x` in `module`, as a path from the crate root."""
    base = [] if module == "crate" else module.split("::")
    parts = path.split("::")
    while parts and parts[0] in ("super", "self"):
        if parts.pop(0) == "super" and base:
            base.pop()
    return "::".join(base + parts)


def imports(module, text, modules):
    children = set(re.findall(r"^\s*(?:pub(?:\(\w+\))?\s+)?mod (\w+);", text, re.M))
    paths = []
    for tree in re.findall(r"\buse\s+([^;]+);", text, re.S):
        tree = re.sub(r"\s+", "", tree)
        for path in expand(tree):
            path = re.sub(r"(::self)?(\s*as\s*\w+)?$", "", path)
            head = path.split("::")[0]
            if head == "crate":
                paths.append(path[len("crate::"):])
            elif head in ("super", "self"):
                paths.append(resolve_relative(module, path))
            elif head in children:
                paths.append((module + "::" if module != "crate" else "") + path)
    code = re.sub(r"\buse\s+[^;]+;", "", text, flags=re.S)
    paths += re.findall(r"(?<![\w:])crate::((?:\w+::)*\w+)", code)
    paths += [
        resolve_relative(module, path)
        for path in re.findall(r"(?<![\w:])((?:super|self)::(?:\w+::)*\w+)", code)
    ]
    prefix = module + "::" if module != "crate" else ""
    for child in children:
        if re.search(r"(?<![\w:])" + child + r"::", code):
            paths.append(prefix + child)
    found = set()
    for path in paths:
        parts = path.split("::")
        for n in range(len(parts), 0, -1):
            candidate = "::".join(parts[:n])
            if candidate in modules:
                if candidate != module:
                    found.add(candidate)
                break
    return found


def main():
    files = {}
    for root, _, names in os.walk(SRC):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    # A file that is all tests (`#![cfg(test)]`) is left out, as test modules are.
                    if f.read().lstrip().startswith("#![cfg(test)]"):
                        continue
                files[module_of(path)] = path
    modules = set(files)
    layer_of = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}
    graph = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            graph[module] = imports(module, without_tests_and_comments(f.read()), modules)

    # The server's API is called only in the FFI and effects layers; the others may name its
    # types, the pointers they hand on.
    no_raw_calls = {m for name, ms in LAYERS if name not in ("ffi", "effects") for m in ms}
    problems = []
    for module in sorted(no_raw_calls & modules):
        with open(files[module], encoding="utf-8") as f:
            code = without_tests_and_comments(f.read())
        for call in sorted(set(re.findall(r"\bRedisModule_\w+", code))):
            problems.append(f"{module} ({LAYERS[layer_of[module]][0]}) calls the server's {call}")
    # Values and pure cores know nothing of the server: not its API, nor a raw pointer, nor
    # the unsafe code either would need.
    pure = {m for name, ms in LAYERS if name in ("values", "pure cores") for m in ms}
    for module in sorted(pure & modules):
        with open(files[module], encoding="utf-8") as f:
            code = without_tests_and_comments(f.read())
        for what, pattern in [
            ("names redis_module::raw", r"\bredis_module::raw\b|\braw::"),
            ("has unsafe code", r"\bunsafe\b"),
            ("holds a raw pointer", r"\*(mut|const)\s"),
        ]:
            if re.search(pattern, code):
                problems.append(f"{module} ({LAYERS[layer_of[module]][0]}) {what}")
    for module in sorted(modules - set(layer_of)):
        problems.append(f"{module} is in no layer: give it one in scripts/layers.py")
    for module in sorted(set(layer_of) - modules):
        problems.append(f"{module} is listed in a layer but has no file")
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if module in layer_of and dep in layer_of and layer_of[dep] > layer_of[module]:
                problems.append(
                    f"{module} ({LAYERS[layer_of[module]][0]}) imports {dep} "
                    f"({LAYERS[layer_of[dep]][0]}), a layer above it"
                )
    # The crate root declares every module; that is not an import.
    state, stack = {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                problems.append("cycle: " + " -> ".join(cycle))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)

    if "--dot" in sys.argv:
        print("digraph src {")
        for module, deps in sorted(graph.items()):
            for dep in sorted(deps):
                print(f'  "{module}" -> "{dep}";')
        print("}")
    else:
        picture = drawing(graph)
        print(picture, end="")
        if "--check" in sys.argv:
            page = sys.argv[sys.argv.index("--check") + 1]
            if drawn_in(page) != picture:
                problems.append(
                    f"{page}'s picture of the layers is not the code's: paste in "
                    "the output of python3 scripts/layers.py"
                )
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print("layers: no cycle, every import points down or across", file=sys.stderr)


def drawing(graph):
    """Each layer from the top, each module in it with what it imports."""
    lines = []
    for name, members in reversed(LAYERS):
        lines.append(f"{name}:")
        for module in members:
            deps = ", ".join(sorted(graph.get(module, ()))) or "-"
            lines.append(f"  {module:<18} imports {deps}")
    return "\n".join(lines) + "\n"


def drawn_in(page):
    """The fenced block after the page's `<!-- scripts/layers.py -->` line."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"<!-- scripts/layers.py -->\n```[^\n]*\n(.*?)```", text, re.S)
    return found.group(1) if found else None


if __name__ == "__main__":
    main()
