#!/usr/bin/env bash
# gen.sh [OUTDIR]: writes the Parquet test files (default: lib/jsonl/testdata/parquet)
# with the pinned parquet-wasm and apache-arrow of package.json, installed
# from npm into a scratch folder. The committed files are its output; run it
# again only to change them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-$here/../../lib/jsonl/testdata/parquet}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/gen.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --silent >/dev/null)
node "$work/gen.mjs" "$out"
# make demo reads the conversation dataset as a folder of shards.
if [ -z "${1:-}" ]; then
	rm -rf "$here/../demo-data/sharegpt/data"
	cp -r "$out/hf/data" "$here/../demo-data/sharegpt/"
fi
