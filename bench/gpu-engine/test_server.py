"""Tests of the HTTP/SSE/metrics/log layer of server.py against a fake engine (no GPU, no torch).

Run: /usr/bin/python3 bench/gpu-engine/test_server.py   (Debian: apt-get install python3-aiohttp
python3-prometheus-client). The fake engine emits token ids 1000, 1001, ... one every few ms, admits at most
`max_running` requests at a time, and can put EOS at chosen positions, fail, or report a preemption.
"""

import asyncio
import io
import json
import os
import re
import sys
import unittest
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from aiohttp.test_utils import AioHTTPTestCase  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import shapes  # noqa: E402
from engine_api import EngineOutput, EngineSnapshot  # noqa: E402
from server import EventLog, Server  # noqa: E402

EOS = 2
LOG_LINE = re.compile(r'^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (INFO|WARN|ERROR) [a-z_]+'
                      r'( [a-z0-9_]+=("([^"\\]|\\.)*"|[^ "]+))*$')
FIELD = re.compile(r'([a-z0-9_]+)=("(?:[^"\\]|\\.)*"|[^ "]+)')


class FakeTokenizer:
    """One token per whitespace-separated word; token t reads as ' t<t>', EOS as '<eos>'."""

    name = "fake"
    eos_token_id = EOS
    vocab_size = 5000

    def encode(self, text):
        return [100 + len(w) for w in text.split()]

    def encode_chat(self, messages):
        ids = []
        for m in messages:
            ids += [3] + self.encode(m["role"] + " " + m["content"]) + [4]
        return ids + [3, 5]

    def token_text(self, t):
        return "<eos>" if t == EOS else f" t{t}"


class FakeEngine:
    name = "fake-engine"
    version = "9.9.9"

    def __init__(self, max_running=64, interval_s=0.002, eos_at=(), fail_after=None, kv_blocks_total=100,
                 blocks_per_request=3):
        self.max_running = max_running
        self.interval_s = interval_s
        self.eos_at = set(eos_at)
        self.fail_after = fail_after
        self.kv_blocks_total = kv_blocks_total
        self.blocks_per_request = blocks_per_request
        self.submitted = []  # (req_id, prompt_ids, max_new_tokens, use_eos)
        self.cancelled = []
        self.running = {}
        self.waiting = deque()
        self.steps = 0
        self.dead = False
        self.closed = False
        self.preempt_cb = None
        self.loop = None

    # the interface server.py uses
    def attach(self, loop):
        self.loop = loop

    def set_preempt_callback(self, fn):
        self.preempt_cb = fn

    def alive(self):
        return not self.dead

    def submit(self, req_id, prompt_ids, max_new_tokens, use_eos, on_output):
        self.submitted.append((req_id, list(prompt_ids), max_new_tokens, use_eos))
        self.waiting.append((req_id, max_new_tokens, use_eos, on_output))
        self._schedule()

    def cancel(self, req_id):
        self.cancelled.append(req_id)
        task = self.running.pop(req_id, None)
        if task is not None:
            task.cancel()
        self.waiting = deque(w for w in self.waiting if w[0] != req_id)
        self._schedule()

    def snapshot(self):
        return EngineSnapshot(len(self.running), len(self.waiting), self.kv_blocks_total,
                              len(self.running) * self.blocks_per_request, self.steps)

    def close(self):
        self.closed = True

    # fake generation
    def _schedule(self):
        while self.waiting and len(self.running) < self.max_running:
            req_id, max_new, use_eos, on_output = self.waiting.popleft()
            self.running[req_id] = asyncio.ensure_future(self._run(req_id, max_new, use_eos, on_output))

    async def _run(self, req_id, max_new, use_eos, on_output):
        tokens = []
        try:
            for i in range(max_new):
                await asyncio.sleep(self.interval_s)
                self.steps += 1
                if self.fail_after is not None and i == self.fail_after:
                    on_output(EngineOutput(list(tokens), True, "CUDA out of memory (fake)"))
                    return
                tok = EOS if i in self.eos_at else 1000 + i
                tokens.append(tok)
                finished = (use_eos and tok == EOS) or len(tokens) == max_new
                on_output(EngineOutput(list(tokens), finished, None, 0.0015 if i == 0 else None))
                if finished:
                    return
        finally:
            if self.running.get(req_id) is asyncio.current_task():
                del self.running[req_id]
                self._schedule()

    def preempt(self, req_id, mode):
        self.preempt_cb(req_id, mode, 10, 5)


