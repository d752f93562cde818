#!/usr/bin/env bash
# make demo: the whole synthpipe pipeline on the bundled sample prompts and the
# bundled Kimi-K2.5 tokenizer, against the built-in simulated SGLang server.
#
# For each dataset of the sample (chat, code, math, tools as JSONL, sharegpt as
# a folder of Parquet shards), all five at once
# against the one simulator (as scripts/fanout.sh runs them), it runs
#   tokenize-prompts | dedupe-resume | generate | budget-cut -o DATASET/out.jsonl --append
# with a token budget per dataset (generate refuses to start a request the
# budget could not pay for; budget-cut cuts exactly) and a status file beside
# each output, runs everything again to show that a rerun resumes and does no
# work twice, prints tokstat per dataset with the budget use, exports
# SpecForge training data, stops the simulator, and ends with the whole job
# on one screen (tokstat DIR).
#
# Output goes to $DEMO_DIR (default: a new folder under /tmp); nothing in the
# checkout is written but bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"

demo=${DEMO_DIR:-$(mktemp -d /tmp/synthpipe-demo.XXXXXX)}
mkdir -p "$demo"
budget=${DEMO_BUDGET:-40k}
datasets=(chat code math tools sharegpt)

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
[ -n "${NO_COLOR:-}" ] || [ "${TERM:-dumb}" = dumb ] && say() { printf '\n== %s\n' "$*" >&2; }

say "starting llm-sim (a simulated SGLang server: 40k-token KV cache, answers ~300 tokens)"
llm-sim --url-file "$demo/url" --max-total-tokens 40000 --lengths lognormal:300,0.7,1500 \
	--step-time 2ms --per-token-time 5us --seed 7 2>"$demo/llm-sim.log" &
sim=$!
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$demo/url" ] && break; sleep 0.05; done
url=$(cat "$demo/url")
echo "llm-sim listening at $url" >&2

# prompts_of names a dataset's prompts: the bundled JSONL, or for sharegpt a
# folder of Parquet shards as the Hugging Face Hub publishes a dataset.
prompts_of() {
	if [ -d "scripts/demo-data/$1" ]; then
		echo "scripts/demo-data/$1"
	else
		echo "lib/bundle/prompts/$1.jsonl.zst"
	fi
}

# run_all runs every dataset's pipeline at once; each one's messages go to
# its run.log, and the last lines of each are shown when all are done.
run_all() {
	local pids=() d
	for d in "${datasets[@]}"; do
		mkdir -p "$demo/$d"
		(
			set -o pipefail
			tokenize-prompts -q --tokenizer builtin:kimi-k2.5 --date 2026-01-01 "$(prompts_of "$d")" |
				dedupe-resume --done "$demo/$d/out.jsonl" |
				generate --backend sglang --url "$url" --max-tokens 1500 --errors "$demo/$d/errors.jsonl" --progress-interval 2s \
					--token-budget "$budget" --already "$demo/$d/out.jsonl" --status-file "$demo/$d/status.json" |
				budget-cut --tokens "$budget" -o "$demo/$d/out.jsonl" --append
		) 2>"$demo/$d/run.log" &
		pids+=($!)
	done
	if [ "${1:-}" = watch ]; then
		# What a user of fanout.sh would see with `watch tokstat data/`.
		sleep 4
		say "while they run: tokstat $demo"
		tokstat "$demo" >&2 || true
	fi
	local status=0
	for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
	for d in "${datasets[@]}"; do
		echo "-- $d" >&2
		grep -E 'the server is the limit|records read|^budget-cut' "$demo/$d/run.log" | sed 's/^/   /' >&2 || true
	done
	return "$status"
}

say "first run: the five datasets at once, each up to its budget of $budget tokens"
time run_all watch

say "second run: the same command resumes; nothing is done twice"
run_all

say "tokstat: per dataset, with budget use"
tokstat --by dataset --budget "$budget" "$demo"/{chat,code,math,tools,sharegpt}/out.jsonl

say "to-train: SpecForge conversations for the draft model"
to-train --format specforge "$demo"/{chat,code,math,tools,sharegpt}/out.jsonl >"$demo/train.jsonl"
echo "wrote $demo/train.jsonl ($(wc -l <"$demo/train.jsonl") samples)" >&2

say "to-train --show: the first sample as the trainer sees it (trained spans marked)"
to-train --format tokens --tokenizer builtin:kimi-k2.5 --show 1 "$demo/chat/out.jsonl" >&2

say "the whole job on one screen: tokstat $demo (from the status files)"
tokstat "$demo"

say "the same as a page with charts: tokstat --html $demo > $demo/report.html"
tokstat --html "$demo" >"$demo/report.html"
echo "open file://$demo/report.html in a browser" >&2

say "done: outputs in $demo"
