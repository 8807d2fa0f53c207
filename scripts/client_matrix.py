#!/usr/bin/env python3
"""The client packages' version matrix, clients/matrix.json: its lanes for
scripts/client_lanes.sh, its table in docs/clients.md, and the packages' metadata held to it.

    client_matrix.py pins SIDE LANE          what a lane installs: name==version (python),
                                             name@version (node) or -Dproperty=version (java,
                                             Maven's), one a line
    client_matrix.py version SIDE LANE NAME  one version of a lane (the interpreter's, say)
    client_matrix.py servers SIDE LANE       the servers a lane runs on (redis, valkey)
    client_matrix.py --check DOC             DOC shows the table as the file has it, and each
                                             package's declared floor is the lane's floor
    client_matrix.py --write DOC             writes the table into DOC
"""

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MATRIX = json.loads((ROOT / "clients" / "matrix.json").read_text())
INTERPRETERS = {"python", "node", "java"}
BEGIN = "<!-- matrix: generated from clients/matrix.json by scripts/client_matrix.py -->\n"
END = "<!-- /matrix -->\n"
SERVERS = {"redis": "Redis", "valkey": "Valkey"}


def version(text: str) -> tuple:
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def pins(side: str, lane: str) -> list[str]:
    packages = [p for p in MATRIX[side]["packages"] if p["name"] not in INTERPRETERS]
    if side == "java":
        return [f"-D{p['property']}={p[lane]}" for p in packages]
    joint = "==" if side == "python" else "@"
    return [f"{p['name']}{joint}{p[lane]}" for p in packages]


def table() -> str:
    lines = [BEGIN]
    for side, label, what in (
            ("python", "Python", "builds the wheel, installs it into a fresh virtualenv with these "
             "versions, and runs clients/python/tests against it"),
            ("node", "Node", "packs the tarball, installs it into a fresh npm project with these "
             "versions, and runs clients/node/test against it"),
            ("java", "Java", "runs clients/java's tests with Maven, the client built and run "
             "against these versions (the newest are the pom's own, which scripts/test.sh "
             "runs)")):
        lanes = MATRIX[side]["lanes"]
        where = "; ".join(f"the {lane} lane on {' and '.join(SERVERS[s] for s in servers)}"
                          for lane, servers in lanes.items())
        lines.append(f"\n**{label}**: each lane {what}; {where}.\n\n")
        lines.append("| package | floor | newest | what the lanes proved |\n|---|---|---|---|\n")
        for p in MATRIX[side]["packages"]:
            lines.append(f"| {p['label']} | {p['floor']} | {p['newest']} | {p['proved']} |\n")
    lines.append("\n" + END)
    return "".join(lines)


def bounds(spec: str) -> list[tuple[tuple, tuple]]:
    """An npm range of the forms package.json uses (^a, ~a, >=a <b, joined by ||) as
    [low, high) intervals."""
    intervals = []
    for alternative in spec.split("||"):
        words = alternative.split()
        if len(words) == 1 and words[0][0] in "^~":
            low = version(words[0][1:])
            given = len(words[0][1:].split("."))
            if words[0][0] == "^" or given == 1:
                high = (low[0] + 1, 0, 0)
            else:
                high = (low[0], low[1] + 1, 0)
        elif len(words) == 2 and words[0].startswith(">=") and words[1].startswith("<"):
            low, high = version(words[0][2:]), version(words[1][1:])
        elif len(words) == 1 and words[0].startswith(">="):
            low, high = version(words[0][2:]), (10**9, 0, 0)
        else:
            raise SystemExit(f"client_matrix: cannot read the range {spec!r}")
        intervals.append((low, high))
    return intervals


def metadata_faults() -> list[str]:
    faults = []
    project = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())["project"]
    floors = {p["name"]: p["floor"] for p in MATRIX["python"]["packages"]}
    specs = list(project["dependencies"])
    for extra, wanted in project["optional-dependencies"].items():
        if extra != "test":
            specs += wanted
    for spec in specs:
        name = re.split(r"[\[<>=!~ ]", spec, maxsplit=1)[0].lower()
        if name not in floors:
            continue
        low = re.search(r">=\s*([0-9.]+)", spec)
        if low is None:
            faults.append(f"pyproject.toml: {spec!r} has no floor")
        elif version(low.group(1)) != version(floors[name]):
            faults.append(f"pyproject.toml: {spec!r}, where the floor lane runs {name} {floors[name]}")

    package = json.loads((ROOT / "clients" / "node" / "package.json").read_text())
    ranges = dict(package["peerDependencies"], node=package["engines"]["node"])
    for p in MATRIX["node"]["packages"]:
        if p["name"] not in ranges:
            faults.append(f"package.json declares no range for {p['name']}")
            continue
        intervals = bounds(ranges[p["name"]])
        if min(low for low, _ in intervals) != version(p["floor"]):
            faults.append(f"package.json: {p['name']} {ranges[p['name']]!r} does not start at the floor lane's {p['floor']}")
        if not any(low <= version(p["newest"]) < high for low, high in intervals):
            faults.append(f"package.json: {p['name']} {ranges[p['name']]!r} leaves out the newest lane's {p['newest']}")

    # Maven takes no ranges: the pom builds on the newest lane's versions, and a build may set
    # each property to another (the floor lane does).
    pom = (ROOT / "clients" / "java" / "pom.xml").read_text()
    for p in MATRIX["java"]["packages"]:
        if "property" not in p:
            continue
        given = re.search(rf"<{re.escape(p['property'])}>([^<]*)</", pom)
        if given is None:
            faults.append(f"clients/java/pom.xml has no <{p['property']}>")
        elif given.group(1) != p["newest"]:
            faults.append(f"clients/java/pom.xml: {p['property']} is {given.group(1)}, where the newest lane runs {p['newest']}")
    # The examples and the benchmark build on the jar `mvn install` put in the local
    # repository: its version, or an older jar left there.
    def cell_version(text: str) -> str | None:
        found = re.search(r"<artifactId>redis-cell</artifactId>\s*<version>([^<]*)</version>", text)
        return found and found.group(1)

    own = cell_version(pom)
    for other in ("examples", "bench"):
        uses = cell_version((ROOT / "clients" / "java" / other / "pom.xml").read_text())
        if own is None or uses != own:
            faults.append(f"clients/java/{other}/pom.xml does not build on clients/java's redis-cell version")
    return faults


def main(argv: list[str]) -> None:
    if argv[:1] == ["pins"]:
        print("\n".join(pins(argv[1], argv[2])))
    elif argv[:1] == ["version"]:
        [found] = [p[argv[2]] for p in MATRIX[argv[1]]["packages"] if p["name"] == argv[3]]
        print(found)
    elif argv[:1] == ["servers"]:
        print(" ".join(MATRIX[argv[1]]["lanes"][argv[2]]))
    elif argv[:1] in (["--check"], ["--write"]):
        doc = Path(argv[1])
        text = doc.read_text()
        if BEGIN not in text or END not in text:
            raise SystemExit(f"client_matrix: {doc} has no generated table ({BEGIN.strip()})")
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        fresh = head + table() + tail
        if argv[0] == "--write":
            doc.write_text(fresh)
        elif fresh != text:
            raise SystemExit(f"client_matrix: {doc}'s table differs from clients/matrix.json: "
                             f"run scripts/client_matrix.py --write {doc}")
        faults = metadata_faults()
        if faults:
            raise SystemExit("client_matrix:\n  " + "\n  ".join(faults))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