def sse_events(text):
    """data: payloads of an SSE body, [DONE] included as the string."""
    out = []
    for block in text.split("\n\n"):
        block = block.strip()
        if not block:
            continue
        assert block.startswith("data: "), block
        payload = block[len("data: "):]
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def samples(metrics_text):
    """{(sample name, frozen labels): value} from a Prometheus text exposition."""
    out = {}
    for fam in text_string_to_metric_families(metrics_text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def log_events(log_text, event=None):
    rows = []
    for line in log_text.splitlines():
        m = re.match(r'^\S+ (\S+) (\S+)(.*)$', line)
        fields = {k: (v[1:-1] if v.startswith('"') else v) for k, v in FIELD.findall(m.group(3))}
        if event is None or m.group(2) == event:
            rows.append((m.group(1), m.group(2), fields))
    return rows


class ServerTestCase(AioHTTPTestCase):
    model = "test-model"
    max_model_len = 64

    def make_engine(self):
        return FakeEngine()

    async def get_application(self):
        self.engine = self.make_engine()
        self.logbuf = io.StringIO()
        self.server = Server(self.engine, FakeTokenizer(), model_name=self.model, max_model_len=self.max_model_len,
                             log=EventLog(self.logbuf), info_labels={"model_shape": "1b"},
                             stats_interval_s=0.05)
        return self.server.app()

    async def post(self, path, body):
        resp = await self.client.post(path, data=json.dumps(body) if not isinstance(body, str) else body)
        return resp.status, await resp.text()

    async def stream(self, path, body):
        status, text = await self.post(path, dict(body, stream=True))
        self.assertEqual(status, 200, text)
        return sse_events(text)

    async def metrics(self):
        resp = await self.client.get("/metrics")
        self.assertEqual(resp.status, 200)
        return samples(await resp.text())

    def log_text(self):
        return self.logbuf.getvalue()


class TestRoutes(ServerTestCase):
    async def test_models_version_health(self):
        resp = await self.client.get("/v1/models")
        body = await resp.json()
        self.assertEqual([m["id"] for m in body["data"]], ["test-model"])
        self.assertEqual(body["data"][0]["max_model_len"], 64)
        resp = await self.client.get("/version")
        body = await resp.json()
        self.assertEqual((body["version"], body["engine"]), ("9.9.9", "fake-engine"))
        resp = await self.client.get("/health")
        self.assertEqual(resp.status, 200)
        self.engine.dead = True
        resp = await self.client.get("/health")
        self.assertEqual(resp.status, 503)
        status, text = await self.post("/v1/completions", {"prompt": "a b", "max_tokens": 2})
        self.assertEqual(status, 503, text)

    async def test_tokenize(self):
        status, text = await self.post("/tokenize", {"prompt": "one two three"})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(text), {"tokens": [103, 103, 105], "count": 3, "max_model_len": 64,
                                            "token_strs": None})
        status, text = await self.post("/tokenize", {"messages": [{"role": "user", "content": "hi there"}]})
        body = json.loads(text)
        # [3] + user hi there + [4] + [3, 5]
        self.assertEqual(body["tokens"], [3, 104, 102, 105, 4, 3, 5])
        self.assertEqual(body["count"], 7)


