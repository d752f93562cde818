#!/usr/bin/env bash
# test-loaded.sh [RUNS]: run the whole test suite RUNS times in a row (default
# 10) while other work takes every core, as on a busy 2-core CI machine or a
# laptop compiling something else. A test that depends on how fast the
# machine is fails here: the suite must pass every time.
#
# The load is stress-ng (one CPU worker per core), installed with apt-get when
# it is missing and this runs as root; otherwise a busy loop per core.
# `make test-loaded` runs it. Each run's output is kept in $LOG_DIR
# (default: a new temporary folder); the last line says "N of N passed".
#
# Environment: GO (default go), LOG_DIR, TEST_TIMEOUT (per run, default 20m).
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-10}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
	echo "test-loaded: RUNS must be a positive number, not '$runs' (usage: scripts/test-loaded.sh [RUNS])" >&2
	exit 64
fi
GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-20m}
LOG_DIR=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/synthpipe-test-loaded.XXXXXX")}
mkdir -p "$LOG_DIR"
cores=$(nproc 2>/dev/null || echo 2)

# have_stress_ng installs stress-ng when it can (root with apt-get).
have_stress_ng() {
	command -v stress-ng >/dev/null 2>&1 && return 0
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "test-loaded: installing stress-ng with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >/dev/null 2>&1; }
	fi
	command -v stress-ng >/dev/null 2>&1
}

load_pids=()
stop_load() {
	local pid
	for pid in "${load_pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${load_pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	load_pids=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT
trap 'stop_load; exit 143' TERM

# The suite is compiled once, before the load: what is measured is how the
# tests behave on a busy machine, not how long the compiler takes on one.
echo "test-loaded: building the tests"
if ! "$GO" test -count=1 -run '^$' ./... >"$LOG_DIR/build.log" 2>&1; then
	cat "$LOG_DIR/build.log" >&2
	echo "test-loaded: the tests do not build (see above)" >&2
	exit 1
fi

if have_stress_ng; then
	stress-ng --cpu "$cores" --quiet &
	load_pids+=($!)
	load="stress-ng --cpu $cores"
else
	for ((i = 0; i < cores; i++)); do
		bash -c 'while :; do :; done' &
		load_pids+=($!)
	done
	load="$cores busy loops (stress-ng is not installed)"
fi
runs_word=runs
[ "$runs" -eq 1 ] && runs_word=run
echo "test-loaded: $runs $runs_word of the whole suite under $load; logs in $LOG_DIR"

passed=0
for ((run = 1; run <= runs; run++)); do
	log="$LOG_DIR/run-$run.log"
	start=$SECONDS
	if "$GO" test -count=1 -timeout "$TEST_TIMEOUT" ./... >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "test-loaded: run $run of $runs passed in $((SECONDS - start))s"
	else
		echo "test-loaded: run $run of $runs FAILED in $((SECONDS - start))s ($log):"
		grep -E '^(--- FAIL|FAIL|panic:)|^\s+--- FAIL' "$log" | head -20 | sed 's/^/    /'
	fi
done
stop_load
echo "test-loaded: $passed of $runs passed"
[ "$passed" -eq "$runs" ]
