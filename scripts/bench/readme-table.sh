#!/usr/bin/env bash
# Rewrites README.md's benchmark table from the bench lines (the format in
# scripts/bench/anchor.sh) that the scripts in scripts/bench/ printed:
#   bash scripts/bench/records.sh | tee /tmp/records.out
#   bash scripts/bench/readme-table.sh /tmp/records.out   # or: ... | readme-table.sh
# The lines read replace those of the same KEY in scripts/bench/results.txt
# (the last figures of every script, kept in the repository; new KEYs are
# added at the end), and the table between README.md's "bench-table" markers
# is written anew from that file: a row a line, with the anchor measured in
# the same run and the load average beside each figure.
# With --check it rewrites nothing and fails when README.md's table is not
# the one results.txt makes (for tests and CI).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
STORE=scripts/bench/results.txt
README=README.md
BEGIN='<!-- bench-table begin: scripts/bench/readme-table.sh writes this table from scripts/bench/results.txt -->'
END='<!-- bench-table end -->'
check=false
if [[ "${1:-}" == --check ]]; then check=true; shift; fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The store, updated with the bench lines read (the last line of a KEY wins).
if ! $check; then
  cat "$@" | grep -E '^bench \| ' >"$WORK/new" || true
  touch "$STORE"
  awk -F' [|] ' '
    FNR == NR { if (!($2 in seen)) order[++n] = $2; seen[$2] = 1; line[$2] = $0; next }
    { if (!($2 in line)) { print; next } if (!($2 in done)) { print line[$2]; done[$2] = 1 } }
    END { for (i = 1; i <= n; i++) if (!(order[i] in done)) print line[order[i]] }
  ' "$WORK/new" "$STORE" >"$WORK/store"
  # ... keeping only the keys of the store that were not printed again, once
  awk -F' [|] ' '!seen[$2]++' "$WORK/store" >"$STORE"
fi

# The table: what | ours | anchor, same run | ratio | target | load average | command
{
  printf '%s\n' "$BEGIN"
  printf '| what | ours | anchor, same run | ratio | target | load average (at start) | command |\n'
  printf '|---|---|---|---|---|---|---|\n'
  awk -F' [|] ' '$1 == "bench" {
    load = $8; sub(/^load /, "", load)
    printf "| %s | %s | %s | %s | %s | %s | `%s` |\n", $3, $4, $5, $6, $7, load, $9
  }' "$STORE"
  printf '%s\n' "$END"
} >"$WORK/table"

grep -qxF "$BEGIN" "$README" && grep -qxF "$END" "$README" ||
  { printf '%s: no bench-table markers in %s\n' "$0" "$README" >&2; exit 1; }
awk -v b="$BEGIN" -v e="$END" -v t="$WORK/table" '
  $0 == b { while ((getline l < t) > 0) print l; skip = 1; next }
  $0 == e { skip = 0; next }
  !skip { print }
' "$README" >"$WORK/readme"
if $check; then
  cmp -s "$WORK/readme" "$README" || { printf '%s: README.md'"'"'s benchmark table is not the one %s makes\n' "$0" "$STORE" >&2; exit 1; }
  exit 0
fi
cat "$WORK/readme" >"$README"
printf 'README.md: %d rows from %s\n' "$(grep -c '^bench | ' "$STORE")" "$STORE" >&2
