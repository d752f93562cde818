#!/usr/bin/env bash
# run-dataset.sh DATASET [K/N]: the whole synthpipe pipeline for one dataset
# (or for shard K of N of it), safe to start from cron as often as you like.
#
#   - one run at a time per dataset and shard (flock): an overlapping start logs
#     who holds the lock (pid, process group, since when, its log) and exits 0
#     at once; the holder is still running then (a lock dies with its holder)
#   - resumes: records already in the output are skipped (by id, torn tail
#     redone), so a run after a finished one adds nothing
#   - one token budget per dataset, never passed across runs: generate starts
#     no request that might pass it, counting what the output already holds,
#     and waits for those in flight before it decides the budget is reached
#     (they were reserved within it); budget-cut, which writes the output,
#     checks it again
#   - timestamped log lines in run.log, the tools' own messages included
#   - exit 75 (try again later: server down, rate limited) is passed through,
#     so the next cron run simply tries again; other failures exit non-zero too
#
# Layout, under $SYNTHPIPE_DATA (default ./data):
#   DATASET/prompts.jsonl[.zst|.gz]  the prompts (any shape tokenize-prompts reads)
#   DATASET/out.jsonl                the results (appended, whole records only), each
#                                    with "dataset": "DATASET" (tokenize-prompts
#                                    --dataset), for tokstat and estimate --by dataset;
#                                    shard K of N: DATASET/out.shard-K-of-N.jsonl
#   DATASET/errors.jsonl             what failed in the last run (retried next run);
#                                    shard K of N: DATASET/errors.shard-K-of-N.jsonl
#   DATASET/run.log                  what happened, with timestamps
#   DATASET/status.json              where the run stands, rewritten every minute and
#                                    at exit (synthpipe-status(7)); shard K of N:
#                                    DATASET/status.shard-K-of-N.json. `tokstat DATA`
#                                    shows every dataset of a job on one screen
#
# Settings (environment; the tools themselves see only the flags made from them):
#   SYNTHPIPE_TOKENIZER      model folder for tokenize-prompts (required)
#   SYNTHPIPE_URL            server base URL(s), space-separated (required)
#   SYNTHPIPE_BACKEND        sglang (default) or openai
#   SYNTHPIPE_BUDGET         token budget per dataset (default 10M); a shard gets
#                            its N-th part
#   SYNTHPIPE_MAX_TOKENS     answer length limit (default 4096)
#   SYNTHPIPE_SHUFFLE        seed of tokenize-prompts --shuffle (default 1; off: the
#                            input's order): the budget then keeps a sample of every
#                            topic of a dataset sorted by topic, the same on every run
#   SYNTHPIPE_TOKENIZE_ARGS  more tokenize-prompts flags, e.g. "--date 2026-01-01"
#   SYNTHPIPE_GENERATE_ARGS  more generate flags, e.g. "--temperature 0.6"; with the
#                            openai backend "--model NAME --tokenizer DIR" (the
#                            model folder, for output_ids)
#   SYNTHPIPE_TURNS          last (default: one answer per prompt) or all: regenerate
#                            every assistant turn of each conversation on the
#                            model's own answers (agent and tool-calling data;
#                            tokenize-prompts and generate --turns all)
#   SYNTHPIPE_QUIET          1: print nothing unless the run fails (then its exit
#                            status and its last lines of run.log), so that cron
#                            mails only failures; run.log has everything either way
#   SYNTHPIPE_SHARED         1: other runs use the server too (generate --shared:
#                            a server that reports no load is shared by probing
#                            its queue); fanout.sh sets it, and a shard always is
#
# Crontab lines (every 10 minutes; while a run is still going the next is a
# no-op; after a 75 the next one retries; cron mails what a run prints, so
# SYNTHPIPE_QUIET=1 has it print only a failure). Cron's own PATH is
# /usr/bin:/bin, without /usr/local/bin where make install puts the tools: set
# it. make install puts this script in /usr/local/share/synthpipe/scripts.
#   PATH=/usr/local/bin:/usr/bin:/bin
#   */10 * * * * cd /srv/distill && SYNTHPIPE_QUIET=1 SYNTHPIPE_TOKENIZER=/models/Kimi-K2.5 SYNTHPIPE_URL=http://gpu1:30000 /usr/local/share/synthpipe/scripts/run-dataset.sh chat
set -uo pipefail

usage() {
	echo "usage: run-dataset.sh DATASET [K/N]" >&2
	exit 64
}
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
	usage
