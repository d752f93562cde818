#!/usr/bin/env bash
# Record throughput: counting the tokens of a file of generate-shaped records
# (tests/bench/genrecords) with tokstat (--total, its default table and
# --json), budget-cut and dedupe-resume (every record passed, each checked in
# full), side by side with a Python json one-liner, jq, and wc -l (reading
# lines and nothing else: the speed of light, the anchor; each tool's time is
# also shown as a multiple of it, on a bench line of scripts/bench/anchor.sh's
# format). Then dedupe-resume loading a done file of 10M ids: time and peak
# memory per id. Run from anywhere:
#   bash scripts/bench/records.sh
# Settings (environment): BENCH_SIZE (default 200MB), BENCH_IDS (default
# 10000000), BENCH_RUNS (default 15: wc -l and our tools run that many times
# and the median is kept; each run takes well under a second, and at 3 runs
# the ratios swung from 1.5-2.2x to 1.1-1.4x between two runs of the script
# minutes apart, as the page cache's copy, which wc -l is, sped up or slowed
# down), BENCH_REF_RUNS (default 3: the same for python and jq, which take
# seconds a run), BENCH_DIR (default tests/bench/out, where generated
# data is kept and reused), BENCH_REFS (default "python jq": the slow
# references timed besides wc -l; "" for none), BENCH_IDS=0 (no done-file
# part).
# Tools run one at a time, so that two cores are enough.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin BENCH_SIZE BENCH_IDS BENCH_RUNS BENCH_REF_RUNS BENCH_REFS
SIZE="${BENCH_SIZE:-200MB}"
NIDS="${BENCH_IDS:-10000000}"
RUNS="${BENCH_RUNS:-15}"
REF_RUNS="${BENCH_REF_RUNS:-3}"
REFS=" ${BENCH_REFS-python jq} "
DIR="${BENCH_DIR:-$ROOT/tests/bench/out}"
mkdir -p "$DIR" bin
DATA="$DIR/records-$SIZE.jsonl"
DONE="$DIR/done-$NIDS-ids.jsonl"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

note() { printf '%s\n' "$*" >&2; }

# --- what to measure -------------------------------------------------------

note "building budget-cut, tokstat and dedupe-resume from the working tree..."
# with make build's tags: the binaries timed are the ones it builds (without
# urfave_cli_no_docs each run would also pay the start-up of a Markdown
# renderer no tool calls)
for tool in budget-cut tokstat dedupe-resume; do
  go build -tags urfave_cli_no_docs -o "bin/$tool" "./cmd/$tool"
done
if ! command -v jq >/dev/null; then
  note "jq not found: installing it with apt-get"
  if ! { apt-get install -y -qq jq >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq jq >/dev/null 2>&1; }; }; then
    note "could not install jq: its row is skipped"
  fi
fi
TIME=/usr/bin/time # GNU time: peak memory
if [[ ! -x $TIME ]]; then
  note "/usr/bin/time not found: installing it with apt-get"
  apt-get install -y -qq time >/dev/null 2>&1 || { note "could not install GNU time"; exit 1; }
fi

if [[ ! -s $DATA ]]; then
  note "generating $DATA ($SIZE)..."
  go run ./tests/bench/genrecords -size "$SIZE" -o "$DATA.tmp" && mv "$DATA.tmp" "$DATA"
fi
BYTES=$(stat -c %s "$DATA")
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.0f", b / 1e6 }')

# --- timing ----------------------------------------------------------------
# Wall time is what a user waits for on a quiet machine; CPU time (user+sys)
# is what a tool costs, and stays meaningful when other work shares the cores.
# The references run on one core, so for them the two agree on a quiet
# machine; tokstat and budget-cut scan large files on every core, so their
# wall time is below their CPU time when the cores are free (and is what
# other work on the machine slows first).

