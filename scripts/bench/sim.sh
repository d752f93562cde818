# Sourced by the bench scripts that run llm-sim beside the tools
# (estimate.sh, estimate-demo.sh): a scratch folder removed on exit with the
# simulators and watchers started, and the small helpers they share.
# Run from the repository's root, with set -euo pipefail.

WORK="$(mktemp -d)"
PIDS=() # processes to end on exit
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
note() { printf '%s\n' "$*" >&2; }

# start_sim NAME ARGS...: starts llm-sim with ARGS, sets URL_<NAME> once it listens.
start_sim() {
  local name="$1"; shift
  llm-sim --url-file "$WORK/$name.url" "$@" 2>/dev/null &
  PIDS+=($!)
  for _ in $(seq 200); do [[ -s "$WORK/$name.url" ]] && break; sleep 0.05; done
  printf -v "URL_$name" '%s' "$(cat "$WORK/$name.url")"
}

now() { date +%s.%N; }
# off PREDICTED ACTUAL: how far the prediction was off, as a signed percentage.
off() { awk -v p="$1" -v a="$2" 'BEGIN { printf "%+.1f%%", 100 * (p - a) / a }'; }

# chats N TURNS [PARAGRAPH]: N conversations as JSON lines, each of TURNS user
# turns: a shared system prompt, a first user turn of ~800 tokens of its own (a
# document, as agent and tool trajectories start with long context; a new
# paragraph every PARAGRAPH words, 0 or none: one paragraph), then short user
# turns; the source's answers between them are never sent.
chats() {
  awk -v n="$1" -v t="$2" -v para="${3:-0}" 'BEGIN {
    split("model token data batch prompt answer cache queue alpha beta gamma delta sigma omega lambda kappa", w, " ")
    for (i = 0; i < n; i++) {
      doc = ""
      for (k = 0; k < 800; k++) doc = doc ((para > 0 && k > 0 && k % para == 0) ? "\\n\\n" : " ") w[1 + (i * 31 + k * k * 7 + k) % 16]
      line = "{\"id\":\"c" i "\",\"messages\":[{\"role\":\"system\",\"content\":\"You answer questions about documents.\"},"
      line = line "{\"role\":\"user\",\"content\":\"Read document " i ":" doc "\"}"
      for (k = 2; k <= t; k++) line = line ",{\"role\":\"assistant\",\"content\":\"source answer\"},{\"role\":\"user\",\"content\":\"And what of point " k " in document " i "?\"}"
      print line "]}"
    }
  }'
}
