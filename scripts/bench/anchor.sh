# Sourced by every script in scripts/bench/ (not run by itself: scripts/bench.sh
# skips the files without a #! line): the one line format in which a benchmark
# prints a figure of ours beside its anchor (wc -l, a Python client, HF
# tokenizers' encodeBatch, the run that follows an estimate...), measured in
# the same run, and the timing helpers they share.
#
# The line (one per figure; fields separated by " | ", none containing "|"):
#
#   bench | KEY | WHAT | OURS | ANCHOR | RATIO | TARGET | load L1 L5 L15 (start S1 S5 S15) | COMMAND
#
#   KEY      script/figure, unique across scripts/bench/ (records/tokstat-total)
#   WHAT     what is measured, in words
#   OURS     our figure with its unit (0.412 s wall, 0.405 s CPU)
#   ANCHOR   the anchor's name and figure, same unit (wc -l 0.201 s wall, ...)
#   RATIO    ours against the anchor, saying which way (2.05x wc -l's wall time)
#   TARGET   the target the ratio is held to, or "-"
#   load     /proc/loadavg when the line was printed, and when the script began
#   COMMAND  how the script was run: its settings (environment) and path
#
# scripts/bench/readme-table.sh reads these lines from the scripts' output and
# rewrites README.md's benchmark table from them. Lines other than these are
# for people and are free in form.
#
# Usage, after ROOT is set and the script has cd'd to it:
#   source scripts/bench/anchor.sh
#   bench_begin BENCH_SIZE BENCH_RUNS   # the settings that shape the figures
#   ...
#   bench_line records/tokstat-total "tokstat --total, 220 MB of records" \
#     "0.41 s wall" "wc -l 0.20 s wall" "$(bench_ratio 0.41 0.20)x wc -l's wall time" "<= 2x"

BENCH_LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
BENCH_SCRIPT="scripts/bench/$(basename "$0")"
BENCH_COMMAND="$BENCH_SCRIPT"

# bench_begin VAR...: names the environment settings of the script; those set
# when it runs are written before its path in COMMAND.
bench_begin() {
  local v settings=""
  for v in "$@"; do
    [[ -n "${!v+x}" ]] && settings+="$v=${!v} "
  done
  BENCH_COMMAND="${settings}$BENCH_SCRIPT"
}

# bench_load: the load average now, "L1 L5 L15".
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench_ratio A B: A / B with two decimals ("-" when B is 0 or empty).
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

# bench_line KEY WHAT OURS ANCHOR RATIO [TARGET]: prints the line above on stdout.
bench_line() {
  local f
  for f in "$@"; do
    [[ "$f" != *"|"* ]] || { printf 'bench_line: a field holds "|": %s\n' "$f" >&2; return 1; }
  done
  printf 'bench | %s | %s | %s | %s | %s | %s | load %s (start %s) | %s\n' \
    "$1" "$2" "$3" "$4" "$5" "${6:--}" "$(bench_load)" "$BENCH_LOAD_START" "$BENCH_COMMAND"
}

# bench_median: the median of the numbers on stdin, one a line.
bench_median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# bench_once OUT ERR CMD...: runs CMD once (stdout to OUT, stderr to ERR)
# and prints "WALL CPU" in seconds (CPU: user + sys). The shell's time
# keyword measures to the millisecond. Fails, showing ERR, when CMD fails.
bench_once() {
  local out=$1 err=$2 TIMEFORMAT='%3R %3U %3S' t
  shift 2
  t="$({ time "$@" >"$out" 2>"$err"; } 2>&1)" || { cat "$err" >&2; return 1; }
  awk '{ print $1, $2 + $3 }' <<<"$t"
}

# bench_time N OUT ERR CMD...: runs CMD N times (bench_once) and prints
# "WALL CPU", the median of each. Fails when CMD fails.
bench_time() {
  local n=$1 out=$2 err=$3 i walls="" cpus="" t
  shift 3
  for ((i = 0; i < n; i++)); do
    t="$(bench_once "$out" "$err" "$@")" || return 1
    walls+="${t% *}"$'\n' cpus+="${t#* }"$'\n'
  done
  printf '%s %s\n' "$(printf '%s' "$walls" | bench_median)" "$(printf '%s' "$cpus" | bench_median)"
}