fi
dataset=$1
shard=${2:-}
data=${SYNTHPIPE_DATA:-./data}
dir=$data/$dataset
tokenizer=${SYNTHPIPE_TOKENIZER:?set SYNTHPIPE_TOKENIZER to the model folder}
url_list=${SYNTHPIPE_URL:?set SYNTHPIPE_URL to the server base URL(s)}
backend=${SYNTHPIPE_BACKEND:-sglang}
quiet=
case ${SYNTHPIPE_QUIET:-} in 1 | true | yes) quiet=1 ;; esac
budget=${SYNTHPIPE_BUDGET:-10M}
max_tokens=${SYNTHPIPE_MAX_TOKENS:-4096}
shuffle_flags=(--shuffle "${SYNTHPIPE_SHUFFLE:-1}")
[ "${SYNTHPIPE_SHUFFLE:-}" = off ] && shuffle_flags=()
# shellcheck disable=SC2206 # word splitting of extra flags is the point
tokenize_extra=(${SYNTHPIPE_TOKENIZE_ARGS:-})
# shellcheck disable=SC2206
generate_extra=(${SYNTHPIPE_GENERATE_ARGS:-})
shared_flags=()
case ${SYNTHPIPE_SHARED:-} in 1 | true | yes) shared_flags=(--shared) ;; esac
case ${SYNTHPIPE_TURNS:-last} in
last) ;;
all)
	tokenize_extra+=(--turns all)
	generate_extra+=(--turns all)
	# SGLang: each turn's prompt is rendered, and its answer read, with the model's tokenizer.
	[ "${SYNTHPIPE_BACKEND:-sglang}" = sglang ] && generate_extra+=(--tokenizer "${SYNTHPIPE_TOKENIZER:-}")
	;;
*)
	echo "run-dataset.sh: SYNTHPIPE_TURNS=$SYNTHPIPE_TURNS: want last or all" >&2
	exit 64
	;;
esac

# The tools read SYNTHPIPE_<FLAG> as defaults for their flags: generate would
# take SYNTHPIPE_TOKENIZER as its own --tokenizer, dedupe-resume a stray
# SYNTHPIPE_SHARD as --shard. Everything is passed as flags below instead.
# shellcheck disable=SC2163 # the variable named by $name is the one meant
while read -r name; do export -n "$name"; done < <(compgen -e SYNTHPIPE_)

# budget_share BUDGET N: BUDGET (250k, 10M, 1.5G or a number) divided by N.
budget_share() {
	awk -v b="$1" -v n="$2" 'BEGIN {
		m = 1; s = b
		if (s ~ /[kK]$/) { m = 1e3; s = substr(s, 1, length(s) - 1) }
		else if (s ~ /[mM]$/) { m = 1e6; s = substr(s, 1, length(s) - 1) }
		else if (s ~ /[gG]$/) { m = 1e9; s = substr(s, 1, length(s) - 1) }
		if (s !~ /^[0-9]+(\.[0-9]+)?$/ || n < 1) exit 1
		printf "%d\n", int(s * m / n)
	}'
}

name=$dataset suffix='' shard_flags=()
if [ -n "$shard" ]; then
	if ! [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -ge "${BASH_REMATCH[2]}" ]; then
		echo "run-dataset.sh: shard $shard: want K/N with 0 <= K < N" >&2
		exit 64
	fi
	name="$dataset $shard" suffix=.shard-${BASH_REMATCH[1]}-of-${BASH_REMATCH[2]}
	shard_flags=(--shard "$shard")
	shared_flags=(--shared) # the other shards use the same server(s)
	budget=$(budget_share "$budget" "${BASH_REMATCH[2]}") || {
		echo "run-dataset.sh: SYNTHPIPE_BUDGET ${SYNTHPIPE_BUDGET:-}: want a token count such as 250k, 10M or 1.5G" >&2
		exit 64
	}
fi
out=$dir/out$suffix.jsonl
errors=$dir/errors$suffix.jsonl
status_file=$dir/status$suffix.json

prompts=
for p in "$dir/prompts.jsonl" "$dir/prompts.jsonl.zst" "$dir/prompts.jsonl.gz"; do
	[ -f "$p" ] && prompts=$p && break
done
if [ -z "$prompts" ]; then
	echo "run-dataset.sh: no prompts for $dataset: expected $dir/prompts.jsonl (or .zst, .gz)" >&2
	exit 66
fi

