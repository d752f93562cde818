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
#
# At most $SYNTHPIPE_JOBS runs at a time (default 4; shards: all N). Settings are
# run-dataset.sh's (SYNTHPIPE_DATA, SYNTHPIPE_TOKENIZER, SYNTHPIPE_URL, ...). The
# exit status is the worst of the runs' (75 when one should be retried later).
#
# Across machines, one shard per host with GNU parallel's --sshlogin (synthpipe
# and the prompts installed on each; collect the shard files with rsync after):
#   parallel --sshlogin host1,host2,host3,host4 --workdir /srv/distill \
#     /opt/synthpipe/scripts/run-dataset.sh chat {}/4 ::: 0 1 2 3
#
# Output of concurrent runs never interleaves: every run writes its own files,
# and parallel --line-buffer --tag keeps their messages whole and named.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() {
	sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//' >&2
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

[ $# -ge 1 ] || usage
mode=$1
shift
joblog=$(mktemp) || exit 73
trap 'rm -f "$joblog"' EXIT
case $mode in
datasets)
	[ $# -ge 1 ] || usage
	parallel --line-buffer --tag --joblog "$joblog" -j "${SYNTHPIPE_JOBS:-4}" \
		"$here/run-dataset.sh" {} ::: "$@"
	;;
shards)
	if [ $# -ne 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
		usage
	fi
	dataset=$1 n=$2
	parallel --line-buffer --tag --joblog "$joblog" -j "${SYNTHPIPE_JOBS:-$n}" \
		"$here/run-dataset.sh" "$dataset" {}/"$n" ::: $(seq 0 $((n - 1)))
	;;
*)
	usage
	;;
esac
exit "$(worst_status "$joblog")"
