#!/usr/bin/env bash
# The README's "Deciding what to run where", with the demo's data: estimate
# beside the runs that follow it.
#   - "local" is llm-sim with make demo's settings (a 40k-token KV cache,
#     answers lognormal around 300 tokens, steps of 2 ms + 5 us per running
#     request); "router" is llm-sim as an OpenRouter-style API (prices 0.6
#     and 2.5 USD per million tokens, a large cache, 500 us steps).
#   - The chat dataset runs locally up to its 40k budget, as make demo runs
#     it; 20 chat prompts go to the API as a trial, for its speed.
#   - estimate prices code, math and tools on both (prompts that are bare
#     token ids, which an API cannot take, are left out of both);
#   - then they run locally, and on the API, each with the demo's pipeline.
# Prints the estimate, then predicted and actual time, tokens and cost.
# The predictions beside the runs, their anchor, also on a bench line
# (scripts/bench/anchor.sh).
# Run from anywhere: bash scripts/bench/estimate-demo.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
source scripts/bench/sim.sh
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh

note "building the tools from the working tree..."
go build -o bin/ ./cmd/...
export PATH="$ROOT/bin:$PATH"

LENGTHS=(--lengths lognormal:300,0.7,1500)
start_sim local "${LENGTHS[@]}" --max-total-tokens 40000 --step-time 2ms --per-token-time 5us --seed 7
start_sim router "${LENGTHS[@]}" --model moonshotai/kimi-k2.5 --prompt-price 0.6 --completion-price 2.5 \
  --max-total-tokens 4000000 --max-running-requests 4096 --step-time 500us --seed 8
export OPENROUTER_API_KEY=sim # llm-sim asks for none; generate wants one for --backend openai

tokenize() { tokenize-prompts -q --tokenizer builtin:kimi-k2.5 --date 2026-01-01 "lib/bundle/prompts/$1.jsonl.zst"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# pipeline DATASET OUT BACKEND-ARGS...: the demo's pipeline for the records of DATASET in todo.jsonl
pipeline() {
  local d="$1" out="$2"; shift 2
  touch "$out"
  grep "\"dataset\":\"$d\"" "$WORK/todo.jsonl" |
    generate -q --max-tokens 1500 --token-budget 40k --already "$out" "$@" |
    budget-cut -q --tokens 40k -o "$out" --append
}

note "chat, locally, up to its budget; a trial of 20 chat prompts on the API"
touch "$WORK/chat.jsonl"
tokenize chat | generate -q --url "$URL_local" --max-tokens 1500 --token-budget 40k --already "$WORK/chat.jsonl" |
  budget-cut -q --tokens 40k -o "$WORK/chat.jsonl" --append
tokenize chat | head -20 |
  generate -q --backend openai --url "$URL_router/api/v1" --model moonshotai/kimi-k2.5 --max-tokens 1500 > "$WORK/trial.jsonl"
for d in code math tools; do tokenize "$d" | dedupe-resume -q --done "$WORK/$d.jsonl"; done |
  grep '"messages"' > "$WORK/todo.jsonl"

args=(--by dataset --done "$WORK/chat.jsonl" --done "$WORK/trial.jsonl" --budget 40k --max-tokens 1500
  --url "$URL_local" --model moonshotai/kimi-k2.5 --openrouter-url "$URL_router/api/v1" "$WORK/todo.jsonl")
estimate -q "${args[@]}" | sed "s#$URL_local#http://127.0.0.1:PORT#; s#$URL_router#http://127.0.0.1:PORT2#"
estimate -q --json "${args[@]}" > "$WORK/est.json"

note "code, math and tools locally, then on the API"
t0="$(now)"
for d in code math tools; do pipeline "$d" "$WORK/$d.jsonl" --url "$URL_local"; done
LOCAL_SECS="$(since "$t0")"
t0="$(now)"
for d in code math tools; do
  pipeline "$d" "$WORK/api-$d.jsonl" --backend openai --url "$URL_router/api/v1" --model moonshotai/kimi-k2.5
done
API_SECS="$(since "$t0")"
LOCAL_TOKENS="$(cat "$WORK"/{code,math,tools}.jsonl | jq -s 'map(.prompt_tokens + .completion_tokens) | add')"
BILLED="$(cat "$WORK"/api-{code,math,tools}.jsonl | jq -s 'map(.usage.cost) | add * 10000 | round / 10000')"

row() { printf '%-30s %12s %12s %8s\n' "$1" "$2" "$3" "$(off "$2" "$3")"; }
printf '\n%-30s %12s %12s %8s\n' "" "predicted" "actual" "off"
row "locally, seconds" "$(jq '.total.backends[0].seconds * 10 | round / 10' "$WORK/est.json")" "$LOCAL_SECS"
row "locally, tokens" "$(jq '.total.total_tokens.mean | round' "$WORK/est.json")" "$LOCAL_TOKENS"
row "on the API, seconds" "$(jq '.total.backends[1].seconds * 10 | round / 10' "$WORK/est.json")" "$API_SECS"
row "on the API, USD (billed)" "$(jq '.total.backends[1].usd * 10000 | round / 10000' "$WORK/est.json")" "$BILLED"
P_LS="$(jq '.total.backends[0].seconds * 10 | round / 10' "$WORK/est.json")"
P_LT="$(jq '.total.total_tokens.mean | round' "$WORK/est.json")"
P_AS="$(jq '.total.backends[1].seconds * 10 | round / 10' "$WORK/est.json")"
P_AU="$(jq '.total.backends[1].usd * 10000 | round / 10000' "$WORK/est.json")"
printf '\n'
bench_line estimate-demo/all "\`estimate\` with the demo's data, the rest of a job here or there" \
  "predicted: locally $P_LS s, $P_LT tokens; on the API $P_AS s, $P_AU USD" \
  "the runs: locally $LOCAL_SECS s, $LOCAL_TOKENS tokens; on the API $API_SECS s, $BILLED USD billed" \
  "local time $(off "$P_LS" "$LOCAL_SECS"), tokens $(off "$P_LT" "$LOCAL_TOKENS"); API time $(off "$P_AS" "$API_SECS"), cost $(off "$P_AU" "$BILLED")" \
  "15%, 15%, 5%"