log=$dir/run.log
# stamp prefixes each line with the time and what runs; the shards of a
# dataset share its log, and each line goes out in one write, so they never mix.
# A signal to the run's process group is for the tools, which stop as the
# pipeline does (generate writes what it finishes): the stampers ignore it,
# so that the tools' last words still reach the log.
stamp() {
	trap '' INT TERM HUP
	while IFS= read -r line; do printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" "$line"; done
}
# note says what the run does, in the log and (unless quiet) on stderr.
note() {
	if [ -n "$quiet" ]; then
		echo "run-dataset: $*" | stamp >>"$log"
	else
		echo "run-dataset: $*" | stamp | tee -a "$log" >&2
	fi
}
# logged TOOL ARGS...: one stage of the pipeline, its stderr stamped into the
# log. The stage ends only once its stamper has written all the tool said,
# so that the pipeline's end, and the run's last line after it, come after
# every tool's last words (a stamper started with 2> >(...) is not waited
# for). The subshell sees the signals (the tool stops as it does) and waits
# for the tool: a TERM would otherwise end it while the tool still writes.
logged() {
	trap : INT TERM HUP
	{ "$@" 2>&1 >&3 3>&- | stamp 3>&- >>"$log"; } 3>&1
	return "${PIPESTATUS[0]}"
}

# The lock file names its holder (pid, process group, start, log) for a run
# that finds it taken, and for `fanout.sh stop`. Opened without truncating,
# so that a run that steps aside leaves the holder's line as it is.
lockfile=$dir/.lock$suffix
exec 9<>"$lockfile"
if ! flock -n 9; then
	# The holder writes its line just after taking the lock: give it a moment.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		holder=$(head -n 1 "$lockfile" 2>/dev/null)
		[ -n "$holder" ] && break
		sleep 0.1
	done
	note "another run of $name holds the lock and is still running (${holder:-holder unknown}): nothing to do; to stop it: kill -TERM -- -PGID, or scripts/fanout.sh stop $dataset"
	exit 0
fi
printf 'pid %d, process group %d, since %s, log %s\n' "$$" "$(ps -o pgid= -p $$ | tr -d ' ')" \
	"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$log" >"$lockfile"

log_start=0 # where this run's lines begin
[ -f "$log" ] && log_start=$(wc -l <"$log")
urls=()
for u in $url_list; do urls+=(--url "$u"); done
# The script itself notes a signal and lets the pipeline finish stopping,
# then logs how it ended; a signal before the pipeline starts ends the run.
signalled=
trap 'signalled=INT' INT
trap 'signalled=TERM' TERM
trap 'signalled=HUP' HUP
if [ -n "$signalled" ]; then
	note "stopped by SIG$signalled before the pipeline started"
	case $signalled in INT) exit 130 ;; HUP) exit 129 ;; *) exit 143 ;; esac
fi
# A user and password in a URL (http://user:pass@host) are sent, never logged.
shown_urls=$(printf '%s\n' $url_list | sed -E 's#^([a-zA-Z]+://)[^/]*@#\1#' | paste -sd ' ')
note "start: budget $budget, backend $backend, $shown_urls"
logged tokenize-prompts -q --tokenizer "$tokenizer" --dataset "$dataset" "${shuffle_flags[@]}" "${tokenize_extra[@]}" "$prompts" |
	logged dedupe-resume --done "$out" "${shard_flags[@]}" |
	logged generate --backend "$backend" "${urls[@]}" --max-tokens "$max_tokens" --errors "$errors" \
		--token-budget "$budget" --already "$out" --progress-interval 1m --status-file "$status_file" \
		"${shared_flags[@]}" "${generate_extra[@]}" |
	logged budget-cut --tokens "$budget" -o "$out" --append
codes=("${PIPESTATUS[@]}")

status=0
for c in "${codes[@]}"; do
	if [ "$c" -eq 75 ]; then
		status=75 # try again later wins: cron retries
		break
	fi
	[ "$c" -ne 0 ] && [ "$status" -eq 0 ] && status=$c
done
[ -n "$signalled" ] && note "stopped by SIG$signalled"
note "done: exit statuses ${codes[*]} (tokenize-prompts dedupe-resume generate budget-cut) -> $status"
if [ -n "$quiet" ] && [ "$status" -ne 0 ]; then
	echo "run-dataset.sh: $name failed with exit status $status; its last lines of $log:" >&2
	tail -n "+$((log_start + 1))" "$log" | grep -F " $name " | tail -n 20 >&2
fi
exit "$status"
