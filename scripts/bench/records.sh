#!/usr/bin/env bash
# Record throughput: counting the tokens of a file of generate-shaped records
# (tests/bench/genrecords) with tokstat --total and budget-cut, side by side
# with a Python json one-liner, jq, and wc -l (reading lines and nothing else:
# the speed of light). Then dedupe-resume loading a done file of 10M ids: time
# and peak memory per id. Run from anywhere:
#   bash scripts/bench/records.sh
# Settings (environment): BENCH_SIZE (default 200MB), BENCH_IDS (default
# 10000000), BENCH_RUNS (default 3: best of, for the fast tools), BENCH_DIR
# (default tests/bench/out, where generated data is kept and reused).
# Tools run one at a time, so that two cores are enough.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SIZE="${BENCH_SIZE:-200MB}"
NIDS="${BENCH_IDS:-10000000}"
RUNS="${BENCH_RUNS:-3}"
DIR="${BENCH_DIR:-$ROOT/tests/bench/out}"
mkdir -p "$DIR" bin
DATA="$DIR/records-$SIZE.jsonl"
DONE="$DIR/done-$NIDS-ids.jsonl"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

note() { printf '%s\n' "$*" >&2; }

# --- what to measure -------------------------------------------------------

note "building budget-cut from the working tree..."
go build -o bin/budget-cut ./cmd/budget-cut
for tool in tokstat dedupe-resume; do
  if [[ ! -x bin/$tool ]]; then
    note "bin/$tool does not exist (make build did not make it): its row is skipped"
  fi
done
if ! command -v jq >/dev/null; then
  note "jq not found: installing it with apt-get"
  if ! { apt-get install -y -qq jq >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq jq >/dev/null 2>&1; }; }; then
    note "could not install jq: its row is skipped"
  fi
fi
TIME=/usr/bin/time
[[ -x $TIME ]] || { note "/usr/bin/time not found: peak memory is not measured"; TIME=""; }

if [[ ! -s $DATA ]]; then
  note "generating $DATA ($SIZE)..."
  go run ./tests/bench/genrecords -size "$SIZE" -o "$DATA.tmp" && mv "$DATA.tmp" "$DATA"
fi
BYTES=$(stat -c %s "$DATA")
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.0f", b / 1e6 }')

# --- timing ----------------------------------------------------------------

# run_best N OUT CMD...: runs CMD N times (stdout to OUT), prints the fastest
# wall time in seconds.
run_best() {
  local n=$1 out=$2 best="" t0 t1 dt
  shift 2
  for ((i = 0; i < n; i++)); do
    t0=$(date +%s.%N)
    "$@" >"$out" 2>"$WORK/stderr" || { note "failed: $*"; cat "$WORK/stderr" >&2; return 1; }
    t1=$(date +%s.%N)
    dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    if [[ -z $best ]] || awk -v a="$dt" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$dt; fi
  done
  printf '%s\n' "$best"
}

declare -a NAMES SECS COUNTS
measure() { # measure NAME RUNS CMD...: appends a row
  local name=$1 runs=$2 s
  shift 2
  note "timing $name..."
  if s=$(run_best "$runs" "$WORK/out" "$@"); then
    NAMES+=("$name")
    SECS+=("$s")
    COUNTS+=("$(head -c 200 "$WORK/out" | tr -d '\n')")
  fi
}

PY_COUNT='import json, sys
t = 0
for line in open(sys.argv[1], "rb"):
    r = json.loads(line)
    t += r["prompt_tokens"] + r["completion_tokens"]
print(t)'

note "warming the page cache with $DATA ($MB MB)..."
cat "$DATA" >/dev/null

