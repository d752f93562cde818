#!/usr/bin/env bash
# Several runs, one server: 1, 4 and 10 generates started at once against one
# llm-sim with a KV cache of 40,000 tokens, over the same prompts (dealt out
# among the runs as scripts/fanout.sh deals out datasets): useful tokens per
# second (answer tokens written, over the wall time of the whole batch) and
# what the server counted: retractions, the mean queue beside the mean
# running batch, the peak queue. Beside them, the same runs each sized as if
# the server were its own (--concurrency fixed at what one run alone chose),
# as generate did before runs shared a server. And the runs against a server
# without /metrics (llm-sim --no-metrics, as SGLang without
# --enable-metrics), which read its /v1/loads instead ("loads"), and against
# a server that reports no load at all (--load-reports none too, as an old
# SGLang or a proxy that passes on only requests), which with --shared (as scripts/fanout.sh runs them)
# share it by probes of its queue ("probes").
# Targets: 4 and 10 runs >= 90% of one run's tokens per second, with no more
# retractions and no longer a queue per running request than one run.
# Run from anywhere: bash scripts/bench/shared.sh
# Settings (environment): BENCH_SHARED_REQS (default 400), BENCH_SHARED_RUNS
# (default "1 4 10"), BENCH_SHARED_MODES (default "metrics loads probes alone").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
REQS="${BENCH_SHARED_REQS:-400}"
RUNS="${BENCH_SHARED_RUNS:-1 4 10}"
MODES=" ${BENCH_SHARED_MODES:-metrics loads probes alone} "
# shellcheck source=scripts/bench/sim.sh
source scripts/bench/sim.sh # WORK, removed on exit; note

note "building generate and llm-sim from the working tree..."
go build -o bin/ ./cmd/generate ./cmd/llm-sim
GEN="$ROOT/bin/generate"
SIM="$ROOT/bin/llm-sim"

# REQS sglang records, prompts of 200 to 399 ids.
awk -v n="$REQS" 'BEGIN {
  for (i = 0; i < n; i++) {
    len = 200 + (i * 37) % 200
    line = "{\"id\":\"s" i "\",\"input_ids\":["
    for (k = 0; k < len; k++) line = line (k ? "," : "") ((i * 7919 + k * 31) % 30000)
    print line "]}"
  }
}' > "$WORK/all.jsonl"

# batch N CONCURRENCY [SIM-FLAGS...]: N runs at once over all.jsonl split N
# ways against a fresh simulator; prints "wall tokens retractions
# queued_steps running_steps steps max_queued".
batch() {
  local n="$1" conc="$2" i pids=()
  shift 2
  rm -f "$WORK/url" "$WORK"/part* "$WORK"/out* "$WORK"/gen*
  "$SIM" --url-file "$WORK/url" --max-total-tokens 40000 --max-running-requests 256 \
    --lengths lognormal:500,0.6,2048 --step-time 2ms --per-token-time 20us --seed 3 --stats "$@" 2> "$WORK/sim.err" &
  local simpid=$!
  for _ in $(seq 200); do [[ -s "$WORK/url" ]] && break; sleep 0.05; done
  local url; url="$(cat "$WORK/url")"
  for ((i = 0; i < n; i++)); do
    awk -v n="$n" -v i="$i" 'NR % n == i' "$WORK/all.jsonl" > "$WORK/part$i.jsonl"
  done
  local start end
  start="$(date +%s.%N)"
  for ((i = 0; i < n; i++)); do
    "$GEN" --url "$url" --max-tokens 2048 --concurrency "$conc" --progress-interval 0 \
      "$WORK/part$i.jsonl" > "$WORK/out$i.jsonl" 2> "$WORK/gen$i.err" &
    pids+=($!)
  done
  wait "${pids[@]}"
  end="$(date +%s.%N)"
  kill "$simpid"; wait "$simpid" 2>/dev/null || true
  local tokens
  tokens="$(cat "$WORK"/out*.jsonl | awk 'match($0, /"completion_tokens":[0-9]+/) { s += substr($0, RSTART + 20, RLENGTH - 20) } END { print s + 0 }')"
  local stats; stats="$(grep '^{' "$WORK/sim.err" | tail -1)"
  field() { printf '%s' "$stats" | grep -oE "\"$1\":[0-9]+" | cut -d: -f2; }
  echo "$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }') $tokens $(field retractions) $(field queued_steps) $(field running_steps) $(field steps) $(field max_queued)"
}

printf '\n%-34s %7s %9s %8s %11s %9s %9s %8s\n' "runs at once" "wall s" "tok/s" "of one" "retractions" "queue" "running" "peak q"
ONE=""
row() { # row LABEL FIGURES...
  local label="$1" wall="$2" tokens="$3" retr="$4" qs="$5" rs="$6" steps="$7" peak="$8"
  local tps; tps="$(awk -v t="$tokens" -v w="$wall" 'BEGIN { printf "%.0f", t / w }')"
  [[ -z "$ONE" ]] && ONE="$tps"
  printf '%-34s %7s %9s %7s%% %11s %9s %9s %8s\n' "$label" "$wall" "$tps" \
    "$(awk -v a="$tps" -v b="$ONE" 'BEGIN { printf "%.1f", 100 * a / b }')" "$retr" \
    "$(awk -v q="$qs" -v s="$steps" 'BEGIN { printf "%.1f", q / s }')" \
    "$(awk -v r="$rs" -v s="$steps" 'BEGIN { printf "%.1f", r / s }')" "$peak"
}
ALONE=""
for n in $RUNS; do
  [[ "$MODES" == *" metrics "* ]] || break
  note "$n run(s) at once, sharing the server..."
  # shellcheck disable=SC2046
  row "$n, sharing (auto)" $(batch "$n" auto)
  if [[ -z "$ALONE" ]]; then
    ALONE="$(grep -oE 'concurrency [0-9]+: KV' "$WORK/gen0.err" | tail -1 | grep -oE '[0-9]+')"
  fi
done
for n in $RUNS; do
  [[ "$MODES" == *" loads "* ]] || break
  note "$n run(s) at once, sharing a server without /metrics by its /v1/loads..."
  # shellcheck disable=SC2046
  row "$n, no /metrics, /v1/loads" $(batch "$n" auto --no-metrics)
done
for n in $RUNS; do
  [[ "$MODES" == *" probes "* ]] || break
  note "$n run(s) at once, sharing a server that reports no load..."
  # shellcheck disable=SC2046
  row "$n, no load report (--shared)" $(SYNTHPIPE_SHARED=1 batch "$n" auto --no-metrics --load-reports none)
done
for n in $RUNS; do
  [[ "$MODES" == *" alone "* && -n "$ALONE" ]] || break
  [[ "$n" == 1 ]] && continue
  note "$n runs at once, each sized as if alone (--concurrency $ALONE)..."
  # shellcheck disable=SC2046
  row "$n, each as if alone (--conc $ALONE)" $(batch "$n" "$ALONE")
done
printf '\nqueue and running: the server'"'"'s mean over its decode steps; tok/s: answer tokens written / wall time of the batch\n'
printf 'targets: sharing runs >= 90%% of one run'"'"'s tok/s, no more retractions, no longer a queue per running request\n'
