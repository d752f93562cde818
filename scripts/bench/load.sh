#!/usr/bin/env bash
# Load: the whole pipeline,
#   tokenize-prompts | dedupe-resume --done out | generate | budget-cut -o out --append
# pushes 10k, 30k and 100k prompts (the bundled samples, repeated under fresh
# ids) through llm-sim with zero latency, each stage under GNU time, and
# prints each stage's peak RSS per size. Memory must stay flat as the dataset
# grows, except dedupe-resume's, which holds the set of ids it has seen.
# Each stage's peak at the largest size is printed beside its peak at the
# smallest, its anchor, on a bench line (scripts/bench/anchor.sh).
# Run from anywhere: bash scripts/bench/load.sh
# Settings (environment): LOAD_SIZES (default "10000 30000 100000"),
# LOAD_MAX_TOKENS (default 64: answers are uniform in 1..that).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin LOAD_SIZES LOAD_MAX_TOKENS
SIZES="${LOAD_SIZES:-10000 30000 100000}"
MAXTOK="${LOAD_MAX_TOKENS:-64}"
STAGES=(tokenize-prompts dedupe-resume generate budget-cut)
WORK="$(mktemp -d)"
SIMPID=""
cleanup() {
  if [[ -n "$SIMPID" ]]; then
    kill "$SIMPID" 2>/dev/null || true
    wait "$SIMPID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
note() { printf '%s\n' "$*" >&2; }

note "building the pipeline's tools and llm-sim from the working tree..."
mkdir -p bin
go build -o bin/ ./cmd/tokenize-prompts ./cmd/dedupe-resume ./cmd/generate ./cmd/budget-cut ./cmd/llm-sim

TIME=/usr/bin/time # GNU time: %M is the peak resident set in KiB
if [[ ! -x $TIME ]]; then
  note "/usr/bin/time not found: installing Debian's time package"
  { apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq time >/dev/null 2>&1; }; } ||
    { note "could not install GNU time"; exit 1; }
fi

bin/llm-sim --url-file "$WORK/url" --lengths "uniform:1,$MAXTOK" 2>"$WORK/llm-sim.stderr" &
SIMPID=$!
for _ in $(seq 100); do
  [[ -s $WORK/url ]] && break
  sleep 0.1
done
[[ -s $WORK/url ]] || { note "llm-sim did not start:"; cat "$WORK/llm-sim.stderr" >&2; exit 1; }
URL="$(head -n1 "$WORK/url")"

# The bundled prompts, uncompressed once; each copy of them gets ids of its
# own (load_id, read by --id-path), so that no prompt is a duplicate.
if ! command -v zstd >/dev/null; then
  note "zstd not found: installing it with apt-get"
  { apt-get install -y -qq zstd >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq zstd >/dev/null 2>&1; }; } ||
    { note "could not install zstd"; exit 1; }
fi
SAMPLES="$WORK/samples.jsonl"
zstd -dcq lib/bundle/prompts/*.jsonl.zst >"$SAMPLES"

# prompts N FILE writes N prompts: the samples over and over, each line
# starting with its own load_id.
prompts() {
  awk -v n="$1" '{ line[NR] = $0 } END {
    for (i = 0; i < n; i++) {
      l = line[i % NR + 1]
      printf "{\"load_id\":\"p%d\",%s\n", i, substr(l, 2)
    }
  }' "$SAMPLES" >"$2"
}

declare -A RSS WALL
for n in $SIZES; do
  dir="$WORK/$n"
  mkdir -p "$dir"
  prompts "$n" "$dir/prompts.jsonl"
  note "pushing $n prompts through the pipeline..."
  start=$(date +%s.%N)
  $TIME -f %M -o "$dir/rss.tokenize-prompts" bin/tokenize-prompts -q --tokenizer builtin:kimi-k2.5 --id-path load_id "$dir/prompts.jsonl" |
    $TIME -f %M -o "$dir/rss.dedupe-resume" bin/dedupe-resume -q --done "$dir/out.jsonl" |
    $TIME -f %M -o "$dir/rss.generate" bin/generate -q --url "$URL" --max-tokens "$MAXTOK" --errors "$dir/errors.jsonl" |
    $TIME -f %M -o "$dir/rss.budget-cut" bin/budget-cut -q --tokens 1G -o "$dir/out.jsonl" --append
  end=$(date +%s.%N)
  WALL[$n]=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  got=$(wc -l <"$dir/out.jsonl")
  errs=$(wc -l <"$dir/errors.jsonl" 2>/dev/null || echo 0)
  if ((got + errs != n)); then
    note "$n prompts: $got records in the output and $errs errors: some were lost"
    exit 1
  fi
  for s in "${STAGES[@]}"; do
    RSS[$n,$s]=$(tail -n1 "$dir/rss.$s")
  done
  rm -f "$dir/prompts.jsonl" "$dir/out.jsonl"
done

printf '\npeak RSS (MiB) of each stage, the pipeline against llm-sim with zero latency\n'
printf '%-18s' "prompts"
for n in $SIZES; do printf '%10s' "$n"; done
printf '\n'
for s in "${STAGES[@]}"; do
  printf '%-18s' "$s"
  for n in $SIZES; do awk -v k="${RSS[$n,$s]}" 'BEGIN { printf "%10.1f", k / 1024 }'; done
  printf '\n'
done
printf '%-18s' "wall seconds"
for n in $SIZES; do printf '%10s' "${WALL[$n]}"; done
printf '\n\n'
read -r SMALL _ <<<"$SIZES"
LARGE=${SIZES##* }
for s in "${STAGES[@]}"; do
  target="flat (1x)"
  [[ $s == dedupe-resume ]] && target="grows with its id set only"
  bench_line "load/$s" "\`$s\` in the whole pipeline against a zero-latency llm-sim" \
    "$(awk -v k="${RSS[$LARGE,$s]}" -v n="$LARGE" 'BEGIN { printf "peak RSS %.1f MiB at %d records", k / 1024, n }')" \
    "$(awk -v k="${RSS[$SMALL,$s]}" -v n="$SMALL" 'BEGIN { printf "%.1f MiB at %d records", k / 1024, n }')" \
    "$(bench_ratio "${RSS[$LARGE,$s]}" "${RSS[$SMALL,$s]}")x" "$target"
done
