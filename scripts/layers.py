#!/usr/bin/env python3
"""The import graph of src/, read from its `use crate::…` lines (and `crate::…` paths in code),
checked against the layers of docs/design.md: every module sits in one layer, imports only
from its own layer or those below it, and the graph has no cycle. Test modules are left out:
a test may reach anywhere.

    python3 scripts/layers.py          # checks, and prints each layer with what it imports
    python3 scripts/layers.py --dot    # the graph in Graphviz's dot format
"""

import os
import re
import sys

# Bottom to top. A module not listed here fails the check: a new file takes a layer.
LAYERS = [
    ("values", ["error", "time", "decimal", "outcome", "command", "args", "fault"]),
    ("pure cores", ["gcra", "fixed", "window", "window::log", "lease", "lease::set", "limiter", "all", "queue"]),
    ("ffi", ["ffi", "strings", "alloc"]),
    (
        "effects",
        ["store", "propagate", "clock", "reply", "counters", "resetstat", "info", "lines",
         "redirect"],
    ),
    (
        "commands",
        ["commands", "commands::call", "commands::answer", "commands::state",
         "commands::single", "commands::release", "commands::holders", "commands::all"],
    ),
    ("blocking", ["blocking"]),
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
    cut = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(pub(\(\w+\))?\s+)?mod \w+", text, re.M)
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

    # The server's API is called from the FFI layer up, never from a value, a pure core or a
    # command body (they may name its types, the pointers they hand on).
    no_raw_calls = {m for name, ms in LAYERS if name in ("values", "pure cores", "commands") for m in ms}
    problems = []
    for module in sorted(no_raw_calls & modules):
        with open(files[module], encoding="utf-8") as f:
            code = without_tests_and_comments(f.read())
        for call in sorted(set(re.findall(r"\bRedisModule_\w+", code))):
            problems.append(f"{module} ({LAYERS[layer_of[module]][0]}) calls the server's {call}")
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
        for name, members in reversed(LAYERS):
            print(f"{name}:")
            for module in members:
                deps = ", ".join(sorted(graph.get(module, ()))) or "-"
                print(f"  {module:<18} imports {deps}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print("layers: no cycle, every import points down or across", file=sys.stderr)


if __name__ == "__main__":
    main()
