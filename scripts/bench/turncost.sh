#!/usr/bin/env bash
# What rendering and tokenizing each turn's prompt costs generate --turns all:
# its share of generate's CPU, from a CPU profile of generate (built with one,
# scripts/bench/genprof) regenerating conversations of 20 turns against a
# zero-latency llm-sim on a token-id backend (sglang, Kimi-K2.5's template and
# tokenizer, llm-sim --answer-format kimi-k2.5). The share is the profile's
# time under the step that builds a turn's prompt (the conversation so far,
# its new messages' JSON decoded, rendered by the template over the last
# prompt, whose loops write again what they wrote for the messages the last
# prompt held, then encoded from where it parts from the last prompt) over
# all of generate's samples; the garbage collection its allocations cause is
# not counted in it. Its columns: JSON (decoding the new messages, part of
# render), render, encode. Then BenchmarkTurnPrompts: CPU per
# conversation, encoding each prompt from the last one's and encoding it whole,
# and how the step splits into rendering and encoding (the first prompt's and
# the later turns').
# Run from anywhere: bash scripts/bench/turncost.sh
# Settings (environment): BENCH_TURNCOST_CONVS (default 256),
# BENCH_TURNCOST_TURNS (user turns per conversation, default 20),
# BENCH_TURNCOST_CONCURRENCY (default 32), BENCH_TURNCOST_RUNS (profiled runs,
# the median share is kept; default 5: a run of ~2.5 s of CPU holds ~250
# profile samples, so encode's share alone, ~15 samples, swung 2.5-6.2%
# across three runs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CONVS="${BENCH_TURNCOST_CONVS:-256}"
TURNS="${BENCH_TURNCOST_TURNS:-20}"
CONC="${BENCH_TURNCOST_CONCURRENCY:-32}"
RUNS="${BENCH_TURNCOST_RUNS:-5}"
# shellcheck source=scripts/bench/sim.sh
source scripts/bench/sim.sh # WORK, removed on exit; note; chats
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin BENCH_TURNCOST_CONVS BENCH_TURNCOST_TURNS BENCH_TURNCOST_CONCURRENCY BENCH_TURNCOST_RUNS

note "building tokenize-prompts, llm-sim and generate with a CPU profile (genprof) from the working tree..."
go build -o bin/ ./cmd/tokenize-prompts ./cmd/llm-sim
go build -o "$WORK/genprof" ./scripts/bench/genprof

chats "$CONVS" "$TURNS" 60 > "$WORK/source.jsonl"
bin/tokenize-prompts --tokenizer builtin:kimi-k2.5 --turns all "$WORK/source.jsonl" > "$WORK/convs.jsonl" 2>/dev/null

note "--turns all: $CONVS conversations of $TURNS turns, concurrency $CONC, zero-latency llm-sim, $RUNS runs..."
bin/llm-sim --url-file "$WORK/url" --answer-format kimi-k2.5 --lengths lognormal:120,0.5,600 --seed 7 2>/dev/null &
PIDS+=($!)
for _ in $(seq 600); do [[ -s "$WORK/url" ]] && break; sleep 0.05; done
# cum TOP NAME: the milliseconds under the function NAME (its own and its
# callees') in the pprof -top output TOP.
cum() { awk -v f="$2" '{ sub(/ \(inline\)$/, "") } $NF == f { sub(/ms$/, "", $4); print $4 + 0; found = 1; exit } END { if (!found) print 0 }' "$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "-" }'; }
lib=github.com/synthpipe/synthpipe/lib
printf '\n%-4s %6s %9s %9s %9s %9s %7s\n' "run" "turns" "CPU ms" "prompt" "JSON" "render" "encode"
for ((run = 1; run <= RUNS; run++)); do
  "$WORK/genprof" "$WORK/cpu.prof" --backend sglang --max-tokens 1024 --concurrency "$CONC" --progress-interval 0 \
    --url "$(cat "$WORK/url")" --turns all --tokenizer builtin:kimi-k2.5 "$WORK/convs.jsonl" > "$WORK/out.jsonl" 2> "$WORK/gen.err"
  go tool pprof -unit=ms -top -cum -nodecount=100000 "$WORK/genprof" "$WORK/cpu.prof" > "$WORK/top.txt" 2>/dev/null
  total="$(sed -n 's/.*Total samples = \([0-9.]*\)ms.*/\1/p' "$WORK/top.txt")"
  prepare="$(cum "$WORK/top.txt" "$lib/engine.(*turnRunner).prepare")"
  printf '%-4s %6s %9s %8s%% %8s%% %8s%% %6s%%\n' "$run" "$(grep -o '"finish_reason"' "$WORK/out.jsonl" | wc -l)" "$total" \
    "$(pct "$prepare" "$total")" "$(pct "$(cum "$WORK/top.txt" "$lib/chattemplate.(*MessageCache).decodeList")" "$total")" \
    "$(pct "$(cum "$WORK/top.txt" "$lib/chattemplate.(*Template).RenderOver")" "$total")" \
    "$(pct "$(cum "$WORK/top.txt" "$lib/tokenizer.(*Tokenizer).extendShared")" "$total")"
  echo "$(pct "$prepare" "$total") $prepare $total" >> "$WORK/shares"
done
read -r share prepare total <<< "$(sort -g "$WORK/shares" | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }')"
printf 'prompt: the whole step (render, encode); the median run: %s%% (%s of %s ms); load average: %s\n' \
  "$share" "$prepare" "$total" "$(bench_load)"

note "BenchmarkTurnPrompts (one op: a conversation of 20 turns)..."
go test ./lib/conversation/ -run '^$' -bench 'TurnPrompts/(incremental|incremental-render|incremental-encode|first-encode|whole|walk)$' \
  -benchmem -count 1 | tee "$WORK/bench.txt" | grep '^Benchmark'
nsop() { awk -v b="$1" '$1 ~ "/" b "-[0-9]+$" { print $3 }' "$WORK/bench.txt"; }
inc="$(nsop incremental)"
whole="$(nsop whole)"
# Each way's time less the walk's (adding the answers to the conversation),
# which every way spends: what the prompt step splits into, and the part of
# it no template engine can take away, encoding the text each turn adds.
awk -v inc="$inc" -v r="$(nsop incremental-render)" -v e="$(nsop incremental-encode)" \
  -v f="$(nsop first-encode)" -v w="$(nsop walk)" 'BEGIN {
  step = inc - w
  printf "a conversation'"'"'s prompt step, %.0f us: rendering %.0f us (%.0f%%), encoding %.0f us (%.0f%%),", step / 1e3, (r - w) / 1e3, 100 * (r - w) / step, (e - w) / 1e3, 100 * (e - w) / step
  printf " of which the first prompt %.0f us and the text the later turns add %.0f us (%.0f%% of the step)\n", (f - w) / 1e3, (e - f) / 1e3, 100 * (e - f) / step
}'

bench_line turncost/prompt-share "\`generate --turns all\`, $CONVS conversations of $TURNS turns: rendering and tokenizing each turn's prompt, share of generate's CPU (median of $RUNS runs)" \
  "$share% ($prepare ms)" "generate's CPU $total ms" "$share% of generate's CPU" "< 5%"
bench_line turncost/turn-prompts "a 20-turn conversation's prompts rendered and encoded (BenchmarkTurnPrompts), each from the last one's ids" \
  "$(awk -v n="$inc" 'BEGIN { printf "%.2f ms", n / 1e6 }')" "encoded whole $(awk -v n="$whole" 'BEGIN { printf "%.2f ms", n / 1e6 }')" \
  "$(bench_ratio "$whole" "$inc")x less time than encoding each prompt whole"
