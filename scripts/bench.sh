#!/usr/bin/env bash
# Runs every benchmark recipe in scripts/bench/*.sh in turn, one at a time so
# that each has the machine to itself. `make bench` calls it after building.
# The files sourced by the recipes (no #! line: sim.sh, anchor.sh) and
# readme-table.sh are not recipes. A recipe that fails is reported and the
# others still run; the status is non-zero when any failed. The output is kept
# in tests/bench/out/bench.log, and README.md's benchmark table is rewritten
# from its bench lines (scripts/bench/readme-table.sh).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
mkdir -p tests/bench/out
LOG=tests/bench/out/bench.log
: >"$LOG"
failed=()
for recipe in scripts/bench/*.sh; do
  [[ "$(head -c2 "$recipe")" == '#!' && "$recipe" != scripts/bench/readme-table.sh ]] || continue
  printf '\n==== %s ====\n' "$recipe" | tee -a "$LOG"
  if ! bash "$recipe" | tee -a "$LOG"; then
    failed+=("$recipe")
    printf '%s failed\n' "$recipe" >&2
  fi
done
bash scripts/bench/readme-table.sh "$LOG"
if ((${#failed[@]})); then
  printf '\nfailed: %s\n' "${failed[*]}" >&2
  exit 1
fi
