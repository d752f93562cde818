// gen.mjs OUTDIR: writes the Parquet files synthpipe's reader is tested on,
// each beside the JSONL its rows must read as (NAME.parquet, NAME.jsonl).
// They are written by parquet-wasm (Apache Arrow's Rust Parquet writer,
// compiled to WebAssembly), an implementation independent of the one
// synthpipe reads with (parquet-go), so that a shared misreading cannot hide.
// Run it with scripts/parquet-fixtures/gen.sh, which installs the pinned
// packages of package.json.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tableFromArrays, tableToIPC, vectorFromArray, makeTable,
  Utf8, Int64, Float64, Bool, List, Struct, Field } from "apache-arrow";
import * as pq from "parquet-wasm";

const out = process.argv[2];
mkdirSync(join(out, "hf", "data"), { recursive: true });

const turn = new Struct([new Field("role", new Utf8(), true), new Field("content", new Utf8(), true)]);
const share = new Struct([new Field("from", new Utf8(), true), new Field("value", new Utf8(), true)]);

// Rows of prompts: a dataset column repeated (dictionary pages), messages as
// lists of structs with null lists, null elements and null fields, numbers
// with nulls, and text that needs escaping in JSON.
const rows = [
  { id: "p1", dataset: "chat", messages: [{ role: "user", content: "Hello \"world\"\n\ttab" }], max_tokens: 100n, temperature: 0.7, keep: true },
  { id: "p2", dataset: "chat", messages: [{ role: "system", content: null }, { role: "user", content: "émoji 🚀" }], max_tokens: null, temperature: null, keep: false },
  { id: "p3", dataset: "code", messages: null, max_tokens: 9007199254740993n, temperature: 1.5, keep: null },
  { id: "p4", dataset: "code", messages: [], max_tokens: 0n, temperature: 0, keep: true },
  { id: "p5", dataset: "chat", messages: [null, { role: "user", content: "\u0001 control" }], max_tokens: -5n, temperature: 2.25, keep: false },
];

function promptTable(rs) {
  return makeTable({
    id: vectorFromArray(rs.map(r => r.id), new Utf8()),
    dataset: vectorFromArray(rs.map(r => r.dataset), new Utf8()),
    messages: vectorFromArray(rs.map(r => r.messages), new List(new Field("item", turn, true))),
    max_tokens: vectorFromArray(rs.map(r => r.max_tokens), new Int64()),
    temperature: vectorFromArray(rs.map(r => r.temperature), new Float64()),
    keep: vectorFromArray(rs.map(r => r.keep), new Bool()),
  });
}

function write(name, table, { compression, dictionary, rowGroup }) {
  const wasmTable = pq.Table.fromIPCStream(tableToIPC(table, "stream"));
  const props = new pq.WriterPropertiesBuilder()
    .setCompression(compression)
    .setDictionaryEnabled(dictionary)
    .setMaxRowGroupSize(rowGroup)
    .build();
  writeFileSync(join(out, name + ".parquet"), pq.writeParquet(wasmTable, props));
}

// JSON has no 64-bit integers in JavaScript: they are marked while
// stringified and written as plain numbers.
const jsonl = rs => rs.map(r => JSON.stringify(r, (k, v) => typeof v === "bigint" ? `${v}n` : v)
  .replace(/"(-?\d+)n"/g, "$1")).join("\n") + "\n";

write("snappy_dict_groups", promptTable(rows), { compression: pq.Compression.SNAPPY, dictionary: true, rowGroup: 2 });
writeFileSync(join(out, "snappy_dict_groups.jsonl"), jsonl(rows));
write("zstd_plain", promptTable(rows), { compression: pq.Compression.ZSTD, dictionary: false, rowGroup: 1024 });
writeFileSync(join(out, "zstd_plain.jsonl"), jsonl(rows));
write("uncompressed", promptTable(rows), { compression: pq.Compression.UNCOMPRESSED, dictionary: true, rowGroup: 3 });
writeFileSync(join(out, "uncompressed.jsonl"), jsonl(rows));

// A conversation dataset as the Hub publishes it (ShareGPT layout, as
// pyarrow writes it: conversations a list of {from, value} structs, snappy,
// in numbered shards under data/).
const convs = [];
for (let i = 0; i < 6; i++) {
  convs.push({
    id: `sharegpt-${i}`,
    conversations: [
      { from: "human", value: `question ${i}: how do I sort a list?` },
      { from: "gpt", value: `answer ${i}` },
      { from: "human", value: `and in reverse ${i}?` },
    ],
  });
}
const convTable = rs => makeTable({
  id: vectorFromArray(rs.map(r => r.id), new Utf8()),
  conversations: vectorFromArray(rs.map(r => r.conversations), new List(new Field("element", share, true))),
});
write("hf/data/train-00000-of-00002", convTable(convs.slice(0, 4)), { compression: pq.Compression.SNAPPY, dictionary: true, rowGroup: 2 });
write("hf/data/train-00001-of-00002", convTable(convs.slice(4)), { compression: pq.Compression.SNAPPY, dictionary: true, rowGroup: 2 });
writeFileSync(join(out, "hf.jsonl"), jsonl(convs));
