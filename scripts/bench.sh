#!/usr/bin/env bash
# Runs every benchmark recipe in scripts/bench/*.sh in turn, one at a time so
# that each has the machine to itself. `make bench` calls it after building.
# A recipe that fails is reported and the others still run; the status is
# non-zero when any failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
failed=()
for recipe in scripts/bench/*.sh; do
  printf '\n==== %s ====\n' "$recipe"
  if ! bash "$recipe"; then
    failed+=("$recipe")
    printf '%s failed\n' "$recipe" >&2
  fi
done
if ((${#failed[@]})); then
  printf '\nfailed: %s\n' "${failed[*]}" >&2
  exit 1
fi
