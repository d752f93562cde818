#!/usr/bin/env bash
# Rerun: the demo's pipeline for one dataset run again when everything is
# already done,
#   tokenize-prompts | dedupe-resume --done out | generate --already out | budget-cut -o out --append
# must finish in well under a second. It runs the bundled chat prompts once
# against llm-sim (to a token budget, as make demo does), then the same
# command RERUN_RUNS times with nothing left to do, and prints each stage's
# wall and CPU seconds (GNU time) and the whole rerun's wall time. The
# tokenizer's load is most of it: tiktoken merges are looked up by
# concatenation until a run has encoded enough to build the table
# (lib/tokenizer/bpe.go); generate contacts no server before it has a
# request to send.
# Its anchor, on a bench line (scripts/bench/anchor.sh): the first run, which
# did the work, beside the median rerun.
# Run from anywhere: bash scripts/bench/rerun.sh
# Settings (environment): RERUN_RUNS (default 5), RERUN_DATASET (chat).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
RUNS="${RERUN_RUNS:-5}"
DATASET="${RERUN_DATASET:-chat}"
# shellcheck source=scripts/bench/sim.sh
source scripts/bench/sim.sh # WORK, removed on exit with the processes in PIDS; note
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin RERUN_RUNS RERUN_DATASET

note "building the pipeline's tools and llm-sim from the working tree..."
mkdir -p bin
go build -o bin/ ./cmd/tokenize-prompts ./cmd/dedupe-resume ./cmd/generate ./cmd/budget-cut ./cmd/llm-sim
TIME=/usr/bin/time # GNU time
[[ -x $TIME ]] || { note "GNU time (/usr/bin/time) is needed: apt-get install time"; exit 1; }

bin/llm-sim --url-file "$WORK/url" --max-total-tokens 40000 --lengths lognormal:300,0.7,1500 --seed 7 2>"$WORK/llm-sim.stderr" &
PIDS+=($!)
for _ in $(seq 100); do
  [[ -s $WORK/url ]] && break
  sleep 0.1
done
[[ -s $WORK/url ]] || { note "llm-sim did not start:"; cat "$WORK/llm-sim.stderr" >&2; exit 1; }
URL="$(head -n1 "$WORK/url")"
OUT="$WORK/out.jsonl"
PROMPTS="lib/bundle/prompts/$DATASET.jsonl.zst"

# pipeline TAG: the demo's pipeline, each stage under GNU time into
# $WORK/TAG.STAGE.time ("wall cpu").
pipeline() {
  local t="$WORK/$1"
  $TIME -f '%e %U %S' -o "$t.tokenize-prompts.time" bin/tokenize-prompts -q --tokenizer builtin:kimi-k2.5 --date 2026-01-01 "$PROMPTS" |
    $TIME -f '%e %U %S' -o "$t.dedupe-resume.time" bin/dedupe-resume -q --done "$OUT" |
    $TIME -f '%e %U %S' -o "$t.generate.time" bin/generate -q --backend sglang --url "$URL" --max-tokens 1500 --token-budget 40k --already "$OUT" |
    $TIME -f '%e %U %S' -o "$t.budget-cut.time" bin/budget-cut -q --tokens 40k -o "$OUT" --append
}

note "first run: $DATASET to a budget of 40k tokens"
start=$(date +%s.%N)
pipeline first 2>"$WORK/first.stderr"
FIRST_WALL=$(echo "$(date +%s.%N) - $start" | bc)
note "$(wc -l <"$OUT") records written; now $RUNS reruns with nothing to do"
printf '%-4s %-10s %s\n' run stage 'wall s / cpu s (user + sys)'
for i in $(seq "$RUNS"); do
  start=$(date +%s.%N)
  pipeline "rerun$i" 2>>"$WORK/rerun.stderr"
  end=$(date +%s.%N)
  for stage in tokenize-prompts dedupe-resume generate budget-cut; do
    read -r wall user sys <"$WORK/rerun$i.$stage.time"
    printf '%-4s %-16s %5.2f / %4.2f\n' "$i" "$stage" "$wall" "$(echo "$user + $sys" | bc)"
  done
  printf '%-4s %-16s %5.2f\n' "$i" "whole rerun" "$(echo "$end - $start" | bc)"
  echo "$end - $start" | bc >>"$WORK/walls"
  read -r _ user sys <"$WORK/rerun$i.tokenize-prompts.time"
  echo "$user + $sys" | bc >>"$WORK/tokcpu"
done
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
RERUN_WALL=$(bench_median <"$WORK/walls")
bench_line rerun/all "the demo's rerun of $DATASET with everything done (tokenize-prompts, dedupe-resume, generate, budget-cut; 40k budget), median of $RUNS" \
  "$(printf '%.2f s wall; tokenize-prompts %.2f CPU-s (the tokenizer'"'"'s load, most of it)' "$RERUN_WALL" "$(bench_median <"$WORK/tokcpu")")" \
  "$(printf 'the first run, %s records written: %.2f s wall' "$(wc -l <"$OUT")" "$FIRST_WALL")" \
  "$(bench_ratio "$RERUN_WALL" "$FIRST_WALL")x the first run's wall time" "well under a second"
