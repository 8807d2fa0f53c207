#!/usr/bin/env bash
# The benchmark: requests/s for SET PX (the floor), CL.THROTTLE and its Lua equivalent, on
# random keys and one hot key, from one run against Debian's redis-server; then server
# instructions per call counted by callgrind. Knobs: REQUESTS, CLIENTS, PIPELINE, ROUNDS.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_BENCH=1 bash scripts/setup.sh
cargo build --release --quiet
module="$PWD/target/release/libredis_cell.so"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 1 300); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "server on $1 did not start" >&2; exit 1; }

REQUESTS=${REQUESTS:-400000} CLIENTS=${CLIENTS:-50} PIPELINE=${PIPELINE:-16} ROUNDS=${ROUNDS:-5}
port=$(free_port)
# Server and client on different cores, so that they do not take turns on one.
taskset -c 0 /usr/bin/redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$work" \
  --loadmodule "$module" --logfile "$work/server.log" &
pids+=($!)
wait_ready "$port"
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat bench/gcra.lua)")

# name | command (redis-benchmark replaces __rand_int__ with a random key number)
workloads=(
  "SET PX, random keys|SET key:__rand_int__ v PX 60000"
  "CL.THROTTLE, random keys|CL.THROTTLE key:__rand_int__ 100 10 60 1"
  "CL.THROTTLE, hot key|CL.THROTTLE hot 1000000 1000000 1 1"
  "GCRA Lua (EVALSHA), random keys|EVALSHA $sha 1 key:__rand_int__ 100 10 60 1"
  "GCRA Lua (EVALSHA), hot key|EVALSHA $sha 1 hot 1000000 1000000 1 1"
)

rps() { # one run, in requests/s
  redis-cli -p "$port" FLUSHALL >/dev/null
  # shellcheck disable=SC2086
  taskset -c 1 redis-benchmark -p "$port" -n "$REQUESTS" -c "$CLIENTS" -P "$PIPELINE" -r 100000 -q $1 2>/dev/null \
    | tr '\r' '\n' | grep "requests per second" | tail -1 | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'
}

# Rounds interleave the workloads, so that a slow spell of the machine hits them all; each
# keeps its best round.
declare -A best
for _ in $(seq 1 "$ROUNDS"); do
  for entry in "${workloads[@]}"; do
    value=$(rps "${entry#*|}")
    best[$entry]=$(python3 -c "print(max(${best[$entry]:-0}, ${value:-0}))")
  done
done

echo
echo "Throughput: redis-server $(/usr/bin/redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/'), $REQUESTS requests, $CLIENTS clients, pipeline $PIPELINE, best of $ROUNDS interleaved rounds, server and client on separate cores"
printf '| %-34s | %12s | %8s |\n' "workload" "requests/s" "vs SET"
printf '|%s|%s|%s|\n' "------------------------------------" "--------------" "----------"
floor=""
for entry in "${workloads[@]}"; do
  value=${best[$entry]}
  [ -z "$floor" ] && floor=$value
  printf '| %-34s | %12.0f | %7.2fx |\n' "${entry%%|*}" "$value" "$(python3 -c "print($value / $floor)")"
done

# Instructions: the same server under callgrind, counting only while each workload runs.
CALLS=${CALLS:-20000}
cport=$(free_port)
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.%p" \
  /usr/bin/redis-server --bind 127.0.0.1 --port "$cport" --save "" --appendonly no --dir "$work" \
  --loadmodule "$module" --logfile "$work/cg-server.log" >/dev/null 2>&1 &
cgpid=$!
pids+=($cgpid)
wait_ready "$cport"
csha=$(redis-cli -p "$cport" SCRIPT LOAD "$(cat bench/gcra.lua)")
echo
echo "Server instructions per call (callgrind, $CALLS calls, 1 client, pipeline 16):"
printf '| %-34s | %12s | %8s |\n' "workload" "instructions" "vs SET"
printf '|%s|%s|%s|\n' "------------------------------------" "--------------" "----------"
base=""
for entry in "${workloads[@]}"; do
  name=${entry%%|*}; command=${entry#*|}
  command=${command//$sha/$csha}
  redis-cli -p "$cport" FLUSHALL >/dev/null
  callgrind_control -z "$cgpid" >/dev/null 2>&1
  callgrind_control -i on "$cgpid" >/dev/null 2>&1
  # shellcheck disable=SC2086
  redis-benchmark -p "$cport" -n "$CALLS" -c 1 -P 16 -r 100000 -q $command >/dev/null 2>&1
  callgrind_control -i off "$cgpid" >/dev/null 2>&1
  rm -f "$work"/callgrind.*.[0-9]*
  callgrind_control -d "$cgpid" >/dev/null 2>&1
  dump=$(ls -t "$work"/callgrind.* | head -1)
  total=$(grep '^totals:' "$dump" | awk '{print $2}')
  per_call=$(python3 -c "print($total / $CALLS)")
  [ -z "$base" ] && base=$per_call
  printf '| %-34s | %12.0f | %7.2fx |\n' "$name" "$per_call" "$(python3 -c "print($per_call / $base)")"
done
