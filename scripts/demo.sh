#!/usr/bin/env bash
# make demo: the whole synthpipe pipeline on the bundled sample prompts and the
# bundled Kimi-K2.5 tokenizer, against the built-in simulated SGLang server.
#
# For each dataset of the sample (chat, code, math, tools) it runs
#   tokenize-prompts | dedupe-resume | generate | budget-cut -o DATASET.jsonl --append
# with a token budget per dataset (generate refuses to start a request the
# budget could not pay for; budget-cut cuts exactly), runs everything again to
# show that a rerun resumes and does no work twice, prints tokstat per dataset with the budget
# use, exports SpecForge training data, and stops the simulator.
#
# Output goes to $DEMO_DIR (default: a new folder under /tmp); nothing in the
# checkout is written but bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"

demo=${DEMO_DIR:-$(mktemp -d /tmp/synthpipe-demo.XXXXXX)}
mkdir -p "$demo"
budget=${DEMO_BUDGET:-40k}
datasets=(chat code math tools)

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

run_all() {
	for d in "${datasets[@]}"; do
		echo "-- $d" >&2
		tokenize-prompts -q --tokenizer builtin:kimi-k2.5 --date 2026-01-01 "lib/bundle/prompts/$d.jsonl.zst" |
			dedupe-resume --done "$demo/$d.jsonl" |
			generate --backend sglang --url "$url" --max-tokens 1500 --errors "$demo/$d.errors.jsonl" --progress-interval 5s \
				--token-budget "$budget" --already "$demo/$d.jsonl" |
			budget-cut --tokens "$budget" -o "$demo/$d.jsonl" --append
	done
}

say "first run: every dataset up to its budget of $budget tokens"
time run_all

say "second run: the same command resumes; nothing is done twice"
run_all

say "tokstat: per dataset, with budget use"
tokstat --by dataset --budget "$budget" "$demo"/{chat,code,math,tools}.jsonl

say "to-train: SpecForge conversations for the draft model"
to-train --format specforge "$demo"/{chat,code,math,tools}.jsonl >"$demo/train.jsonl"
echo "wrote $demo/train.jsonl ($(wc -l <"$demo/train.jsonl") samples)" >&2

say "done: outputs in $demo"
