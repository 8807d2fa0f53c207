"""docs/clients.md's code: every block in it but the install commands is a file of
clients/examples (or, for Java, of clients/java/examples, a Maven project; for Go, of
clients/go/examples) as it stands, and every such file runs against a server with the module,
here, in scripts/install_check.sh (which runs the install commands too), or in the Java
examples' or the Go module's own tests."""

import os
import re
import runpy
import subprocess
import sys
import time

from starlette.testclient import TestClient

from conftest import ROOT, refused_after, served

EXAMPLES = ROOT / "clients" / "examples"
# Served from a fresh virtualenv and a fresh npm project, installed as the page says.
RUN_BY_THE_INSTALL_CHECK = {"flask_app.py", "express_app.ts"}
RUN_HERE = {"fastapi_app.py", "fastapi_metrics.py", "slowapi_app.py", "typed_client.py"}
# Served by clients/node/test/examples.test.js.
RUN_BY_THE_NODE_TESTS = {"express_limits.js", "express_metrics.js"}
# Served and run by clients/java/examples' test (ExamplesTest, in scripts/test.sh).
JAVA_EXAMPLES = ROOT / "clients" / "java" / "examples" / "src" / "main" / "java" / "example"
RUN_BY_THE_JAVA_TESTS = {"LimitedApp.java", "Recipes.java"}
# Run and served by clients/go/examples_test.go, each a program of its own.
GO_EXAMPLES = ROOT / "clients" / "go" / "examples"
RUN_BY_THE_GO_TESTS = {"limited/main.go", "ratelimit/main.go", "typed/main.go"}


def test_every_block_of_the_page_is_an_example_that_runs():
    page = (ROOT / "docs" / "clients.md").read_text()
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", page, re.S | re.M)
    # Every fence is one the pattern read: none indented, quoted, tilded or with more words.
    assert len(re.findall(r"^[ \t>]*(?:```|~~~)", page, re.M)) == 2 * len(blocks)
    shown = {path.name: path.read_text() for path in EXAMPLES.iterdir()}
    assert set(shown) == RUN_BY_THE_INSTALL_CHECK | RUN_HERE | RUN_BY_THE_NODE_TESTS
    java = {path.name: path.read_text() for path in JAVA_EXAMPLES.iterdir()}
    assert set(java) == RUN_BY_THE_JAVA_TESTS
    shown.update(java)
    go = {str(path.relative_to(GO_EXAMPLES)): path.read_text() for path in GO_EXAMPLES.rglob("*") if path.is_file()}
    assert set(go) == RUN_BY_THE_GO_TESTS
    shown.update(go)
    # The one sh block: the install commands, which scripts/install_check.sh reads from the
    # page's "Installing" and runs.
    installing = page.split("## Installing", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [block for language, block in blocks if language == "sh"] == [installing]
    for language, block in blocks:
        if language == "sh":
            continue
        assert block in shown.values(), f"a {language} block of docs/clients.md is no example:\n{block}"
    assert set(shown.values()) <= {block for _, block in blocks}, "an example the page does not show"


def test_the_slowapi_app_admits_3_then_429(server, r, monkeypatch):
    monkeypatch.setenv("REDIS_URL", f"cell+redis://127.0.0.1:{server}")
    app = runpy.run_path(str(EXAMPLES / "slowapi_app.py"))["app"]
    refused_after(lambda: TestClient(app).get("/"), 3, 20)
    assert r.keys("LIMITS:gcra:*"), "the decisions were the module's"


def test_the_fastapi_app_admits_3_then_429(server, r, monkeypatch):
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{server}")
    app = runpy.run_path(str(EXAMPLES / "fastapi_app.py"))["app"]
    with served(app) as http:
        answers = [http.get("/") for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    # GCRA: the next unit is back within 20 s (a minute over 3 units).
    assert 0 < int(answers[3].headers["Retry-After"]) <= 20
    assert r.keys("ratelimit:per-address:*"), "the decisions were the server's"


def test_the_metrics_example_counts_each_decision_by_policy(server, r, monkeypatch):
    # The FastAPI example counts the same policy of the same address on this server.
    for key in r.scan_iter("ratelimit:per-address:*"):
        r.delete(key)
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{server}")
    app = runpy.run_path(str(EXAMPLES / "fastapi_metrics.py"))["app"]
    with served(app) as http:
        assert [http.get("/").status_code for _ in range(5)] == [200, 200, 200, 429, 429]
        metrics = http.get("/metrics/").text
    assert 'ratelimit_decisions_total{outcome="allowed",policy="per-address"} 3.0' in metrics
    assert 'ratelimit_decisions_total{outcome="denied",policy="per-address"} 2.0' in metrics


def test_the_typed_client_example_prints_its_reply_and_writes_its_keys(server, r):
    done = subprocess.run([sys.executable, str(EXAMPLES / "typed_client.py")], check=True,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "REDIS_URL": f"redis://127.0.0.1:{server}"})
    assert done.stdout.startswith("Reply(limited=False, limit=3, remaining=2, retry_after=None,")
    assert sorted(r.keys()) == [b"api:bob", b"login:alice", b"plan:key42",
                                b"quota:key42"]  # the dry run wrote nothing
    # Kept for the month, less the part of today's cell gone by.
    assert 2592000 - 86400 < r.ttl("quota:key42") <= 2592000
    # The calendar month ends at 00:00 of a 1st in UTC+01:00, 23:00 UTC the day before.
    end = time.gmtime((r.pexpiretime("plan:key42") + 3_600_000) / 1000)
    assert (end.tm_mday, end.tm_hour, end.tm_min) == (1, 0, 0)


def test_the_speed_figures_are_the_benchmarks():
    """docs/clients.md's speed paragraphs copy figures whose home is docs/benchmark.md: each
    number in them (a count with a thousands comma, or a ratio) is in the benchmark's section
    for that client."""
    page = (ROOT / "docs" / "clients.md").read_text()
    bench = (ROOT / "docs" / "benchmark.md").read_text()
    for heading, home in [("### Speed\n", "## The Java client (#49)"),
                          ("### Speed, against redis_rate\n", "## The Go client (#50)")]:
        paragraph = page.split(heading, 1)[1].split("\n#", 1)[0]
        section = bench.split(home, 1)[1].split("\n## ", 1)[0]
        figures = re.findall(r"\d{1,3}(?:,\d{3})+|\d+\.\d+×", paragraph)
        assert len(figures) >= 4, paragraph
        for figure in figures:
            assert figure in section, f"{figure} ({heading.strip()}) is not in benchmark.md's {home}"
