#!/usr/bin/env python3
"""Ramp concurrency against an OpenAI-compatible /v1/completions endpoint
and record TTFT, TPOT and output throughput at each level."""
import argparse, asyncio, json, random, time
import aiohttp

WORDS = ["analysis", "capital", "ledger", "transfer", "compliance", "risk",
         "audit", "control", "policy", "exposure", "settlement", "reserve",
         "liquidity", "covenant", "collateral", "custody", "mandate"]


def make_prompt(n_tokens):
    """Randomised, so prefix caching cannot silently inflate the numbers.
    English runs about 1.3 tokens per word."""
    return " ".join(random.choice(WORDS) for _ in range(int(n_tokens / 1.3)))


async def one_request(session, url, model, prompt, max_tokens, out):
    payload = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "min_tokens": max_tokens,   # fixed length, so levels are comparable
        "ignore_eos": True,         # same reason
        "temperature": 0.0,
        "stream": True,
    }
    t0 = time.perf_counter()
    t_first, n = None, 0
    try:
        async with session.post(url, json=payload) as resp:
            if resp.status != 200:
                out.append({"error": "HTTP %d: %s" % (resp.status,
                                                      (await resp.text())[:200])})
                return
            async for raw in resp.content:
                line = raw.decode("utf-8").strip()
                if not line.startswith("data: "):
                    continue
                body = line[6:]
                if body == "[DONE]":
                    break
                if not json.loads(body)["choices"][0].get("text"):
                    continue
                if t_first is None:
                    t_first = time.perf_counter()
                n += 1
    except Exception as e:
        out.append({"error": repr(e)})
        return

    t_end = time.perf_counter()
    if t_first is None or n < 2:
        out.append({"error": "no tokens returned"})
        return
    out.append({
        "ttft_ms": (t_first - t0) * 1e3,
        "tpot_ms": (t_end - t_first) * 1e3 / (n - 1),
        "e2e_s": t_end - t0,
        "tokens": n,
    })


async def run_level(url, model, conc, p_tok, o_tok, rounds):
    results = []
    conn = aiohttp.TCPConnector(limit=conc + 8)
    timeout = aiohttp.ClientTimeout(total=900)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as s:
        # warm the server at this level, throw the numbers away
        await asyncio.gather(*[
            one_request(s, url, model, make_prompt(p_tok), 16, [])
            for _ in range(min(conc, 4))])
        t0 = time.perf_counter()
        for _ in range(rounds):
            await asyncio.gather(*[
                one_request(s, url, model, make_prompt(p_tok), o_tok, results)
                for _ in range(conc)])
        wall = time.perf_counter() - t0
    return results, wall


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(int(len(xs) * p / 100), len(xs) - 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", default="http://localhost:8000")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--output-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--levels", default="1,2,4,8,16,24,32,48,64,96,128")
    ap.add_argument("--out", default="serving_sweep.json")
    args = ap.parse_args()

    url = args.base_url.rstrip("/") + "/v1/completions"
    print("%5s %9s %9s %9s %9s %9s %4s"
          % ("conc", "tok/s", "TTFTp50", "TTFTp99", "TPOTp50", "TPOTp99", "err"))

    rows = []
    for c in [int(x) for x in args.levels.split(",")]:
        res, wall = asyncio.run(run_level(url, args.model, c, args.prompt_tokens,
                                          args.output_tokens, args.rounds))
        ok = [r for r in res if "error" not in r]
        if not ok:
            print("%5d  all failed: %s" % (c, res[0]["error"][:60]))
            break
        ttft = [r["ttft_ms"] for r in ok]
        tpot = [r["tpot_ms"] for r in ok]
        row = {
            "concurrency": c,
            "throughput_tok_s": sum(r["tokens"] for r in ok) / wall,
            "ttft_p50_ms": pct(ttft, 50), "ttft_p99_ms": pct(ttft, 99),
            "tpot_p50_ms": pct(tpot, 50), "tpot_p99_ms": pct(tpot, 99),
            "e2e_p50_s": pct([r["e2e_s"] for r in ok], 50),
            "errors": len(res) - len(ok), "completed": len(ok),
        }
        rows.append(row)
        print("%5d %9.1f %9.0f %9.0f %9.1f %9.1f %4d"
              % (c, row["throughput_tok_s"], row["ttft_p50_ms"],
                 row["ttft_p99_ms"], row["tpot_p50_ms"], row["tpot_p99_ms"],
                 row["errors"]))

    if not rows:
        print("no successful levels. Is the server running?")
        return

    best = max(rows, key=lambda r: r["throughput_tok_s"])
    base = rows[0]["tpot_p50_ms"]
    knee = next((r for r in rows if r["tpot_p50_ms"] > 1.5 * base), None)
    print("\npeak throughput   %.0f tok/s at concurrency %d"
          % (best["throughput_tok_s"], best["concurrency"]))
    print("batch-1 TPOT      %.1f ms (%.0f tok/s for a single user)"
          % (base, 1000 / base))
    print("TPOT +50%% at      %s"
          % ("concurrency %d" % knee["concurrency"] if knee
             else "never reached. Raise --levels, you did not saturate."))

    json.dump({"config": vars(args), "rows": rows}, open(args.out, "w"), indent=2)
    print("wrote " + args.out)


if __name__ == "__main__":
    main()
