#!/usr/bin/env bash
# Conversations regenerated turn by turn: generate --turns all (each
# conversation's next turn sent as soon as its answer is in) against the
# naive way (one pass per turn number over all conversations: turn 1 of
# every conversation, then turn 2 of every conversation...), on the same
# conversations against the same llm-sim, whose prefix cache is too small to
# hold every conversation (--prefix-cache, least recently used evicted) and
# whose prefill costs time per token not found in it. Both send the same
# prompts, rendered with Kimi-K2.5's template on the model's own answers
# (llm-sim --answer-format kimi-k2.5), at the same fixed concurrency. Per
# way: wall time, answer tokens per second, the prompt tokens sent, what the
# cache held of them (cache hit rate, from llm-sim's counters) and the
# tokens prefilled. The naive passes are timed without the time spent
# rendering their prompts (scripts/bench/turnpass), which favours them.
# Run from anywhere: bash scripts/bench/turns.sh
# Settings (environment): BENCH_TURNS_CONVS (default 128), BENCH_TURNS_TURNS
# (user turns per conversation, default 4), BENCH_TURNS_CACHE (prefix cache
# tokens, default 60000), BENCH_TURNS_CONCURRENCY (default 32).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CONVS="${BENCH_TURNS_CONVS:-128}"
TURNS="${BENCH_TURNS_TURNS:-4}"
CACHE="${BENCH_TURNS_CACHE:-60000}"
CONC="${BENCH_TURNS_CONCURRENCY:-32}"
# shellcheck source=scripts/bench/sim.sh
source scripts/bench/sim.sh # WORK, removed on exit; note
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin BENCH_TURNS_CONVS BENCH_TURNS_TURNS BENCH_TURNS_CACHE BENCH_TURNS_CONCURRENCY

note "building generate, tokenize-prompts, llm-sim and turnpass from the working tree..."
go build -o bin/ ./cmd/generate ./cmd/tokenize-prompts ./cmd/llm-sim
go build -o "$WORK/turnpass" ./scripts/bench/turnpass
SIM_FLAGS=(--answer-format kimi-k2.5 --prefix-cache "$CACHE" --prefill-time-per-token 40us
  --step-time 2ms --per-token-time 20us --lengths lognormal:120,0.5,600 --seed 7 --stats)
GEN_FLAGS=(--backend sglang --max-tokens 1024 --concurrency "$CONC" --progress-interval 0)

chats "$CONVS" "$TURNS" > "$WORK/source.jsonl"
bin/tokenize-prompts --tokenizer builtin:kimi-k2.5 --turns all "$WORK/source.jsonl" > "$WORK/convs.jsonl" 2>/dev/null

# sim_start: a fresh llm-sim; sim_stop: its counters, as "prompt cached prefilled".
sim_start() {
  rm -f "$WORK/url"
  bin/llm-sim --url-file "$WORK/url" "${SIM_FLAGS[@]}" 2> "$WORK/sim.err" &
  SIMPID=$!
  PIDS+=("$SIMPID")
  for _ in $(seq 600); do [[ -s "$WORK/url" ]] && break; sleep 0.05; done
  URL="$(cat "$WORK/url")"
}
sim_stop() {
  kill "$SIMPID"; wait "$SIMPID" 2>/dev/null || true
  local stats; stats="$(grep '^{' "$WORK/sim.err" | tail -1)"
  field() { printf '%s' "$stats" | grep -oE "\"$1\":[0-9]+" | cut -d: -f2; }
  echo "$(field prompt_tokens) $(field cached_tokens) $(field prefilled_tokens)"
}
# answer_tokens FILE...: the completion tokens the outputs hold.
answer_tokens() {
  cat "$@" | awk 'match($0, /"completion_tokens":[0-9]+,"conversation_tokens"|^.*"completion_tokens":[0-9]+/) {
    s0 = substr($0, RSTART, RLENGTH); sub(/,"conversation_tokens"$/, "", s0); sub(/.*"completion_tokens":/, "", s0); s += s0 } END { print s + 0 }'
}
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", e - s }'; }

note "--turns all: $CONVS conversations of $TURNS turns, concurrency $CONC, prefix cache $CACHE tokens..."
sim_start
start="$(now)"
bin/generate "${GEN_FLAGS[@]}" --url "$URL" --turns all --tokenizer builtin:kimi-k2.5 "$WORK/convs.jsonl" > "$WORK/all.out" 2> "$WORK/all.err"
end="$(now)"
read -r a_prompt a_cached a_prefilled <<< "$(sim_stop)"
a_wall="$(secs "$start" "$end")"
a_tokens="$(answer_tokens "$WORK/all.out")"
a_turns="$(grep -o '"finish_reason"' "$WORK/all.out" | wc -l)"

note "one pass per turn number over every conversation..."
sim_start
n_wall=0
passes=()
for ((k = 1; k <= TURNS; k++)); do
  "$WORK/turnpass" -tokenizer builtin:kimi-k2.5 "$WORK/convs.jsonl" "${passes[@]}" > "$WORK/pass$k.in"
  [[ -s "$WORK/pass$k.in" ]] || break
  start="$(now)"
  bin/generate "${GEN_FLAGS[@]}" --url "$URL" "$WORK/pass$k.in" > "$WORK/pass$k.out" 2> "$WORK/pass$k.err"
  end="$(now)"
  n_wall="$(awk -v w="$n_wall" -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", w + e - s }')"
  passes+=("$WORK/pass$k.out")
done
read -r n_prompt n_cached n_prefilled <<< "$(sim_stop)"
n_tokens="$(answer_tokens "${passes[@]}")"
n_turns="$(cat "${passes[@]}" | wc -l)"

printf '\n%-28s %6s %7s %8s %10s %13s %9s %11s\n' "way" "turns" "wall s" "tok/s" "prompt tok" "cached tok" "hit rate" "prefilled"
row() { # row LABEL TURNS WALL TOKENS PROMPT CACHED PREFILLED
  printf '%-28s %6s %7s %8s %10s %13s %9s %11s\n' "$1" "$2" "$3" \
    "$(awk -v t="$4" -v w="$3" 'BEGIN { printf "%.0f", t / w }')" "$5" "$6" \
    "$(awk -v c="$6" -v p="$5" 'BEGIN { printf "%.1f%%", 100 * c / p }')" "$7"
}
row "--turns all (per conv.)" "$a_turns" "$a_wall" "$a_tokens" "$a_prompt" "$a_cached" "$a_prefilled"
row "one pass per turn (naive)" "$n_turns" "$n_wall" "$n_tokens" "$n_prompt" "$n_cached" "$n_prefilled"
printf '\n--turns all: %.2fx the answer tokens per second of the naive passes; load average: %s\n' \
  "$(awk -v a="$a_tokens" -v aw="$a_wall" -v n="$n_tokens" -v nw="$n_wall" 'BEGIN { print (a / aw) / (n / nw) }')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
a_rate="$(awk -v t="$a_tokens" -v w="$a_wall" 'BEGIN { printf "%.0f", t / w }')"
n_rate="$(awk -v t="$n_tokens" -v w="$n_wall" 'BEGIN { printf "%.0f", t / w }')"
bench_line turns/turns-all "generate --turns all, $CONVS conversations of $TURNS turns, answer tokens per second" \
  "$a_rate tok/s" "one pass per turn $n_rate tok/s" "$(bench_ratio "$a_rate" "$n_rate")x the naive passes' tokens per second"