class TestStreaming(ServerTestCase):
    async def test_completion_stream_with_usage(self):
        events = await self.stream("/v1/completions", {"model": "test-model", "prompt": "a b c d e", "max_tokens": 6,
                                                       "min_tokens": 6, "ignore_eos": True,
                                                       "stream_options": {"include_usage": True}})
        self.assertEqual(events[-1], "[DONE]")
        usage = events[-2]
        self.assertEqual(usage["choices"], [])
        self.assertEqual(usage["usage"], {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11})
        chunks = events[:-2]
        self.assertEqual(len(chunks), 6)
        self.assertEqual([c["choices"][0]["text"] for c in chunks], [f" t{1000 + i}" for i in range(6)])
        self.assertEqual([c["choices"][0]["finish_reason"] for c in chunks], [None] * 5 + ["length"])
        self.assertTrue(all(c["object"] == "text_completion" and c["model"] == "test-model" for c in chunks))
        self.assertEqual(len({c["id"] for c in events[:-1]}), 1)
        self.assertEqual(self.engine.submitted[0][1:], ([101] * 5, 6, False))

    async def test_no_usage_chunk_without_include_usage(self):
        events = await self.stream("/v1/completions", {"prompt": "a", "max_tokens": 3})
        self.assertEqual(len(events), 4)
        self.assertNotIn("usage", events[-2])

    async def test_chat_stream_sends_role_first(self):
        events = await self.stream("/v1/chat/completions", {"messages": [{"role": "user", "content": "hello"}],
                                                            "max_tokens": 4, "ignore_eos": True,
                                                            "stream_options": {"include_usage": True}})
        first = events[0]
        self.assertEqual(first["object"], "chat.completion.chunk")
        self.assertEqual(first["choices"][0]["delta"], {"role": "assistant", "content": ""})
        content = [e["choices"][0]["delta"]["content"] for e in events[1:-2]]
        self.assertEqual(content, [" t1000", " t1001", " t1002", " t1003"])
        self.assertEqual(events[-2]["usage"], {"prompt_tokens": 6, "completion_tokens": 4, "total_tokens": 10})
        self.assertEqual(events[-3]["choices"][0]["finish_reason"], "length")

    async def test_engine_eos_stops_with_stop(self):
        self.engine.eos_at = {3}
        events = await self.stream("/v1/completions", {"prompt": "x", "max_tokens": 10,
                                                       "stream_options": {"include_usage": True}})
        self.assertTrue(self.engine.submitted[0][3], "EOS should be left to the engine")
        texts = [e["choices"][0]["text"] for e in events[:-2]]
        self.assertEqual(texts, [" t1000", " t1001", " t1002", ""])
        self.assertEqual(events[-3]["choices"][0]["finish_reason"], "stop")
        self.assertEqual(events[-2]["usage"]["completion_tokens"], 4)  # the EOS counts, as in vLLM

    async def test_ignore_eos_gives_fixed_length(self):
        self.engine.eos_at = {3}
        events = await self.stream("/v1/completions", {"prompt": "x", "max_tokens": 8, "ignore_eos": True,
                                                       "stream_options": {"include_usage": True}})
        self.assertFalse(self.engine.submitted[0][3])
        self.assertEqual(events[-2]["usage"]["completion_tokens"], 8)
        self.assertEqual(events[3]["choices"][0]["text"], "<eos>")
        self.assertEqual(events[-3]["choices"][0]["finish_reason"], "length")

    async def test_min_tokens_stops_at_first_eos_after_minimum(self):
        self.engine.eos_at = {2, 6}
        events = await self.stream("/v1/completions", {"prompt": "x", "max_tokens": 20, "min_tokens": 5,
                                                       "stream_options": {"include_usage": True}})
        self.assertFalse(self.engine.submitted[0][3], "the engine must not stop on the early EOS")
        texts = [e["choices"][0]["text"] for e in events[:-2]]
        self.assertEqual(texts, [" t1000", " t1001", "<eos>", " t1003", " t1004", " t1005", ""])
        self.assertEqual(events[-3]["choices"][0]["finish_reason"], "stop")
        self.assertEqual(events[-2]["usage"]["completion_tokens"], 7)
        rid = self.engine.submitted[0][0]
        self.assertIn(rid, self.engine.cancelled, "the engine request must be cancelled after the stop")

    async def test_engine_error_mid_stream(self):
        self.engine.fail_after = 2
        events = await self.stream("/v1/completions", {"prompt": "x", "max_tokens": 10,
                                                       "stream_options": {"include_usage": True}})
        self.assertEqual(events[-1], "[DONE]")
        self.assertIn("fake", events[-2]["error"]["message"])
        self.assertEqual(len(events), 4)  # two tokens, the error, [DONE]; no usage chunk
        finish = log_events(self.log_text(), "finish")
        self.assertEqual(finish[0][0], "ERROR")
        self.assertEqual(finish[0][2]["reason"], "error")

    async def test_client_disconnect_cancels(self):
        self.engine.interval_s = 0.05
        resp = await self.client.post("/v1/completions", data=json.dumps({"prompt": "x", "max_tokens": 60,
                                                                          "stream": True}))
        line = await resp.content.readline()
        self.assertTrue(line.startswith(b"data: "), line)
        resp.close()
        rid = self.engine.submitted[0][0]
        for _ in range(200):
            if rid in self.engine.cancelled and log_events(self.log_text(), "finish"):
                break
            await asyncio.sleep(0.01)
        self.assertIn(rid, self.engine.cancelled)
        self.assertEqual(log_events(self.log_text(), "finish")[0][2]["reason"], "abort")
        m = await self.metrics()
        self.assertEqual(m[("tfcb:request_success_total", (("finished_reason", "abort"),))], 1)


