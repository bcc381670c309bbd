"""Helpers for smoke.sh: print transformers' continuous-batching knobs, and check a running server.

  python smoke_client.py knobs                      what the installed transformers offers (no GPU work)
  python smoke_client.py check --base URL [...]     requests against a running server; exit 1 on a failed check
  python smoke_client.py engine [server flags]      the engine alone, no HTTP server: TTFT/TPOT for 1 and 8
                                                    requests, to tell engine time from server time
"""

import argparse
import asyncio
import dataclasses
import inspect
import json
import random
import sys
import time


def knobs():
    import torch
    import transformers
    import transformers.generation.continuous_batching as cb

    print(f"transformers {transformers.__version__} torch {torch.__version__} cuda {torch.version.cuda} "
          f"device {torch.cuda.get_device_name() if torch.cuda.is_available() else '-'}")
    try:
        from transformers import ContinuousBatchingConfig
    except ImportError:
        from transformers.generation.configuration_utils import ContinuousBatchingConfig
    print("ContinuousBatchingConfig fields:")
    for f in dataclasses.fields(ContinuousBatchingConfig):
        default = f.default if f.default is not dataclasses.MISSING else "(factory)"
        print(f"  {f.name} = {default!r}")
    from transformers.generation.continuous_batching import continuous_api
    from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

    print("SCHEDULER_MAPPING:", {k: v.__name__ for k, v in SCHEDULER_MAPPING.items()})
    mgr = continuous_api.ContinuousBatchingManager
    for name in ("add_request", "stop", "warmup", "register_result_handler", "cancel_request", "get_result",
                 "is_running"):
        fn = getattr(mgr, name, None)
        print(f"ContinuousBatchingManager.{name}{inspect.signature(fn) if fn else ' MISSING'}")
    for modname, clsname in (("cache", "PagedAttentionCache"), ("scheduler", "FIFOScheduler"),
                             ("offloading_manager", "OffloadingManager"), ("requests", "GenerationOutput")):
        try:
            mod = __import__(f"transformers.generation.continuous_batching.{modname}", fromlist=[clsname])
            cls = getattr(mod, clsname)
            methods = sorted(n for n, v in vars(cls).items() if callable(v) or isinstance(v, property))
            print(f"{clsname}{inspect.signature(cls.__init__)}\n  methods: {', '.join(methods)}")
        except Exception as e:  # noqa: BLE001 -- this is a report
            print(f"{modname}.{clsname}: {e!r}")
    src = inspect.getsource(continuous_api.ContinuousBatchProcessor.prepare_next_batch)
    print("prepare_next_batch lines about eviction:")
    for line in src.splitlines():
        if "offload" in line or "schedule_batch" in line or "evict" in line:
            print("  " + line.strip())
    print("exported from continuous_batching:", ", ".join(n for n in dir(cb) if not n.startswith("_")))
    try:
        from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available

        print(f"flash_attn_2 {is_flash_attn_2_available()} flash_attn_3 {is_flash_attn_3_available()}")
    except Exception as e:  # noqa: BLE001
        print(f"flash-attn check: {e!r}")


# --------------------------------------------------------------------------------------- check ---

class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)
    print(f"  ok: {what}")


async def tokenize(session, base, text):
    async with session.post(f"{base}/tokenize", json={"prompt": text}) as r:
        return (await r.json())["count"]


