// Times the reference tokenizers on the corpus the Go benchmark uses.
// Usage: node tokenize_node.mjs <node_modules dir> <models dir> <corpus.jsonl> <family> <seconds>
// Prints one JSON line: {"family", "lib", "mb_per_s", "cpu_mb_per_s"}; the second is per second of
// process CPU time, which a shared machine disturbs less than wall time.
// tokenizer.json families go through npm `tokenizers` (HF's Rust core, one
// awaited encode per text, add_special_tokens=false); Kimi through npm
// `tiktoken` (WASM) with Kimi's pattern and special tokens, allowed_special="all".
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, modelsDir, corpusPath, family, secondsArg] = process.argv.slice(2);
const require = createRequire(path.join(modules, "node_modules", "x.js"));
const seconds = Number(secondsArg || 3);

const texts = fs.readFileSync(corpusPath, "utf8").split("\n").filter(Boolean)
  .map((l) => JSON.parse(l)).filter((r) => r.cat !== "long").map((r) => r.text);
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

let encode, lib;
const dir = path.join(modelsDir, family);
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
  encode = async (t) => tk.encode(t, "all").length;
  lib = "tiktoken@1.0.22 (wasm)";
} else {
  const { Tokenizer } = require("tokenizers");
  const tk = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  encode = async (t) => (await tk.encode(t, null, { addSpecialTokens: false })).getIds().length;
  lib = "tokenizers@0.23.2 (node)";
}

for (const t of texts) await encode(t); // warm up
const start = performance.now();
const cpuStart = process.cpuUsage();
let passes = 0;
while ((performance.now() - start) / 1000 < seconds) {
  for (const t of texts) await encode(t);
  passes++;
}
const elapsed = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpuStart);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
console.log(JSON.stringify({
  family, lib,
  mb_per_s: +(bytes * passes / elapsed / 1e6).toFixed(3),
  cpu_mb_per_s: +(bytes * passes / cpuSeconds / 1e6).toFixed(3),
}));