class TestNonStreaming(ServerTestCase):
    async def test_completion(self):
        status, text = await self.post("/v1/completions", {"prompt": [7, 8, 9], "max_tokens": 3})
        self.assertEqual(status, 200, text)
        body = json.loads(text)
        self.assertEqual(body["choices"][0]["text"], " t1000 t1001 t1002")
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(body["usage"], {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6})

    async def test_chat(self):
        status, text = await self.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}],
                                                                "max_tokens": 2})
        body = json.loads(text)
        self.assertEqual(body["object"], "chat.completion")
        self.assertEqual(body["choices"][0]["message"], {"role": "assistant", "content": " t1000 t1001"})

    async def test_chat_default_max_tokens_fills_context(self):
        status, text = await self.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}]})
        self.assertEqual(status, 200, text)
        self.assertEqual(self.engine.submitted[0][2], 64 - 6)


class TestValidation(ServerTestCase):
    cases = [
        ("too long", {"prompt": " ".join(["w"] * 60), "max_tokens": 10}, 400, "max_tokens",
         "maximum context length is 64 tokens"),
        ("min above max", {"prompt": "a", "max_tokens": 2, "min_tokens": 3}, 400, "min_tokens", "min_tokens"),
        ("bad bool", {"prompt": "a", "ignore_eos": "yes"}, 400, "ignore_eos", "boolean"),
        ("bad int", {"prompt": "a", "max_tokens": "5"}, 400, "max_tokens", "integer"),
        ("zero max", {"prompt": "a", "max_tokens": 0}, 400, "max_tokens", "at least 1"),
        ("n", {"prompt": "a", "n": 2}, 400, "n", "not supported"),
        ("stop", {"prompt": "a", "stop": ["x"]}, 400, "stop", "not supported"),
        ("unknown model", {"prompt": "a", "model": "gpt-9"}, 404, "model", "does not exist"),
        ("no prompt", {"max_tokens": 2}, 400, "prompt", "required"),
        ("empty prompt", {"prompt": ""}, 400, "prompt", "empty"),
        ("bad ids", {"prompt": [1, 99999]}, 400, "prompt", "token ids"),
    ]

    async def test_rejections(self):
        for name, body, status, param, needle in self.cases:
            with self.subTest(name):
                got_status, text = await self.post("/v1/completions", body)
                self.assertEqual(got_status, status, text)
                err = json.loads(text)
                self.assertEqual((err["object"], err["code"], err["param"]), ("error", status, param))
                self.assertIn(needle, err["message"])
        self.assertEqual(self.engine.submitted, [])
        rejected = log_events(self.log_text(), "request")
        self.assertEqual(len(rejected), len(self.cases))
        self.assertTrue(all(level == "ERROR" for level, _, _ in rejected))

    async def test_invalid_json(self):
        status, text = await self.post("/v1/completions", "{not json")
        self.assertEqual(status, 400)
        self.assertIn("not valid JSON", json.loads(text)["message"])


