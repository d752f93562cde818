// Reference ids for TestDifferentialAgainstReference.
// Usage: node reference_ids.mjs <node_modules parent> <model folder> <family> < texts.jsonl > ids.jsonl
// Each output line is {"special": [...], "plain": [...]} for one input text, made as the conformance
// references are: npm tokenizers@0.23.2 for tokenizer.json (plain mode = special added tokens renamed
// out of reach), npm tiktoken@1.0.22 with Kimi's pattern, special tokens and chunking for Kimi.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, dir, family] = process.argv.slice(2);
const require = createRequire(path.join(modules, "node_modules", "x.js"));
const texts = fs.readFileSync(0, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

// Python's str.isspace code points, for Kimi's chunking.
const PY_SPACE = new Set([0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
  0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000]);
function kimiChunks(text) {
  const cps = Array.from(text);
  const out = [];
  for (let w = 0; w < cps.length || (w === 0 && cps.length === 0); w += 400000) {
    const s = cps.slice(w, w + 400000);
    let run = 0, space = s.length > 0 && PY_SPACE.has(s[0].codePointAt(0)), start = 0;
    for (let i = 0; i < s.length; i++) {
      const sp = PY_SPACE.has(s[i].codePointAt(0));
      if (space !== sp) { run = 1; space = sp; } else if (++run > 25000) { out.push(s.slice(start, i).join("")); start = i; run = 1; }
    }
    out.push(s.slice(start).join(""));
    if (cps.length === 0) break;
  }
  return out;
}
const KIMI_PATTERN = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`, String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`, String.raw`\s*[\r\n]+`, String.raw`\s+(?!\S)`, String.raw`\s+`,
].join("|");

let special, plain;
if (family.startsWith("kimi")) {
  const { Tiktoken } = require("tiktoken");
  const ranks = fs.readFileSync(path.join(dir, "tiktoken.model"), "utf8");
  const numRanks = ranks.split("\n").filter(Boolean).length;
  const named = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")).added_tokens_decoder || {};
  const specials = {};
  for (let id = numRanks; id < numRanks + 256; id++) specials[named[String(id)]?.content ?? `<|reserved_token_${id}|>`] = id;
  const enc = new Tiktoken(ranks, specials, KIMI_PATTERN);
  special = async (t) => kimiChunks(t).flatMap((c) => Array.from(enc.encode(c, "all")));
  plain = async (t) => kimiChunks(t).flatMap((c) => Array.from(enc.encode_ordinary(c)));
} else {
  const { Tokenizer } = require("tokenizers");
  const file = path.join(dir, "tokenizer.json");
  const tj = JSON.parse(fs.readFileSync(file, "utf8"));
  for (const t of tj.added_tokens) if (t.special) t.content = "\u0000\u0001DISABLED\u0001" + t.content;
  const plainFile = path.join(os.tmpdir(), `synthpipe_reference_${family}_${process.pid}.json`);
  fs.writeFileSync(plainFile, JSON.stringify(tj));
  const sp = Tokenizer.fromFile(file), pl = Tokenizer.fromFile(plainFile);
  fs.unlinkSync(plainFile);
  special = async (t) => Array.from((await sp.encode(t, null, { addSpecialTokens: false })).getIds());
  plain = async (t) => Array.from((await pl.encode(t, null, { addSpecialTokens: false })).getIds());
}
const out = [];
for (const t of texts) out.push(JSON.stringify({ special: await special(t), plain: await plain(t) }));
process.stdout.write(out.join("\n") + "\n");
