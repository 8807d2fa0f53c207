#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of argument parsing, of decoding every
# stored state format, of the lease sets CL.LEASE stores, of bucketed windows' cells and of
# CL.SMOOTH's Guava states and of banned keys: FUZZ_SECONDS per target (default 30). The toolchain is stable;
# RUSTC_BOOTSTRAP lets it take the sanitizer flags cargo fuzz passes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
export RUSTC_BOOTSTRAP=1
total=0
for target in args state lease buckets smooth ban; do
  log=$(mktemp)
  cargo fuzz run "$target" -- -max_total_time="${FUZZ_SECONDS:-30}" -print_final_stats=1 >"$log" 2>&1 || {
    tail -40 "$log"; echo "fuzz target $target failed" >&2; exit 1; }
  runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  echo "fuzz $target: $runs inputs, no failure"
  total=$((total + runs))
  rm -f "$log"
done
echo "fuzz: $total inputs in all"