class TestMetricsAndLog(ServerTestCase):
    EXPECTED_SAMPLES = {
        "tfcb:num_requests_running", "tfcb:num_requests_waiting", "tfcb:kv_cache_usage_perc",
        "tfcb:kv_blocks_total", "tfcb:kv_blocks_used", "tfcb:engine_steps_total", "tfcb:prompt_tokens_total",
        "tfcb:generation_tokens_total", "tfcb:request_success_total", "tfcb:num_preemptions_total",
        "tfcb:num_cpu_offloads_total", "tfcb:engine_info",
    } | {f"tfcb:{h}_{s}" for h in ("time_to_first_token_seconds", "time_per_output_token_seconds",
                                   "e2e_request_latency_seconds", "request_queue_time_seconds")
         for s in ("bucket", "sum", "count")}

    async def test_names_and_counts(self):
        for _ in range(3):
            await self.stream("/v1/completions", {"prompt": "a b c d e", "max_tokens": 4, "ignore_eos": True})
        resp = await self.client.get("/metrics")
        text = await resp.text()
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
        self.assertEqual(names, self.EXPECTED_SAMPLES)
        m = samples(text)
        self.assertEqual(m[("tfcb:prompt_tokens_total", ())], 15)
        self.assertEqual(m[("tfcb:generation_tokens_total", ())], 12)
        self.assertEqual(m[("tfcb:time_to_first_token_seconds_count", ())], 3)
        self.assertEqual(m[("tfcb:time_per_output_token_seconds_count", ())], 3)
        self.assertEqual(m[("tfcb:request_queue_time_seconds_count", ())], 3)
        self.assertAlmostEqual(m[("tfcb:request_queue_time_seconds_sum", ())], 3 * 0.0015)
        self.assertEqual(m[("tfcb:request_success_total", (("finished_reason", "length"),))], 3)
        self.assertEqual(m[("tfcb:engine_steps_total", ())], 12)
        self.assertEqual(m[("tfcb:kv_blocks_total", ())], 100)
        info = [k for k in m if k[0] == "tfcb:engine_info"][0]
        self.assertEqual(dict(info[1]), {"engine": "fake-engine", "version": "9.9.9", "model": "test-model",
                                         "model_shape": "1b"})
        # TPOT is (last - first) / (n - 1) per request: with tokens ~2 ms apart it is well under 1 s
        self.assertLess(m[("tfcb:time_per_output_token_seconds_sum", ())] / 3, 1.0)

        finish = log_events(self.log_text(), "finish")
        self.assertEqual(len(finish), 3)
        for _, _, f in finish:
            self.assertEqual((f["prompt_tokens"], f["completion_tokens"], f["reason"]), ("5", "4", "length"))
            self.assertLessEqual(float(f["ttft_ms"]), float(f["e2e_ms"]))
        admit = log_events(self.log_text(), "admit")
        self.assertEqual([a[2]["max_tokens"] for a in admit], ["4"] * 3)

    async def test_concurrent_requests_batch_and_queue(self):
        self.engine.max_running = 4
        self.engine.interval_s = 0.01
        body = {"prompt": "a b", "max_tokens": 15, "ignore_eos": True, "stream_options": {"include_usage": True}}
        seen = []

        async def poll():
            while True:
                m = await self.metrics()
                seen.append((m[("tfcb:num_requests_running", ())], m[("tfcb:num_requests_waiting", ())],
                             m[("tfcb:kv_cache_usage_perc", ())]))
                await asyncio.sleep(0.01)

        poller = asyncio.ensure_future(poll())
        results = await asyncio.gather(*[self.stream("/v1/completions", body) for _ in range(8)])
        poller.cancel()
        self.assertTrue(all(r[-2]["usage"]["completion_tokens"] == 15 for r in results))
        self.assertEqual(max(s[0] for s in seen), 4)
        self.assertEqual(max(s[1] for s in seen), 4)
        self.assertAlmostEqual(max(s[2] for s in seen), 0.12)
        await asyncio.sleep(0.15)  # a stats line while busy and one after
        stats = log_events(self.log_text(), "stats")
        self.assertTrue(any(int(f["running"]) > 1 for _, _, f in stats), stats)
        self.assertEqual(stats[-1][2]["running"], "0")
        self.assertEqual(stats[-1][2]["generation_tokens_total"], "120")
        self.assertEqual(stats[-1][2]["finished_total"], "8")

    async def test_preemption_counters_and_lines(self):
        self.engine.preempt("cmpl-a", "recompute")
        self.engine.preempt("cmpl-b", "cpu_offload")
        m = await self.metrics()
        self.assertEqual(m[("tfcb:num_preemptions_total", ())], 2)
        self.assertEqual(m[("tfcb:num_cpu_offloads_total", ())], 1)
        rows = log_events(self.log_text(), "preempt")
        self.assertEqual([(r[0], r[2]["req"], r[2]["mode"], r[2]["total_preemptions"]) for r in rows],
                         [("WARN", "cmpl-a", "recompute", "1"), ("WARN", "cmpl-b", "cpu_offload", "2")])

    async def test_every_log_line_has_the_documented_shape(self):
        await self.stream("/v1/completions", {"prompt": "a", "max_tokens": 3})
        await self.post("/v1/completions", {"prompt": "a", "max_tokens": 0})
        self.engine.preempt("cmpl-z", "recompute")
        await asyncio.sleep(0.12)
        lines = self.log_text().splitlines()
        self.assertGreaterEqual(len(lines), 5)
        for line in lines:
            self.assertRegex(line, LOG_LINE)


