#!/usr/bin/env bash
# fanout.sh: run many synthpipe pipelines at once with GNU parallel, each one
# a run-dataset.sh run (flock, resume, budget, log, exit 75 for a retry).
#
#   fanout.sh datasets DATASET...   one run per dataset, each with its own output
#                                   and its own budget (SYNTHPIPE_BUDGET each)
#   fanout.sh shards DATASET N      one dataset split into N disjoint shards by id
#                                   (dedupe-resume --shard K/N), run at once; shard K
#                                   writes DATASET/out.shard-K-of-N.jsonl, gets
#                                   SYNTHPIPE_BUDGET / N, and the shards' outputs
#                                   concatenate to the unsharded result
#   fanout.sh stop DATASET...       stop the runs of these datasets (every shard),
#                                   wherever they were started from
#
# Stopping: GNU parallel runs each job in a process group of its own, so a
# signal to fanout.sh alone, or kill -9 of it, would leave the runs going.
# fanout.sh catches SIGINT, SIGTERM and SIGHUP: it has parallel start no
# more runs (a stop file each run checks first) and passes the signal on to every running one, which then stops
# as the pipeline does (generate finishes what is in flight and writes it);
# a second signal is passed on too and stops them at once. It says once what
# it does (how many runs it drains) and, when they have ended, how each
# ended. After a kill -9 of fanout.sh, `fanout.sh stop DATASET...` signals each run through the process
# group its lock file names (run-dataset.sh writes it there).
#
# Many runs against one server are safe: each generate reads the server's own
# load (requests running and queued: SGLang's /metrics with --enable-metrics,
# else its /v1/loads or /get_load, served whatever its flags) and together
# they keep in flight what one run alone would, each backing off in
# proportion when the server holds more and growing when it holds less
# (generate --help, "Several runs, one server"); no run needs to know of the
# others, here or on other machines. A server that reports no load (an old
# SGLang, or a proxy that passes on only requests) is measured instead with one-token probes of its queue
# (fanout.sh sets SYNTHPIPE_SHARED=1, run-dataset.sh passes generate
# --shared), which works, but later and less closely (more queued, most of
# all with many runs).
#
# At most $SYNTHPIPE_JOBS runs at a time (default 4; shards: all N). Settings are
# run-dataset.sh's (SYNTHPIPE_DATA, SYNTHPIPE_TOKENIZER, SYNTHPIPE_URL, ...). The
# exit status is the worst of the runs' (75 when one should be retried later).
#
# Across machines, one shard per host with GNU parallel's --sshlogin (synthpipe
# and the prompts installed on each; ssh sets nothing of the local environment,
# so --env passes the settings along; collect the shard files with rsync after).
# The runs on the hosts share the server as the local ones do:
#   parallel --sshlogin 1/host1,1/host2,1/host3,1/host4 --workdir /srv/distill \
#     --env SYNTHPIPE_TOKENIZER --env SYNTHPIPE_URL --env SYNTHPIPE_BUDGET \
#     /usr/local/share/synthpipe/scripts/run-dataset.sh chat {}/4 ::: 0 1 2 3
# (tests/recipe_ssh_test.go runs this against an sshd of its own, two logins
# standing for two hosts.)
#
# Watching: every run writes DATASET/status.json (run-dataset.sh); `tokstat
# $SYNTHPIPE_DATA` (default ./data) shows the whole job on one screen, and each
# run's log lines carry its server's own view where the server reports it.
#
# Output of concurrent runs never interleaves: every run writes its own files,
# and parallel --line-buffer --tag keeps their messages whole and named.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() {
	sed -n '5,13p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 64
}

command -v parallel >/dev/null 2>&1 || {
	echo "fanout.sh: GNU parallel is not installed (Debian: apt-get install parallel)" >&2
	exit 69
}

# worst_status: GNU parallel exits with the number of failed jobs; the
# joblog keeps each run's own status, and 75 among them means "retry later".
worst_status() {
	awk -F'\t' 'NR > 1 && $7 != 0 { if ($7 == 75) retry = 1; else if (!other) other = $7 }
		END { if (retry) print 75; else print other + 0 }' "$1"
}

# stop_runs DATASET...: signal every running run of these datasets (a lock
# that can be taken has no holder left) through the process group its lock
# file names.
stop_runs() {
	local data=${SYNTHPIPE_DATA:-./data} dataset lock pgid stopped=0
	for dataset in "$@"; do
		for lock in "$data/$dataset"/.lock*; do
			[ -f "$lock" ] || continue
			if flock -n "$lock" true; then
				continue
			fi
			pgid=$(sed -n 's/.*process group \([0-9][0-9]*\).*/\1/p' "$lock" | head -n 1)
			if [ -z "$pgid" ]; then
				echo "fanout.sh: $lock is held but names no process group" >&2
				continue
			fi
			echo "fanout.sh: stopping $dataset ($(head -n 1 "$lock"))" >&2
			kill -TERM -- "-$pgid" && stopped=$((stopped + 1))
		done
	done
	echo "fanout.sh: signalled $stopped run(s)" >&2
}

