#!/usr/bin/env bash
# Throughput of tokenize-prompts on the bundled sample prompts (every input
# shape, rendered with the bundled Kimi-K2.5 chat template and tokenizer),
# repeated to a few MB, with -j 1 and -j 2. Run from anywhere:
#   bash scripts/bench/tokenize-prompts.sh
# Settings (environment): BENCH_COPIES (default 192: about 21 MB, 76,800
# records; at 48 copies a run of -j 2 took half a second, and the rounds'
# speed-ups spread from 1.5x to 2.4x), BENCH_RUNS (default 9: rounds of -j 1
# and -j 2 back to back, see bench_jobs_rounds in anchor.sh; the table shows
# each side's fastest run, the speed-up is the median round's).
# Loading the tokenizer is timed on its own (an empty input) and taken out of
# the steady-state figures; the wall column keeps it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin BENCH_COPIES BENCH_RUNS
COPIES="${BENCH_COPIES:-192}"
RUNS="${BENCH_RUNS:-9}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

note() { printf '%s\n' "$*" >&2; }

note "building tokenize-prompts from the working tree..."
go build -o "$WORK/tokenize-prompts" ./cmd/tokenize-prompts
TOOL="$WORK/tokenize-prompts"

# The generator's output is the bundled prompts (a test checks it).
go run ./lib/bundle/gen > "$WORK/one.jsonl"
for ((i = 0; i < COPIES; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/prompts.jsonl"
BYTES=$(stat -c %s "$WORK/prompts.jsonl")
RECORDS=$(wc -l < "$WORK/prompts.jsonl")
: > "$WORK/empty.jsonl"

note "timing the tokenizer load (empty input)..."
read -r STARTUP STARTUP_CPU < <(bench_least "$RUNS" "$TOOL" -q --tokenizer builtin:kimi-k2.5 "$WORK/empty.jsonl")
PROMPT_TOKENS=$("$TOOL" --tokenizer builtin:kimi-k2.5 -j 2 "$WORK/prompts.jsonl" 2>&1 >/dev/null |
  sed -n 's/.*wrote [0-9,]* (\([0-9,]*\) prompt tokens.*/\1/p' | tr -d ,)

note "timing -j 1 and -j 2 ($RUNS rounds)..."
declare -A WALL CPU
read -r "WALL[1]" "CPU[1]" "WALL[2]" "CPU[2]" SPEEDUP SPREAD < <(bench_jobs_rounds "$RUNS" "$STARTUP" \
  "$TOOL" -q -j '{j}' --tokenizer builtin:kimi-k2.5 "$WORK/prompts.jsonl")

printf '\ntokenize-prompts on the bundled prompts x%d: %s records, %.1f MB, %s prompt tokens\n' \
  "$COPIES" "$RECORDS" "$(echo "$BYTES / 1000000" | bc -l)" "$PROMPT_TOKENS"
printf 'tokenizer load (builtin:kimi-k2.5): %.2f s; cores: %s; load average: %s\n\n' \
  "$STARTUP" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %8s %10s %12s %8s %12s %8s\n' jobs "wall s" "steady s" "records/s" "MB/s" "tokens/s" "cores"
for j in 1 2; do
  steady=$(bench_less_load "${WALL[$j]}" "$STARTUP")
  printf '%-6s %8.2f %10.2f %12.0f %8.2f %12.0f %8.2f\n' "-j $j" "${WALL[$j]}" "$steady" \
    "$(echo "$RECORDS / $steady" | bc -l)" "$(echo "$BYTES / 1000000 / $steady" | bc -l)" \
    "$(echo "$PROMPT_TOKENS / $steady" | bc -l)" \
    "$(echo "(${CPU[$j]} - $STARTUP_CPU) / $steady" | bc -l)"
done
echo "(each side's fastest of $RUNS runs; cores: CPU time over steady wall time; on a machine busy with other work it stays below -j)"
echo "-j 2 against -j 1: ${SPEEDUP}x, the median of $RUNS rounds of the two back to back (rounds: $SPREAD)"
s1=$(bench_less_load "${WALL[1]}" "$STARTUP") s2=$(bench_less_load "${WALL[2]}" "$STARTUP")
bench_line tokenize-prompts/j2 "tokenize-prompts, bundled prompts rendered (Kimi-K2.5), -j 2 against -j 1" \
  "-j 2 $(printf '%.2f' "$s2") s steady wall" "-j 1 $(printf '%.2f' "$s1") s steady wall" \
  "${SPEEDUP}x -j 1's speed (median of $RUNS rounds; $SPREAD)" ">= 1.8x idle"