class TestEventLog(unittest.TestCase):
    def test_format_and_quoting(self):
        buf = io.StringIO()
        log = EventLog(buf, clock=lambda: 1764504000.123)
        log.warn("preempt", req="cmpl-1", msg='say "hi"\nthere', ok=True, x=None, f=0.25, empty="")
        self.assertEqual(buf.getvalue(), '2025-11-30T12:00:00.123Z WARN preempt req=cmpl-1 '
                                         'msg="say \\"hi\\"\\nthere" ok=true x=- f=0.25 empty=""\n')
        self.assertRegex(buf.getvalue().rstrip("\n"), LOG_LINE)


class _State:
    def __init__(self, prompt, generated, true_initial=0):
        self.initial_tokens = list(range(prompt))
        self.generated_tokens = list(range(generated))
        self._true_initial_tokens = true_initial
        self.is_cpu_offloaded = False


class _FakeOffloadingManager:
    """Evicts like transformers 5.17: victims leave active_requests and come back in waiting_requests."""

    def __init__(self, sched, victims):
        self.sched = sched
        self.victims = victims  # [(request_id, "cpu" | "reset")]

    def offload_requests(self):
        for rid, how in self.victims:
            old = self.sched.active_requests.pop(rid)
            if how == "cpu":
                old.is_cpu_offloaded = True
                self.sched.waiting_requests[rid] = old
            else:  # soft reset: generated tokens become part of an equivalent prompt
                new = _State(len(old.initial_tokens) + len(old.generated_tokens), 0, len(old.initial_tokens))
                self.sched.waiting_requests[rid] = new
        return len(self.victims)


class TestPreemptHook(unittest.TestCase):
    def test_evictions_are_reported_with_mode_and_lengths(self):
        import engine_cb  # torch is imported lazily there: this part runs without it

        sched = type("Sched", (), {})()
        sched.active_requests = {"a": _State(300, 40), "b": _State(300, 7), "c": _State(120, 3, true_initial=100),
                                 "d": _State(50, 1)}
        sched.waiting_requests = {}
        om = _FakeOffloadingManager(sched, [("a", "reset"), ("b", "cpu"), ("c", "reset")])
        bp = type("BP", (), {})()
        bp.scheduler, bp.offloading_manager = sched, om
        eng = object.__new__(engine_cb.TransformersCBEngine)
        seen = []
        eng._preempt_cb = lambda *a: seen.append(a)
        eng._install_hooks(bp)
        self.assertEqual(eng.preempt_hook, "offloading_manager.offload_requests")
        self.assertEqual(om.offload_requests(), 3)
        # c was already soft-reset once: 100 prompt tokens, 20 + 3 generated
        self.assertEqual(sorted(seen), [("a", "recompute", 300, 40), ("b", "cpu_offload", 300, 7),
                                        ("c", "recompute", 100, 23)])
        self.assertEqual(set(sched.active_requests), {"d"})

    def test_no_offloading_manager(self):
        import engine_cb

        bp = type("BP", (), {})()
        bp.scheduler = type("Sched", (), {"active_requests": {}, "waiting_requests": {}})()
        bp.offloading_manager = None
        eng = object.__new__(engine_cb.TransformersCBEngine)
        eng._install_hooks(bp)
        self.assertEqual(eng.preempt_hook, "none")


class TestShapes(unittest.TestCase):
    def test_parameter_counts_match_the_published_models(self):
        # Llama-3.1-8B and Llama-3.2-1B as published: 8,030,261,248 and 1,235,814,400 parameters.
        self.assertEqual(shapes.parameter_count(shapes.SHAPES["8b"]), 8030261248)
        self.assertEqual(shapes.parameter_count(shapes.SHAPES["1b"]), 1235814400)

    def test_kv_bytes_per_token(self):
        self.assertEqual(shapes.kv_bytes_per_token(shapes.SHAPES["8b"]), 2 * 32 * 8 * 128 * 2)  # 128 KiB
        self.assertEqual(shapes.kv_bytes_per_token(shapes.SHAPES["1b"]), 2 * 16 * 8 * 64 * 2)  # 32 KiB

    def test_hf_config(self):
        cfg = shapes.hf_config("8b")
        self.assertEqual(cfg["architectures"], ["LlamaForCausalLM"])
        self.assertEqual((cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"],
                          cfg["vocab_size"], cfg["tie_word_embeddings"]), (4096, 32, 14336, 128256, False))
        self.assertTrue(shapes.hf_config("1b")["tie_word_embeddings"])
        self.assertEqual(cfg["_headroom"]["weights"], "random")


if __name__ == "__main__":
    unittest.main()
