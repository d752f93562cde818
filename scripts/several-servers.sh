#!/usr/bin/env bash
# several-servers.sh REQUESTS OUT URL...: one generate spreading the requests
# of REQUESTS (tokenize-prompts output) over several SGLang servers, resuming
# into OUT.
#
#   several-servers.sh req.jsonl out.jsonl http://gpu1:30000 http://gpu2:30000 http://gpu3:30000
#
# generate takes --url once per server. It sizes the requests in flight for
# each server from that server's own /server_info (its KV cache and running
# request limit), sends each request to the server with the fewest tokens
# outstanding, and sidelines a server that stops answering (retrying it later
# with backoff) while the others carry on; its requests are retried elsewhere.
# It exits 75 only when no server at all can be reached.
#
# Through sglang-router instead: the router is SGLang's own load balancer in
# front of the workers, and generate sees one server, the router's URL:
#   python -m sglang_router.launch_router --worker-urls http://gpu1:30000 http://gpu2:30000 --port 30000
#   several-servers.sh req.jsonl out.jsonl http://router:30000
# The router balances by cache affinity (requests sharing a prefix go to the
# same worker) and retries a failed worker itself. generate sizes its
# concurrency from the server info the router hands on, which describes one
# worker, not all of them: read the "concurrency" line generate logs and give
# the workers' total with --concurrency N (in SYNTHPIPE_GENERATE_ARGS), e.g.
# three times that figure for three workers.
#
# Settings (environment): SYNTHPIPE_MAX_TOKENS (default 4096), SYNTHPIPE_BUDGET
# (default 10M, counting what OUT already holds), SYNTHPIPE_GENERATE_ARGS (more
# generate flags). Failures go to OUT's name with .errors.jsonl. The tools see
# only the flags made from these: the other recipes' settings (an exported
# SYNTHPIPE_TOKENIZER, say) are not theirs.
set -uo pipefail

if [ $# -lt 3 ]; then
	echo "usage: several-servers.sh REQUESTS OUT URL..." >&2
	exit 64
fi
requests=$1 out=$2
shift 2
urls=()
for u in "$@"; do urls+=(--url "$u"); done
# shellcheck disable=SC2206 # word splitting of extra flags is the point
extra=(${SYNTHPIPE_GENERATE_ARGS:-})
budget=${SYNTHPIPE_BUDGET:-10M}
max_tokens=${SYNTHPIPE_MAX_TOKENS:-4096}
# The tools read SYNTHPIPE_<FLAG> as defaults for their flags: generate would
# take SYNTHPIPE_TOKENIZER (run-dataset.sh's model folder) as its own
# --tokenizer, which --backend sglang refuses.
# shellcheck disable=SC2163 # the variable named by $name is the one meant
while read -r name; do export -n "$name"; done < <(compgen -e SYNTHPIPE_)

dedupe-resume --done "$out" "$requests" |
	generate --backend sglang "${urls[@]}" --max-tokens "$max_tokens" \
		--errors "${out%.jsonl}.errors.jsonl" --token-budget "$budget" --already "$out" "${extra[@]}" |
	budget-cut --tokens "$budget" -o "$out" --append
codes=("${PIPESTATUS[@]}")
for c in "${codes[@]}"; do [ "$c" -eq 75 ] && exit 75; done
for c in "${codes[@]}"; do [ "$c" -ne 0 ] && exit "$c"; done
exit 0
