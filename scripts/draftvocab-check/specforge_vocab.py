#!/usr/bin/env python3
"""SpecForge's draft-vocabulary algorithm, on to-train --format tokens output.

Reads samples ({"input_ids": [...], "loss_mask": [...]}, one a line) from the
files given (or stdin) and prints the mapping as to-train --draft-vocab writes
it, so that the two can be compared byte for byte:

    to-train --format tokens gen.jsonl > samples.jsonl
    python3 scripts/draftvocab-check/specforge_vocab.py --draft 6 --target 40 samples.jsonl

The counting and process_token_dict_to_mappings below follow
specforge/data/preprocessing.py (generate_vocab_mapping_file), with torch
replaced by plain Python: torch.unique returns a sample's ids sorted, which
sorted(set(...)) does too. The missing ids are taken sorted, as the current
SpecForge does; --set-order takes them in a Python set's iteration order,
as SpecForge releases before that did.

This script made tests/testdata/script/to-train_draft_vocab.txtar's expected
mappings (want-*.json there); it needs no torch and no network.
"""
import argparse
import json
import sys
from collections import Counter


def count_tokens(lines):
    token_dict = Counter()
    for line in lines:
        if not line.strip():
            continue
        sample = json.loads(line)
        masked = [t for t, m in zip(sample["input_ids"], sample["loss_mask"]) if m == 1]
        unique = sorted(set(masked))  # torch.unique(return_counts=True)
        token_dict.update({t: masked.count(t) for t in unique})
    return token_dict


def process_token_dict_to_mappings(token_dict, draft_vocab_size, target_vocab_size, set_order):
    if len(token_dict) < draft_vocab_size:
        existing_tokens = set(token_dict.keys())
        missing_tokens = set(range(draft_vocab_size)) - existing_tokens
        if not set_order:
            missing_tokens = sorted(missing_tokens)
        for token in missing_tokens:
            token_dict[token] = 0
            if len(token_dict) >= draft_vocab_size:
                break
    top_N = token_dict.most_common(draft_vocab_size)
    used_tokens = [key for key, freq in top_N]
    used_tokens.sort()
    d2t = [used_tokens[i] - i for i in range(len(used_tokens))]
    t2d = [i in used_tokens for i in range(target_vocab_size)]
    return d2t, t2d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draft", type=int, required=True)
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--set-order", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    lines = []
    for name in args.files or ["-"]:
        lines += (sys.stdin if name == "-" else open(name)).read().splitlines()
    token_dict = count_tokens(lines)
    counts = [[t, n] for t, n in token_dict.items()]  # before padding, first seen first
    d2t, t2d = process_token_dict_to_mappings(token_dict, args.draft, args.target, args.set_order)
    out = {"draft_vocab_size": args.draft, "target_vocab_size": args.target,
           "d2t": d2t, "t2d": t2d, "counts": counts}
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
