# Sourced by the bench scripts that run llm-sim beside the tools
# (estimate.sh, estimate-demo.sh): a scratch folder removed on exit with the
# simulators and watchers started, and the small helpers they share.
# Run from the repository's root, with set -euo pipefail.

WORK="$(mktemp -d)"
PIDS=() # processes to end on exit
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
note() { printf '%s\n' "$*" >&2; }

# start_sim NAME ARGS...: starts llm-sim with ARGS, sets URL_<NAME> once it listens.
start_sim() {
  local name="$1"; shift
  llm-sim --url-file "$WORK/$name.url" "$@" 2>/dev/null &
  PIDS+=($!)
  for _ in $(seq 200); do [[ -s "$WORK/$name.url" ]] && break; sleep 0.05; done
  printf -v "URL_$name" '%s' "$(cat "$WORK/$name.url")"
}

now() { date +%s.%N; }
# off PREDICTED ACTUAL: how far the prediction was off, as a signed percentage.
off() { awk -v p="$1" -v a="$2" 'BEGIN { printf "%+.1f%%", 100 * (p - a) / a }'; }
