#!/usr/bin/env bash
# estimate against the run that follows it, on this machine, with llm-sim as
# the SGLang server (a KV cache of 159,277 tokens, decode steps of 2 ms plus
# 10 us per running request, answers lognormal around 300 tokens, at most
# 1,500) and a second llm-sim as the OpenRouter-style API that bills:
#   1. a done file 10% into a dataset: the first 10% of the records run,
#      estimate reads their answers and timings (--done) and predicts the
#      other 90%, which then run; the speed comes from the done file;
#   2. a cold start: a new dataset of the same size, estimate with
#      --lengths (the simulator's distribution as a user would write it)
#      and --rate (the median sglang:gen_throughput seen on /metrics while
#      run 1 went on), then the run.
# For each: predicted and actual wall time, total tokens, and the cost the
# API billed (usage.cost summed) against the predicted USD. The targets:
# time and tokens within 15%, cost within 5%.
# Each prediction is printed beside the run, its anchor, on a bench line
# (scripts/bench/anchor.sh).
# Run from anywhere: bash scripts/bench/estimate.sh
# Settings (environment): BENCH_EST_RECORDS (default 4000 per dataset).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
N="${BENCH_EST_RECORDS:-4000}"
source scripts/bench/sim.sh
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin BENCH_EST_RECORDS

note "building the tools from the working tree..."
go build -o bin/ ./cmd/generate ./cmd/llm-sim ./cmd/estimate
export PATH="$ROOT/bin:$PATH"

# records N SEED: tokenized records with prompts of 100-300 ids whose chat
# text llm-sim counts as the same number of tokens (4 bytes a token, with
# "user\n" and "\n" around the content).
records() {
  awk -v n="$1" -v seed="$2" 'BEGIN {
    srand(seed)
    for (i = 0; i < n; i++) {
      p = 100 + int(rand() * 200)
      ids = ""; for (k = 0; k < p; k++) ids = ids (k ? "," : "") int(1000 + rand() * 100000)
      c = ""; for (k = 0; k < 4 * p - 6; k++) c = c sprintf("%c", 97 + int(rand() * 26))
      printf "{\"id\":\"s%d-%05d\",\"dataset\":\"bench\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"input_ids\":[%s],\"prompt_tokens\":%d}\n", seed, i, c, ids, p
    }
  }'
}

SIM=(--seed 5 --lengths lognormal:300,0.5,1500 --prompt-price 0.6 --completion-price 2.5)
start_sim sglang "${SIM[@]}" --max-total-tokens 159277 --step-time 2ms --per-token-time 10us
start_sim router "${SIM[@]}"

# timed_run OUT IN BACKEND-ARGS...: runs generate, prints the wall seconds.
timed_run() {
  local out="$1" in="$2"; shift 2
  local t0; t0="$(now)"
  generate -q --max-tokens 1500 "$@" "$in" > "$out"
  awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}
sum() { jq -s "map($1) | add" "$2"; }

# watch_metrics FILE: samples gen_throughput while the server is busy.
watch_metrics() {
  while :; do
    curl -s -H 'Accept: text/plain' "$URL_sglang/metrics" |
      awk '/^sglang:num_running_reqs/ { r = $2 } /^sglang:gen_throughput/ { g = $2 } END { if (r > 0 && g > 0) print g }'
    sleep 1
  done >> "$1"
}

declare -A PRED ACT
# check NAME ESTIMATE-JSON SGLANG-OUT SECONDS ROUTER-OUT
check() {
  local name="$1" est="$2" out="$3" secs="$4" billed="$5"
  PRED[$name.time]="$(jq '.total.backends[0].seconds' "$est")"
  PRED[$name.tokens]="$(jq '.total.total_tokens.mean' "$est")"
  PRED[$name.usd]="$(jq '.total.backends[1].usd' "$est")"
  ACT[$name.time]="$secs"
  ACT[$name.tokens]="$(sum '.prompt_tokens + .completion_tokens' "$out")"
  ACT[$name.usd]="$(sum '.usage.cost' "$billed")"
}

