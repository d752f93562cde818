#!/usr/bin/env bash
# parquet.sh: the memory of reading a large Parquet file. Writes a file of
# SIZE (default 2G) of ShareGPT-style conversations (snappy, row groups of
# 20,000 rows) with scripts/bench/parquetgen, then reads it through
# budget-cut --count records (every row becomes a JSONL record on /dev/null;
# budget-cut holds nothing per record) and dedupe-resume (which also holds
# every id it has seen, to drop repeats) under /usr/bin/time -v, and prints
# the file's size and each tool's peak resident memory. The reader's share
# must stay near a row group's batches, not grow with the file: compare two
# SIZEs (e.g. SIZE=512M and SIZE=2G). Each peak is printed beside the file's
# size, its anchor, on a bench line (scripts/bench/anchor.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/anchor.sh
source scripts/bench/anchor.sh
bench_begin SIZE
size=${SIZE:-2G}
dir=$(mktemp -d /tmp/synthpipe-parquet-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
bytes=$(numfmt --from=iec "$size")
go run ./scripts/bench/parquetgen -o "$dir/big.parquet" -size "$bytes"
go build -o "$dir/" ./cmd/dedupe-resume ./cmd/budget-cut
file_bytes=$(stat -c %s "$dir/big.parquet")

# measure TOOL ARGS...: runs the tool on the file and prints its peak RSS.
measure() {
	local tool=$1
	shift
	/usr/bin/time -v "$dir/$tool" "$@" "$dir/big.parquet" 2>"$dir/time" | wc -lc >"$dir/count"
	read -r rows json <"$dir/count"
	peak=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time")
	printf '%-14s %s rows (%s bytes of JSONL): peak RSS %s KiB (%.1f MiB, %.2f%% of the file), wall %s\n' \
		"$tool" "$rows" "$json" "$peak" "$(echo "$peak/1024" | bc -l)" "$(echo "$peak*1024*100/$file_bytes" | bc -l)" "$wall"
	LINES+=("$(bench_line "parquet/$tool" "\`$tool\` reading a $size Parquet file of conversations (row groups of 20,000 rows)" \
		"$(printf 'peak RSS %.1f MiB, wall %s' "$(echo "$peak/1024" | bc -l)" "$wall")" \
		"$(printf 'the file %.1f MiB' "$(echo "$file_bytes/1048576" | bc -l)")" \
		"$(printf '%.2f%% of the file' "$(echo "$peak*1024*100/$file_bytes" | bc -l)")" "near a row group's batches, flat in the file's size")")
}
LINES=()
echo "parquet input: $file_bytes bytes ($size)"
measure budget-cut -q --count records --tokens 1000000000000
measure dedupe-resume -q
printf '%s\n' "${LINES[@]}"
