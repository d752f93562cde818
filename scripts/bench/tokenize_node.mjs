// The reference side of scripts/bench/tokenize.sh: encodes the texts of a
// JSONL file ({"text": ...} per line) with the official implementations.
// Usage: node tokenize_node.mjs <node_modules dir> <model dir> <texts.jsonl> <family> <seconds> [ids-out]
//
// tokenizer.json families go through npm `tokenizers` (HF's Rust core) by its
// fast path, encodeBatch over batches of 1,024 texts; the thread count is the
// caller's RAYON_NUM_THREADS (1 for one thread, unset for all cores). Kimi goes
// through npm `tiktoken` (WASM, synchronous, no batch API) with Kimi's pattern
// and special tokens, allowed_special="all".
//
// Prints one JSON line: {family, lib, mb_per_s, cpu_mb_per_s, passes}. MB/s is
// of wall time; cpu_mb_per_s is per second of process CPU time over all its
// threads, which a shared machine disturbs less. With ids-out, the ids of one
// pass are written there, one JSON array per line, for the identity check.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, dir, textsPath, family, secondsArg, idsOut] = process.argv.slice(2);
const require = createRequire(path.join(modules, "node_modules", "x.js"));
const seconds = Number(secondsArg || 3);
const BATCH = 1024;

const texts = fs.readFileSync(textsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).text);
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);

// tokenization_kimi.py's pattern.
const KIMI_PATTERN = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join("|");

// pass() encodes every text once and returns the ids when keep is set.
let pass, lib;
if (family.startsWith("kimi")) {
  const { Tiktoken } = require("tiktoken");
  const ranks = fs.readFileSync(path.join(dir, "tiktoken.model"), "utf8");
  const numRanks = ranks.split("\n").filter(Boolean).length;
  const named = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")).added_tokens_decoder || {};
  const specials = {};
  for (let id = numRanks; id < numRanks + 256; id++) {
    specials[named[String(id)]?.content ?? `<|reserved_token_${id}|>`] = id;
  }
  const tk = new Tiktoken(ranks, specials, KIMI_PATTERN);
  pass = async (keep) => {
    const all = [];
    for (const t of texts) {
      const ids = tk.encode(t, "all");
      if (keep) all.push(Array.from(ids));
    }
    return all;
  };
  lib = "tiktoken@1.0.22 encode (wasm, one thread)";
} else {
  const { Tokenizer } = require("tokenizers");
  const tk = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  pass = async (keep) => {
    const all = [];
    for (let i = 0; i < texts.length; i += BATCH) {
      const encs = await tk.encodeBatch(texts.slice(i, i + BATCH), { addSpecialTokens: false });
      if (keep) for (const e of encs) all.push(e.getIds());
    }
    return all;
  };
  const threads = process.env.RAYON_NUM_THREADS === "1" ? "one thread" : "all threads";
  lib = `tokenizers@0.23.2 encodeBatch (${threads})`;
}

const first = await pass(Boolean(idsOut)); // warms the caches, as a long run has them
if (idsOut) fs.writeFileSync(idsOut, first.map((ids) => JSON.stringify(ids)).join("\n") + "\n");
const start = performance.now();
const cpuStart = process.cpuUsage();
let passes = 0;
while ((performance.now() - start) / 1000 < seconds) {
  await pass(false);
  passes++;
}
const elapsed = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpuStart);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
console.log(JSON.stringify({
  family, lib, passes,
  mb_per_s: +(bytes * passes / elapsed / 1e6).toFixed(3),
  cpu_mb_per_s: +(bytes * passes / cpuSeconds / 1e6).toFixed(3),
}));