declare -a NAMES WALLS CPUS RESULTS COUNTS
# measure NAME RUNS CMD...: appends a row; the result shown is the first
# number CMD printed.
measure() {
  local name=$1 runs=$2 wall cpu result
  shift 2
  note "timing $name..."
  : >"$WORK/out"
  if read -r wall cpu < <(bench_time "$runs" "$WORK/out" "$WORK/err" "$@"); then
    result=$(grep -o -m1 '[0-9][0-9,]*' "$WORK/out" | head -1)
    NAMES+=("$name")
    WALLS+=("$wall")
    CPUS+=("$cpu")
    RESULTS+=("${result//,/}")
    COUNTS+=("$runs")
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

measure "wc -l" "$RUNS" wc -l "$DATA"
measure "tokstat --total" "$RUNS" bin/tokstat --total "$DATA"
measure "tokstat" "$RUNS" bin/tokstat "$DATA"
measure "tokstat --json" "$RUNS" bin/tokstat --json "$DATA"
# its records go to /dev/null and the count is read from its summary (the
# shell and sed around it cost a millisecond or two)
measure "budget-cut" "$RUNS" bash -c 'bin/budget-cut --tokens 1000G "$1" 2>&1 >/dev/null | sed -E "s/.*, ([0-9,]+) total tokens.*/\1/"' _ "$DATA"
# dedupe-resume passing every record of the file (its done file is empty):
# the same per-record checks, and the id of each kept to find duplicates
: >"$WORK/none.jsonl"
# (its records go to /dev/null, the count from its summary, as for budget-cut)
measure "dedupe-resume" "$RUNS" bash -c 'bin/dedupe-resume --done "$2" "$1" 2>&1 >/dev/null | sed -E "s/.*: ([0-9]+) to do.*/\1/"' _ "$DATA" "$WORK/none.jsonl"
if [[ $REFS == *" python "* ]]; then
  measure "python3 json" "$REF_RUNS" python3 -c "$PY_COUNT" "$DATA"
fi
if [[ $REFS == *" jq "* ]] && command -v jq >/dev/null; then
  measure "jq" "$REF_RUNS" jq -n 'reduce inputs as $r (0; . + $r.prompt_tokens + $r.completion_tokens)' "$DATA"
fi

# --- dedupe-resume: loading the done ids ----------------------------------

DD_LINE=""
if ((NIDS == 0)); then
  DD_LINE=""
elif [[ -x bin/dedupe-resume ]]; then
  if [[ ! -s $DONE ]]; then
    note "generating $DONE ($NIDS ids)..."
    go run ./tests/bench/genrecords -ids "$NIDS" -o "$DONE.tmp" && mv "$DONE.tmp" "$DONE"
  fi
  : >"$WORK/empty.jsonl"
  cat "$DONE" >/dev/null
  # load_done FILE: "seconds peak-KB" for loading FILE with nothing on stdin
  load_done() {
    "$TIME" -f '%e %M' -o "$WORK/time" bin/dedupe-resume -q --done "$1" </dev/null >/dev/null 2>"$WORK/dd.stderr" ||
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
    bench_line records/dedupe-done "\`dedupe-resume --done\`, $NIDS done ids of 30 characters" \
      "$(awk -v s="$s" -v kb="$kb" -v bkb="$base_kb" -v n="$NIDS" 'BEGIN { printf "loads in %.2f s, %.1f bytes per id", s, (kb - bkb) * 1024 / n }')" \
      "$(printf 'its peak RSS with no ids: %.0f MB' "$(bench_ratio "$base_kb" 1024)")" "-" "<= 10 s, <= 64 bytes per id"
  fi
else
  DD_LINE="dedupe-resume: bin/dedupe-resume does not exist yet; skipped"
fi

# --- report ----------------------------------------------------------------

col_of() { # col_of NAME ARRAY: the row's value in that column, or nothing
  local -n col=$2
  for i in "${!NAMES[@]}"; do [[ ${NAMES[$i]} == "$1" ]] && { echo "${col[$i]}"; return; }; done
  return 0 # a row not timed (BENCH_REFS) is empty
}
PY_CPU=$(col_of "python3 json" CPUS)
JQ_CPU=$(col_of "jq" CPUS)
WC_CPU=$(col_of "wc -l" CPUS)
WC_WALL=$(col_of "wc -l" WALLS)
PY_WALL=$(col_of "python3 json" WALLS)
JQ_WALL=$(col_of "jq" WALLS)

printf '\nToken count of %s (%s bytes, %s records), median of %s runs (python and jq: %s);\n' \
  "$DATA" "$BYTES" "$(wc -l <"$DATA")" "$RUNS" "$REF_RUNS"
printf 'each tool'"'"'s time as a multiple of wc -l'"'"'s ("x wc", by wall and by CPU time),\n'
printf 'MB/s and the ratios to python and jq by wall and by CPU time (user+sys):\n\n'
printf '%-16s %8s %8s %7s %7s %10s %10s %10s %10s %8s %8s  %s\n' tool "wall s" "CPU s" "x wc" "x wcCPU" "MB/s wall" "MB/s CPU" "py wall" "py CPU" "jq wall" "jq CPU" "tokens (lines for wc)"
for i in "${!NAMES[@]}"; do
  awk -v n="${NAMES[$i]}" -v w="${WALLS[$i]}" -v c="${CPUS[$i]}" -v b="$BYTES" -v r="${RESULTS[$i]}" \
    -v wcw="$WC_WALL" -v wcc="$WC_CPU" -v pyw="$PY_WALL" -v pyc="$PY_CPU" -v jqw="$JQ_WALL" -v jqc="$JQ_CPU" '
    function rate(s) { return (s > 0) ? sprintf("%.0f", b / 1e6 / s) : "-" }
    function ratio(ref, s) { return (ref != "" && s > 0) ? sprintf("%.1fx", ref / s) : "-" }
    function times(ref, s) { return (ref != "" && ref > 0) ? sprintf("%.1fx", s / ref) : "-" }
    BEGIN { printf "%-16s %8.3f %8.3f %7s %7s %10s %10s %10s %10s %8s %8s  %s\n", n, w, c, times(wcw, w), times(wcc, c), rate(w), rate(c), ratio(pyw, w), ratio(pyc, c), ratio(jqw, w), ratio(jqc, c), r }'
done
printf '\ntargets: tokstat, budget-cut and dedupe-resume <= 2x the wall time of wc -l, >= 20x python, >= 50x jq\n'
printf 'load average at the start: %s, when done: %s (other work on this machine slows every row, wall time most)\n\n' "$BENCH_LOAD_START" "$(bench_load)"
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]}
  [[ $name == "wc -l" ]] && continue
  case $name in
    "tokstat --total") key=records/tokstat-total ;;
    "tokstat --json") key=records/tokstat-json ;;
    "python3 json") key=records/python ;;
    *) key=records/$name ;;
  esac
  target="-"
  [[ $name == tokstat* || $name == budget-cut || $name == dedupe-resume ]] && target="<= 2x"
  bench_line "$key" "\`$name\`, $MB MB of generate-shaped records, median of ${COUNTS[$i]}" \
    "$(printf '%.3f s wall, %.3f s CPU' "${WALLS[$i]}" "${CPUS[$i]}")" \
    "$(printf '`wc -l` %.3f s wall, %.3f s CPU' "$WC_WALL" "$WC_CPU")" \
    "$(bench_ratio "${WALLS[$i]}" "$WC_WALL")x \`wc -l\`'s wall time, $(bench_ratio "${CPUS[$i]}" "$WC_CPU")x its CPU" "$target"
done
if [[ -n $DD_LINE ]]; then
  printf '\n%s\n' "$DD_LINE"
fi
