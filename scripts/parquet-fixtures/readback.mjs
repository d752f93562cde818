// readback.mjs FILE.parquet: prints the rows of a Parquet file as JSONL, read
// by parquet-wasm (Apache Arrow's Rust Parquet reader, compiled to
// WebAssembly): an implementation independent of the one synthpipe writes
// with (parquet-go), so that the tests of to-train -o FILE.parquet check what
// another reader sees, not what the writer meant. 64-bit integers are printed
// as JSON numbers (exact: they are written as digits, not through a double).
// The tests run it with the pinned packages of package.json, which
// scripts/ensure-test-deps.sh installs.
import { readFileSync } from "node:fs";
import { tableFromIPC } from "apache-arrow";
import * as pq from "parquet-wasm";

// plain turns an Arrow value into what JSON.stringify can print: vectors and
// typed arrays as arrays, struct rows as objects, 64-bit integers marked.
function plain(v) {
  if (typeof v === "bigint") return { big: v.toString() };
  if (v === null || v === undefined || typeof v !== "object") return v ?? null;
  if (ArrayBuffer.isView(v)) return Array.from(v, plain);
  if (typeof v.toArray === "function" && typeof v.length === "number") return Array.from(v, plain);
  if (typeof v.toJSON === "function") v = v.toJSON();
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
}

const file = process.argv[2];
const table = tableFromIPC(pq.readParquet(readFileSync(file)).intoIPCStream());
const out = [];
for (const row of table) {
  out.push(JSON.stringify(plain(row), (k, v) => (v && typeof v === "object" && "big" in v && Object.keys(v).length === 1) ? `${v.big}n` : v)
    .replace(/"(-?\d+)n"/g, "$1"));
}
process.stdout.write(out.length ? out.join("\n") + "\n" : "");
