#!/usr/bin/env bash
# parquet.sh: the memory of reading a large Parquet file. Writes a file of
# SIZE (default 2G) of ShareGPT-style conversations (snappy, row groups of
# 20,000 rows) with scripts/bench/parquetgen, then reads it through
# dedupe-resume (every row becomes a JSONL record on /dev/null) under
# /usr/bin/time -v, and prints the file's size and the tool's peak resident
# memory: it must stay near a row group's batches, not grow with the file.
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${SIZE:-2G}
dir=$(mktemp -d /tmp/synthpipe-parquet-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
bytes=$(numfmt --from=iec "$size")
go run ./scripts/bench/parquetgen -o "$dir/big.parquet" -size "$bytes"
go build -o "$dir/" ./cmd/dedupe-resume
/usr/bin/time -v "$dir/dedupe-resume" -q "$dir/big.parquet" 2>"$dir/time" | wc -lc >"$dir/count"
read -r rows json <"$dir/count"
peak=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time")
printf 'parquet input: %s bytes, %s rows (%s bytes of JSONL); dedupe-resume peak RSS %s KiB (%.1f MiB, %.2f%% of the file), wall %s\n' \
	"$(stat -c %s "$dir/big.parquet")" "$rows" "$json" "$peak" "$(echo "$peak/1024" | bc -l)" "$(echo "$peak*1024*100/$(stat -c %s "$dir/big.parquet")" | bc -l)" "$wall"
