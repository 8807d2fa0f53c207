# Sourced by the scripts that start servers: a scratch directory ($work) and the processes
# started for the run ($pids, each added as it starts), both gone when the script exits; a
# free loopback port; and a wait until a server on a port answers.
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
  for _ in $(seq 1 600); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "server on $1 did not start" >&2; exit 1
}