async def prompt_of(session, base, target, rng):
    """Random words tokenized to about `target` tokens (no two prompts share a prefix)."""
    words = max(target // 2, 1)
    text = ""
    for _ in range(4):
        text = " ".join(f"{rng.choice('bcdfghklmnprstvz')}{rng.randrange(10**6)}" for _ in range(words))
        n = await tokenize(session, base, text)
        if abs(n - target) <= max(target // 50, 2):
            break
        words = max(int(words * target / n), 1)
    return text, await tokenize(session, base, text)


async def stream(session, base, path, body):
    """One streaming request: returns dict with chunks, texts, usage, ttft_s, tpot_s, first event."""
    t0 = time.perf_counter()
    out = {"texts": [], "usage": None, "events": 0, "finish": None, "first": None, "error": None}
    times = []
    async with session.post(f"{base}{path}", json=dict(body, stream=True,
                                                       stream_options={"include_usage": True})) as r:
        if r.status != 200:
            raise Failed(f"{path} returned {r.status}: {await r.text()}")
        async for raw in r.content:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            ev = json.loads(data)
            out["events"] += 1
            if out["first"] is None:
                out["first"] = ev
            if "error" in ev:
                out["error"] = ev["error"]
                continue
            if ev.get("usage"):
                out["usage"] = ev["usage"]
            for ch in ev.get("choices", []):
                text = ch.get("text") if "text" in ch else ch.get("delta", {}).get("content")
                if ch.get("finish_reason"):
                    out["finish"] = ch["finish_reason"]
                if text:
                    out["texts"].append(text)
                    times.append(time.perf_counter())
    out["ttft_s"] = times[0] - t0 if times else None
    out["tpot_s"] = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else None
    out["e2e_s"] = time.perf_counter() - t0
    return out


async def metrics(session, base):
    async with session.get(f"{base}/metrics") as r:
        text = await r.text()
    vals = {}
    for line in text.splitlines():
        if line.startswith("tfcb:") and "_bucket" not in line:
            name, _, value = line.rpartition(" ")
            vals[name] = float(value)
    return vals


async def concurrent(session, base, n, prompt_tokens, max_tokens, rng, label):
    prompts = [await prompt_of(session, base, prompt_tokens, rng) for _ in range(n)]
    seen = {"running": 0, "waiting": 0, "kv": 0.0}
    before = await metrics(session, base)
    stop = asyncio.Event()

    async def poll():
        while not stop.is_set():
            m = await metrics(session, base)
            seen["running"] = max(seen["running"], m.get("tfcb:num_requests_running", 0))
            seen["waiting"] = max(seen["waiting"], m.get("tfcb:num_requests_waiting", 0))
            seen["kv"] = max(seen["kv"], m.get("tfcb:kv_cache_usage_perc", 0))
            await asyncio.sleep(0.02)

    poller = asyncio.ensure_future(poll())
    t0 = time.perf_counter()
    body = {"max_tokens": max_tokens, "min_tokens": max_tokens, "ignore_eos": True}
    results = await asyncio.gather(*[stream(session, base, "/v1/completions", dict(body, prompt=p))
                                     for p, _ in prompts])
    wall = time.perf_counter() - t0
    stop.set()
    await poller
    after = await metrics(session, base)
    pre = after.get("tfcb:num_preemptions_total", 0) - before.get("tfcb:num_preemptions_total", 0)
    gen = sum(r["usage"]["completion_tokens"] for r in results)
    print(f"{label}: {n} requests x ({prompt_tokens} prompt + {max_tokens} out) in {wall:.2f}s, "
          f"{gen / wall:.0f} tok/s; max running {seen['running']:.0f}, max waiting {seen['waiting']:.0f}, "
          f"max kv usage {seen['kv']:.3f}, preemptions {pre:.0f}")
    for i, r in enumerate(results):
        print(f"  req {i}: prompt {r['usage']['prompt_tokens']} (tokenize {prompts[i][1]}) completion "
              f"{r['usage']['completion_tokens']} chunks {len(r['texts'])} ttft {r['ttft_s'] * 1e3:.1f} ms "
              f"tpot {r['tpot_s'] * 1e3:.2f} ms")
    for i, r in enumerate(results):
        expect(r["usage"]["completion_tokens"] == max_tokens and len(r["texts"]) == max_tokens
               and r["usage"]["prompt_tokens"] == prompts[i][1],
               f"{label} req {i}: usage and chunk counts match ({max_tokens} out)")
    return seen, pre


async def check(args):
    import aiohttp

    rng = random.Random(1)
    base = args.base.rstrip("/")
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for path in ("/health", "/version", "/v1/models"):
            async with session.get(f"{base}{path}") as r:
                print(f"GET {path} -> {r.status} {(await r.text()).strip()[:300]}")
                expect(r.status == 200, f"{path} answers 200")
        text, n = await prompt_of(session, base, 100, rng)
        print(f"/tokenize: {n} tokens for {len(text.split())} words")

        r = await stream(session, base, "/v1/completions", {"prompt": text, "max_tokens": 32, "min_tokens": 32,
                                                           "ignore_eos": True})
        print(f"completion: ttft {r['ttft_s'] * 1e3:.1f} ms tpot {r['tpot_s'] * 1e3:.2f} ms usage {r['usage']} "
              f"text {''.join(r['texts'])[:80]!r}")
        expect(r["usage"] == {"prompt_tokens": n, "completion_tokens": 32, "total_tokens": n + 32},
               "completion usage = /tokenize count + 32")
        expect(len(r["texts"]) == 32 and r["finish"] == "length", "32 text chunks, finish_reason length")

        r = await stream(session, base, "/v1/chat/completions", {"messages": [{"role": "user", "content": text}],
                                                                "max_tokens": 16, "ignore_eos": True})
        print(f"chat: first event {json.dumps(r['first'])[:200]} usage {r['usage']}")
        expect(r["first"]["choices"][0]["delta"].get("role") == "assistant", "chat sends the role chunk first")
        expect(r["usage"]["completion_tokens"] == 16 and len(r["texts"]) == 16, "chat: 16 tokens, 16 chunks")

        async with session.post(f"{base}/v1/completions", json={"prompt": text, "max_tokens": 8,
                                                                "ignore_eos": True}) as resp:
            body = await resp.json()
        print(f"non-streaming: {json.dumps(body)[:300]}")
        expect(body["usage"]["completion_tokens"] == 8, "non-streaming usage")

        seen, _ = await concurrent(session, base, args.n, args.prompt_tokens, args.max_tokens, rng, "batch")
        expect(seen["running"] > 1, f"{args.n} concurrent requests batch (max running {seen['running']:.0f} > 1)")
        if args.wall_n:
            await concurrent(session, base, args.wall_n, args.wall_prompt_tokens, args.wall_max_tokens, rng,
                             "kv-wall")
        m = await metrics(session, base)
        print("final /metrics (no buckets):")
        for k, v in m.items():
            print(f"  {k} {v:g}")
        expect(m.get("tfcb:generation_tokens_total", 0) > 0, "generation tokens counted")


def engine_only(server_flags):
    """Drive ContinuousBatchingManager directly from this thread (no asyncio, no HTTP)."""
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import engine_cb
    import server

    args = server.parse_args(server_flags)
    engine = engine_cb.TransformersCBEngine(args, server.EventLog())
    mgr = engine.mgr
    rng = random.Random(2)
    try:
        for n, prompt_len, out_len in ((1, 200, 64), (8, 200, 64)):
            t0 = time.perf_counter()
            steps0 = getattr(mgr, "current_batch", 0)
            seen = {}
            for i in range(n):
                ids = [rng.randrange(100000) for _ in range(prompt_len)]
                mgr.add_request(ids, request_id=f"probe-{n}-{i}", max_new_tokens=out_len, streaming=True,
                                eos_token_id=-1)
            done = 0
            while done < n and time.perf_counter() - t0 < 120:
                out = mgr.get_result(timeout=1)
                if out is None:
                    continue
                times = seen.setdefault(out.request_id, [])
                while len(times) < len(out.generated_tokens):
                    times.append(time.perf_counter())
                if out.is_finished():
                    done += 1
            wall = time.perf_counter() - t0
            steps = getattr(mgr, "current_batch", 0) - steps0
            tpots = [(t[-1] - t[0]) / (len(t) - 1) for t in seen.values() if len(t) > 1]
            ttfts = [t[0] - t0 for t in seen.values() if t]
            print(f"engine only, {n} x ({prompt_len} + {out_len}): wall {wall:.2f}s, {steps} steps "
                  f"({wall / max(steps, 1) * 1e3:.1f} ms/step), ttft max {max(ttfts) * 1e3:.1f} ms, "
                  f"tpot mean {sum(tpots) / len(tpots) * 1e3:.2f} ms")
    finally:
        engine.close()


def main():
    if sys.argv[1:2] == ["engine"]:
        engine_only(sys.argv[2:])
        return 0
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("knobs")
    c = sub.add_parser("check")
    c.add_argument("--base", required=True)
    c.add_argument("--n", type=int, default=8)
    c.add_argument("--prompt-tokens", type=int, default=200)
    c.add_argument("--max-tokens", type=int, default=64)
    c.add_argument("--wall-n", type=int, default=0, help="also run this many requests meant to fill the KV cache")
    c.add_argument("--wall-prompt-tokens", type=int, default=300)
    c.add_argument("--wall-max-tokens", type=int, default=200)
    args = p.parse_args()
    if args.cmd == "knobs":
        knobs()
        return 0
    try:
        asyncio.run(check(args))
    except Failed as e:
        print(f"SMOKE FAILED: {e}")
        return 1
    print("SMOKE OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