# --- 1. a done file 10% into a dataset -----------------------------------------
note "1. done file 10% in: $N records, the first $((N / 10)) run first"
records "$N" 1 > "$WORK/a.jsonl"
head -n $((N / 10)) "$WORK/a.jsonl" > "$WORK/a-head.jsonl"
tail -n +$((N / 10 + 1)) "$WORK/a.jsonl" > "$WORK/a-rest.jsonl"
timed_run "$WORK/a-done.jsonl" "$WORK/a-head.jsonl" --url "$URL_sglang" > /dev/null
estimate --json -q --done "$WORK/a-done.jsonl" --url "$URL_sglang" --model sim/llm-sim-8b \
  --openrouter-url "$URL_router/api/v1" "$WORK/a-rest.jsonl" > "$WORK/a-est.json"
note "   estimate: $(jq -r '.backends[0].rate_source' "$WORK/a-est.json")"
watch_metrics "$WORK/metrics.txt" & PIDS+=($!)
SECS="$(timed_run "$WORK/a-out.jsonl" "$WORK/a-rest.jsonl" --url "$URL_sglang")"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
generate -q --backend openai --url "$URL_router/api/v1" --model sim/llm-sim-8b --max-tokens 1500 \
  "$WORK/a-rest.jsonl" > "$WORK/a-billed.jsonl"
check done "$WORK/a-est.json" "$WORK/a-out.jsonl" "$SECS" "$WORK/a-billed.jsonl"

# --- 2. a cold start with --lengths ---------------------------------------------
RATE="$(sort -g "$WORK/metrics.txt" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
note "2. cold start: $N new records, --lengths median=300,sigma=0.5,max=1500, --rate $RATE (the median of /metrics during run 1)"
records "$N" 2 > "$WORK/b.jsonl"
estimate --json -q --lengths median=300,sigma=0.5,max=1500 --url "$URL_sglang" --rate "$URL_sglang=$RATE" \
  --model sim/llm-sim-8b --openrouter-url "$URL_router/api/v1" "$WORK/b.jsonl" > "$WORK/b-est.json"
SECS="$(timed_run "$WORK/b-out.jsonl" "$WORK/b.jsonl" --url "$URL_sglang")"
generate -q --backend openai --url "$URL_router/api/v1" --model sim/llm-sim-8b --max-tokens 1500 \
  "$WORK/b.jsonl" > "$WORK/b-billed.jsonl"
check cold "$WORK/b-est.json" "$WORK/b-out.jsonl" "$SECS" "$WORK/b-billed.jsonl"

# --- table -------------------------------------------------------------------------
printf '\n%-34s %14s %14s %9s %s\n' "measure" "predicted" "actual" "off" "target"
for name in done cold; do
  label="done file 10% in"; [[ $name == cold ]] && label="cold start, --lengths"
  printf '%-34s %13.1fs %13.1fs %9s %s\n' "$label: time" "${PRED[$name.time]}" "${ACT[$name.time]}" \
    "$(off "${PRED[$name.time]}" "${ACT[$name.time]}")" "+-15%"
  printf '%-34s %14.0f %14.0f %9s %s\n' "$label: tokens" "${PRED[$name.tokens]}" "${ACT[$name.tokens]}" \
    "$(off "${PRED[$name.tokens]}" "${ACT[$name.tokens]}")" "+-15%"
  printf '%-34s %13.4f$ %13.4f$ %9s %s\n' "$label: cost (billed)" "${PRED[$name.usd]}" "${ACT[$name.usd]}" \
    "$(off "${PRED[$name.usd]}" "${ACT[$name.usd]}")" "+-5%"
done
printf '\n'
for name in done cold; do
  label="\`estimate\` against the run that follows, $((N - N / 10)) records after a $((N / 10))-record done file"
  [[ $name == cold ]] && label="\`estimate\` from a cold start, $N records, \`--lengths\` and a \`/metrics\` rate"
  bench_line "estimate/$name" "$label" \
    "$(printf 'predicted %.1f s, %.0f tokens, %.4f USD' "${PRED[$name.time]}" "${PRED[$name.tokens]}" "${PRED[$name.usd]}")" \
    "$(printf 'the run %.1f s, %.0f tokens, %.4f USD billed' "${ACT[$name.time]}" "${ACT[$name.tokens]}" "${ACT[$name.usd]}")" \
    "time $(off "${PRED[$name.time]}" "${ACT[$name.time]}"), tokens $(off "${PRED[$name.tokens]}" "${ACT[$name.tokens]}"), cost $(off "${PRED[$name.usd]}" "${ACT[$name.usd]}")" \
    "15%, 15%, 5%"
done
