#!/usr/bin/env bash
# The client packages as a user installs them from a clean clone, by the three commands
# docs/clients.md gives ("Installing", read from there): a fresh virtualenv that ran its pip
# command serves clients/examples/flask_app.py, a fresh npm project that ran its npm
# command (the tarball npm would publish) and installed express, ioredis and TypeScript
# compiles clients/examples/express_app.ts with `tsc --strict` and serves it, and a fresh Go
# module holding clients/go/examples/limited/main.go that ran its go command builds and serves
# it. Each app, against a server with the module, answers 200 three times, then 429 with a
# Retry-After.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
server=${REDIS_SERVER:-/usr/bin/redis-server}
module=${REDIS_CELL_MODULE:-$root/target/debug/libredis_cell.so}
. scripts/scratch.sh

# Waits until PORT answers HTTP, then sends four requests: prints their statuses, and
# whether the last had a Retry-After.
four_requests() {
  python3 - "$1" <<'PY'
import sys, time, urllib.error, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
deadline = time.monotonic() + 60
while True:
    try:
        urllib.request.urlopen(url, timeout=5).read()
        break
    except urllib.error.HTTPError:
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("the app did not start")
        time.sleep(0.2)
statuses, retry = [200], None
for _ in range(3):
    try:
        urllib.request.urlopen(url, timeout=5).read()
        statuses.append(200)
    except urllib.error.HTTPError as e:
        statuses.append(e.code)
        retry = e.headers.get("Retry-After")
print(*statuses, "retry-after" if retry and int(retry) > 0 else "no-retry-after")
PY
}

expect() { # WHAT GOT
  if [ "$2" != "200 200 200 429 retry-after" ]; then
    echo "install check: $1 answered '$2', not '200 200 200 429 retry-after'" >&2
    exit 1
  fi
  echo "install check: $1: $2"
}

port=$(free_port)
"$server" --bind 127.0.0.1 --port "$port" --save "" --dir "$work" --loadmodule "$module" \
  >/dev/null 2>&1 &
pids+=($!)
wait_ready "$port"

# The three commands docs/clients.md gives, with this clone for /path/to/redis-cell.
documented() { # pip|npm|go
  python3 - "$1" "$root" <<'PY'
import sys
doc = open(sys.argv[2] + "/docs/clients.md").read()
block = doc.split("## Installing", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
# The block is these three commands and nothing else, so that all it shows is run.
assert [l.split()[:2] for l in block.splitlines()] == [["pip", "install"], ["npm", "install"], ["go", "mod"]], block
[line] = [l for l in block.splitlines() if l.split()[0] == sys.argv[1]]
print(line.replace("/path/to/redis-cell", sys.argv[2]))
PY
}

# Python: in a virtualenv of its own.
python3 -m venv "$work/venv"
(
  . "$work/venv/bin/activate"
  cd "$work"
  eval "$(documented pip) -q --disable-pip-version-check"
)
flask_port=$(free_port)
REDIS_URL="cell+redis://127.0.0.1:$port" "$work/venv/bin/flask" \
  --app "$root/clients/examples/flask_app.py" run --port "$flask_port" >"$work/flask.log" 2>&1 &
pids+=($!)
expect "the Flask app ($(documented pip))" "$(four_requests "$flask_port")"

# Node: in an npm project of its own, with what the app imports.
mkdir "$work/app"
(
  cd "$work/app"
  npm init -y >/dev/null
  eval "$(documented npm) --silent --no-audit --no-fund" >/dev/null
  # The app's own packages; the two the package has peer ranges for at the matrix's newest,
  # so that a release past those ranges does not fail the check before the matrix has it.
  ioredis=$(python3 "$root/scripts/client_matrix.py" version node newest ioredis)
  rlf=$(python3 "$root/scripts/client_matrix.py" version node newest rate-limiter-flexible)
  npm install --silent --no-audit --no-fund express typescript @types/express @types/node \
    "ioredis@$ioredis" "rate-limiter-flexible@$rlf" >/dev/null
  cp "$root/clients/examples/express_app.ts" .
  npx tsc --strict --esModuleInterop --module commonjs --target es2020 \
    --outDir out express_app.ts
)
express_port=$(free_port)
PORT=$express_port REDIS_URL="redis://127.0.0.1:$port" node "$work/app/out/express_app.js" \
  >"$work/express.log" 2>&1 &
pids+=($!)
expect "the Express app ($(documented npm), tsc --strict)" \
  "$(four_requests "$express_port")"

# Go: a module of its own holding the net/http example, tidied by the documented line once the
# app imports the packages (go mod tidy resolves what main.go imports).
mkdir "$work/goapp"
(
  cd "$work/goapp"
  go mod init example.com/limited >/dev/null 2>&1
  cp "$root/clients/go/examples/limited/main.go" .
  eval "$(documented go)" >/dev/null 2>&1
  go build -buildvcs=false -o limited .
)
go_port=$(free_port)
ADDR="127.0.0.1:$go_port" REDIS_ADDR="127.0.0.1:$port" "$work/goapp/limited" >"$work/go.log" 2>&1 &
pids+=($!)
expect "the net/http app ($(documented go))" "$(four_requests "$go_port")"
