"""The reference client for scripts/bench/generate.sh: the shape a user would
write in Python (asyncio + aiohttp, a semaphore, one JSON line per answer),
sending each record's input_ids to an SGLang /generate endpoint without
streaming, exactly the request generate sends. It keeps nothing but the
records and the answers' ids and token counts.

    python3 generate_aiohttp.py URL CONCURRENCY MAX_TOKENS < records.jsonl > out.jsonl
"""
import asyncio
import json
import sys

import aiohttp


async def one(session, sem, url, rec, max_tokens, out):
    body = {
        "input_ids": rec["input_ids"],
        "rid": rec["id"],
        "sampling_params": {"max_new_tokens": max_tokens, "no_stop_trim": True,
                            "skip_special_tokens": False},
    }
    async with sem:
        async with session.post(url + "/generate", json=body) as resp:
            resp.raise_for_status()
            ans = await resp.json()
    meta = ans.get("meta_info", {})
    out.write(json.dumps({
        "id": rec["id"],
        "input_ids": rec["input_ids"],
        "output_ids": ans.get("output_ids"),
        "prompt_tokens": meta.get("prompt_tokens"),
        "completion_tokens": meta.get("completion_tokens"),
    }) + "\n")


async def main():
    url, conc, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    records = [json.loads(line) for line in sys.stdin if line.strip()]
    sem = asyncio.Semaphore(conc)
    conn = aiohttp.TCPConnector(limit=conc)
    async with aiohttp.ClientSession(connector=conn) as session:
        await asyncio.gather(*(one(session, sem, url, r, max_tokens, sys.stdout) for r in records))


asyncio.run(main())
