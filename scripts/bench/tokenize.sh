#!/usr/bin/env bash
# Encoding speed of lib/tokenizer per family, side by side with the reference
# implementations (npm tokenizers@0.23.2 and tiktoken@1.0.22) when npm can
# install them. Run from the repository root:
#   scripts/bench/tokenize.sh [seconds per measurement, default 3]
# Single core for both sides (GOMAXPROCS=1; Node runs the encoders on one thread).
set -euo pipefail

SECONDS_PER_RUN="${1:-3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTDATA="$ROOT/lib/tokenizer/testdata"
FAMILIES=(qwen3 deepseek_v3 llama3_1 gptoss kimi_k2 kimi_k25)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "measuring lib/tokenizer (go test -bench, GOMAXPROCS=1)..." >&2
(cd "$ROOT" && GOMAXPROCS=1 go test -run '^$' -bench '^BenchmarkEncode(ColdCache)?$' -benchtime "${SECONDS_PER_RUN}s" ./lib/tokenizer/) \
  | tee "$WORK/go.txt" >&2
# BenchmarkEncode keeps the piece cache warm across passes (as HF's own
# cache is in the reference runs); BenchmarkEncodeColdCache empties it per pass.
# Both report MB/s of wall time and cpu-MB/s of process CPU time; a shared
# machine slows the first far more than the second, so ratios use CPU time.
declare -A OURS OURS_CPU COLD COLD_CPU
while read -r name _ _ _ mbps _ cpumbps _; do
  fam="${name#*/}"
  fam="${fam%-*}"
  case "$name" in
    BenchmarkEncodeColdCache/*) COLD[$fam]="$mbps"; COLD_CPU[$fam]="$cpumbps" ;;
    *) OURS[$fam]="$mbps"; OURS_CPU[$fam]="$cpumbps" ;;
  esac
done < <(grep -E '^BenchmarkEncode(ColdCache)?/' "$WORK/go.txt")

declare -A THEIRS THEIRS_CPU THEIR_LIB
refs_ok=false
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node/npm not found: printing lib/tokenizer alone" >&2
elif ! command -v zstd >/dev/null; then
  echo "zstd not found (needed to unpack the test data for node): printing lib/tokenizer alone" >&2
elif ! npm install --silent --no-audit --no-fund --prefix "$WORK/npm" tokenizers@0.23.2 tiktoken@1.0.22 >"$WORK/npm.log" 2>&1; then
  echo "npm install of tokenizers@0.23.2 tiktoken@1.0.22 failed (see below): printing lib/tokenizer alone" >&2
  tail -5 "$WORK/npm.log" >&2
else
  refs_ok=true
  zstd -q -d "$TESTDATA/corpus_public.jsonl.zst" -o "$WORK/corpus.jsonl"
  for fam in "${FAMILIES[@]}"; do
    mkdir -p "$WORK/models/$fam"
    for f in "$TESTDATA/tokenizers/$fam"/*; do
      case "$f" in
        *.zst) zstd -q -d "$f" -o "$WORK/models/$fam/$(basename "${f%.zst}")" ;;
        *) cp "$f" "$WORK/models/$fam/" ;;
      esac
    done
    case "$fam" in
      kimi*) zstd -q -d "$TESTDATA/tokenizers/kimi_shared/tiktoken.model.zst" -o "$WORK/models/$fam/tiktoken.model" ;;
    esac
    echo "measuring the reference on $fam..." >&2
    line="$(node "$ROOT/scripts/bench/tokenize_node.mjs" "$WORK/npm" "$WORK/models" "$WORK/corpus.jsonl" "$fam" "$SECONDS_PER_RUN")"
    THEIRS[$fam]="$(sed -E 's/.*"mb_per_s":([0-9.]+).*/\1/' <<<"$line")"
    THEIRS_CPU[$fam]="$(sed -E 's/.*"cpu_mb_per_s":([0-9.]+).*/\1/' <<<"$line")"
    THEIR_LIB[$fam]="$(sed -E 's/.*"lib":"([^"]+)".*/\1/' <<<"$line")"
  done
fi

ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.1fx", a / b; else print "-" }'; }

echo
echo "Encode speed on corpus_public without its 'long' category, special mode, one core; load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
printf '%-12s %9s %9s %9s %9s %9s %9s %8s %8s  %s\n' family "ours" "ours-cpu" "cold" "cold-cpu" "ref" "ref-cpu" "ratio" "cold" reference
for fam in "${FAMILIES[@]}"; do
  printf '%-12s %9s %9s %9s %9s %9s %9s %8s %8s  %s\n' "$fam" \
    "${OURS[$fam]:--}" "${OURS_CPU[$fam]:--}" "${COLD[$fam]:--}" "${COLD_CPU[$fam]:--}" \
    "${THEIRS[$fam]:--}" "${THEIRS_CPU[$fam]:--}" \
    "$(ratio "${OURS_CPU[$fam]:-}" "${THEIRS_CPU[$fam]:-}")" "$(ratio "${COLD_CPU[$fam]:-}" "${THEIRS_CPU[$fam]:-}")" \
    "${THEIR_LIB[$fam]:-}"
done
echo "MB/s by wall time, *-cpu by process CPU time; ours: piece cache warm across passes (the reference HF"
echo "tokenizers keeps a cache too), cold: cache emptied before each pass; ratios = ours-cpu / ref-cpu"
$refs_ok || echo "(reference columns empty: the npm references could not be run, see above)"