# bench_least_of A [B]: the lesser of two numbers, A when B is empty.
bench_least_of() { awk -v a="$1" -v b="${2:-}" 'BEGIN { print (b == "" || a + 0 < b + 0) ? a : b }'; }

# bench_less_load T LOAD: the seconds T less LOAD (a tool's start-up, timed
# apart), at least 0.001 so that a ratio of them stays finite.
bench_less_load() { awk -v t="$1" -v l="$2" 'BEGIN { d = t - l; if (d < 0.001) d = 0.001; print d }'; }

# bench_least N CMD...: "WALL CPU" in seconds, each the least of N runs of
# CMD (bench_once, stdout discarded). For a time that is taken out of others
# (a tool's load, timed on a one-record input): it is taken at its least
# disturbed, and the CPU time apart from the wall time, since the CPU time of
# the fastest run by the clock is a draw of its own (a load drawn high once
# gave a family 150 MB/s in scripts/bench/tokenize.sh, drawn low 6x, at 20
# copies of its corpus, where the load was most of a run's CPU time).
bench_least() {
  local n=$1 r t wall="" cpu="" err
  shift
  err="$(mktemp)"
  for ((r = 0; r < n; r++)); do
    t="$(bench_once /dev/null "$err" "$@")" || { rm -f "$err"; return 1; }
    wall=$(bench_least_of "${t% *}" "$wall") cpu=$(bench_least_of "${t#* }" "$cpu")
  done
  rm -f "$err"
  echo "$wall $cpu"
}

# bench_jobs_rounds N LOAD CMD...: how much faster CMD runs with -j 2 than
# with -j 1, in N rounds of the two back to back, the order alternating from
# round to round; "{j}" in CMD stands for the jobs. The machines here drift
# by tens of percent over minutes, so the fastest -j 1 of one block of runs
# against the fastest -j 2 of the next read anything from 1.7x to 2.1x on the
# same code, and a round's pair is the fairest ratio there is. Prints
# "J1_WALL J1_CPU J2_WALL J2_CPU SPEEDUP LEAST-MOST" in seconds: each side's
# least wall and least CPU time of its N runs (bench_once, stdout
# discarded), the median round's (j1 - LOAD) / (j2 - LOAD) by the wall
# clock, LOAD being the seconds both spend before their first record (0 for
# none), and the least and greatest round's, so that a reader sees how far
# one round strays.
bench_jobs_rounds() {
  local n=$1 load=$2 r j a t ratios="" err
  local -A wall cpu round
  shift 2
  err="$(mktemp)"
  for ((r = 0; r < n; r++)); do
    for j in $( ((r % 2 == 0)) && echo "1 2" || echo "2 1"); do
      local cmd=()
      for a in "$@"; do cmd+=("${a//\{j\}/$j}"); done
      t="$(bench_once /dev/null "$err" "${cmd[@]}")" || { rm -f "$err"; return 1; }
      wall[$j]=$(bench_least_of "${t% *}" "${wall[$j]:-}") cpu[$j]=$(bench_least_of "${t#* }" "${cpu[$j]:-}")
      round[$j]="${t% *}"
    done
    ratios+="$(awk -v a="$(bench_less_load "${round[1]}" "$load")" -v b="$(bench_less_load "${round[2]}" "$load")" 'BEGIN { print a / b }')"$'\n'
  done
  rm -f "$err"
  printf '%s %s %s %s %.2f %s\n' "${wall[1]}" "${cpu[1]}" "${wall[2]}" "${cpu[2]}" \
    "$(printf '%s' "$ratios" | bench_median)" "$(printf '%s' "$ratios" | sort -g | awk 'NR == 1 { l = $1 } { m = $1 } END { printf "%.2f-%.2f", l, m }')"
}