# run_parallel ARGS... -- COMMAND: GNU parallel, running the shell code COMMAND
# ({} the input) for each of $inputs, in the background, with the
# signals fanout.sh receives passed on to the runs (see the header).
# parallel gets a session of its own: a Ctrl-C at the terminal reaches it
# only through fanout.sh, since its own SIGINT handling kills the runs
# within a second, too soon for them to write what they finish. It is never
# signalled itself (its SIGHUP handling prints its own notices, "Send
# SIGTERM to stop now", which stops the runs too soon): a run it starts
# after a stop finds the stop file and exits at once instead.
run_parallel() {
	local args=()
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	FANOUT_STOP=$stopfile setsid parallel "${args[@]}" '[ -e "$FANOUT_STOP" ] && exit 130; exec '"$2" "${inputs[@]}" &
	local pid=$!
	forward() {
		local job name running=()
		: >"$stopfile" # no new runs
		for job in $(pgrep -P "$pid"); do
			name=$(run_name "$job") # before the signal: a run may end at once, and ps then names nothing
			kill "-$1" -- "-$job" 2>/dev/null && running+=("$name") # each run is its own process group
		done
		if [ -z "$signalled" ]; then
			echo "fanout.sh: SIG$1: no new runs; draining ${#running[@]} run(s) (${running[*]}): each generate sends nothing more, lets the answers in flight finish (up to its --drain-timeout, 30s unless SYNTHPIPE_GENERATE_ARGS sets it) and writes them; another SIG$1 stops them at once, cancelling those answers" >&2
		else
			echo "fanout.sh: another SIG$1: ${#running[@]} run(s) (${running[*]}) stop at once, cancelling the answers in flight" >&2
		fi
		signalled=$1
	}
	signalled=
	trap 'forward INT' INT
	trap 'forward TERM' TERM
	trap 'forward HUP' HUP
	# wait returns early when a trapped signal arrives: wait again until
	# parallel itself is gone.
	while kill -0 "$pid" 2>/dev/null; do
		wait "$pid"
	done
	trap - INT TERM HUP
}

# run_name PID: the dataset (and shard) of the run-dataset.sh run PID.
run_name() {
	ps -o args= -p "$1" | sed 's/.*run-dataset\.sh //'
}

# stop_outcome SIGNAL: after a stop, how each run ended (from the joblog).
stop_outcome() {
	local outcome
	outcome=$(awk -F'\t' 'NR > 1 { n = split($9, w, " "); name = w[n]; if (w[n] ~ /\//) name = w[n-1] " " w[n]
		printf "%s%s exit %s", sep, name, $7; sep = ", " }' "$joblog")
	echo "fanout.sh: stopped by SIG$1: ${outcome:-no run had started}; every output holds whole records only (each answer once); run the same command again to finish" >&2
}

[ $# -ge 1 ] || usage
# The runs share the server(s): run-dataset.sh passes generate --shared.
export SYNTHPIPE_SHARED=${SYNTHPIPE_SHARED:-1}
mode=$1
shift
joblog=$(mktemp) || exit 73
stopfile=$joblog.stop
trap 'rm -f "$joblog" "$stopfile"' EXIT
case $mode in
datasets)
	[ $# -ge 1 ] || usage
	inputs=(::: "$@")
	run_parallel --line-buffer --tag --joblog "$joblog" -j "${SYNTHPIPE_JOBS:-4}" -- "$(printf %q "$here/run-dataset.sh") {}"
	;;
shards)
	if [ $# -ne 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
		usage
	fi
	dataset=$1 n=$2
	mapfile -t shard_args < <(seq 0 $((n - 1)))
	inputs=(::: "${shard_args[@]}")
	run_parallel --line-buffer --tag --joblog "$joblog" -j "${SYNTHPIPE_JOBS:-$n}" -- "$(printf '%q %q' "$here/run-dataset.sh" "$dataset") {}/$n"
	;;
stop)
	[ $# -ge 1 ] || usage
	stop_runs "$@"
	exit 0
	;;
*)
	usage
	;;
esac
[ -n "$signalled" ] && stop_outcome "$signalled"
case $signalled in
INT) exit 130 ;;
TERM) exit 143 ;;
HUP) exit 129 ;;
esac
exit "$(worst_status "$joblog")"