wc_lines() { wc -l <"$DATA"; }
measure "wc -l" "$RUNS" wc_lines
[[ -x bin/tokstat ]] && measure "tokstat --total" "$RUNS" bin/tokstat --total "$DATA"
budget_cut() { bin/budget-cut --tokens 1000G "$DATA" >/dev/null 2>"$WORK/bc.stderr" && sed -E 's/.*, ([0-9,]+) total tokens.*/\1/; s/,//g' "$WORK/bc.stderr"; }
measure "budget-cut" "$RUNS" budget_cut
measure "python3 json" 1 python3 -c "$PY_COUNT" "$DATA"
command -v jq >/dev/null && measure "jq" 1 jq -n 'reduce inputs as $r (0; . + $r.prompt_tokens + $r.completion_tokens)' "$DATA"

# --- dedupe-resume: loading the done ids ----------------------------------

DD_LINE=""
if [[ -x bin/dedupe-resume && -n $TIME ]]; then
  if [[ ! -s $DONE ]]; then
    note "generating $DONE ($NIDS ids)..."
    go run ./tests/bench/genrecords -ids "$NIDS" -o "$DONE.tmp" && mv "$DONE.tmp" "$DONE"
  fi
  : >"$WORK/empty.jsonl"
  cat "$DONE" >/dev/null
  # load_done FILE: "seconds peak-KB" for loading FILE with nothing on stdin
  load_done() {
    $TIME -f '%e %M' -o "$WORK/time" bin/dedupe-resume -q --done "$1" </dev/null >/dev/null 2>"$WORK/dd.stderr" ||
      { note "dedupe-resume failed:"; cat "$WORK/dd.stderr" >&2; return 1; }
    cat "$WORK/time"
  }
  note "timing dedupe-resume --done with $NIDS ids..."
  if read -r base_s base_kb < <(load_done "$WORK/empty.jsonl") && read -r s kb < <(load_done "$DONE"); then
    DD_LINE=$(awk -v s="$s" -v kb="$kb" -v bkb="$base_kb" -v n="$NIDS" -v f="$DONE" -v mb="$(($(stat -c %s "$DONE") / 1000000))" 'BEGIN {
      printf "dedupe-resume --done %s (%d ids of 30 characters, %d MB):\n", f, n, mb
      printf "  load time %.2f s, peak RSS %.0f MB (%.0f MB with no ids): %.1f bytes per id\n", s, kb / 1024, bkb / 1024, (kb - bkb) * 1024 / n
      printf "  targets: <= 10 s, <= 64 bytes per id"
    }')
  fi
elif [[ ! -x bin/dedupe-resume ]]; then
  DD_LINE="dedupe-resume: bin/dedupe-resume does not exist yet; skipped"
fi

# --- report ----------------------------------------------------------------

sec_of() { # sec_of NAME: the row's seconds, or nothing
  for i in "${!NAMES[@]}"; do [[ ${NAMES[$i]} == "$1" ]] && { echo "${SECS[$i]}"; return; }; done
}
PY=$(sec_of "python3 json")
JQ=$(sec_of "jq")

printf '\nToken count of %s (%s bytes, %s records), best of %s for wc, tokstat and budget-cut:\n\n' \
  "$DATA" "$BYTES" "$(wc -l <"$DATA")" "$RUNS"
printf '%-18s %9s %10s %13s %13s  %s\n' tool seconds MB/s "vs python" "vs jq" "result"
for i in "${!NAMES[@]}"; do
  s=${SECS[$i]}
  awk -v n="${NAMES[$i]}" -v s="$s" -v b="$BYTES" -v py="$PY" -v jq="$JQ" -v r="${COUNTS[$i]}" 'BEGIN {
    mbs = (s > 0) ? b / 1e6 / s : 0
    vpy = (py != "" && s > 0) ? sprintf("%.1fx", py / s) : "-"
    vjq = (jq != "" && s > 0) ? sprintf("%.1fx", jq / s) : "-"
    printf "%-18s %9.3f %10.0f %13s %13s  %s\n", n, s, mbs, vpy, vjq, r
  }'
done
printf '\ntargets: budget-cut and tokstat >= 1000 MB/s, >= 20x python, >= 50x jq\n'
printf 'load average when done: %s (other work on this machine slows every row)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $DD_LINE ]]; then
  printf '\n%s\n' "$DD_LINE"
fi
