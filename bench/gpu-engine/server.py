"""OpenAI-compatible streaming server over an engine object (transformers' continuous batching on the GPU box).

This module is the thin translation layer: HTTP/SSE in the shape vLLM serves, Prometheus /metrics with the
`tfcb:` prefix, and one-event-per-line logs on stderr. It knows nothing about torch or transformers; the
engine is any object with this interface (engine_cb.TransformersCBEngine on the GPU box, a fake in the
tests):

    engine.name, engine.version                 strings for /version, the log and tfcb:engine_info
    engine.attach(loop)                         called once the asyncio loop runs
    engine.submit(req_id, prompt_ids, max_new_tokens, use_eos, on_output)
                                                queue a request; on_output(EngineOutput) is then called on the
                                                loop's thread with the cumulative generated ids, until
                                                finished or error. use_eos=False: the engine ignores EOS.
    engine.cancel(req_id)                       stop a request (no further output is needed)
    engine.snapshot() -> EngineSnapshot         running/waiting requests, KV blocks, steps; cheap, any thread
    engine.alive() -> bool
    engine.set_preempt_callback(fn)            fn(req_id, mode, prompt_tokens, generated_tokens), any thread
    engine.close()

Log format and metric names are documented in docs/gpu-engine.md; keep the two in step.
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

# prometheus_client reads this when imported: no `_created` series next to counters and histograms.
os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")

from aiohttp import web  # noqa: E402
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram  # noqa: E402
from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily  # noqa: E402

try:  # prometheus_client >= 0.17; older ones only read the environment variable above at import time
    from prometheus_client import disable_created_metrics  # noqa: E402

    disable_created_metrics()
except ImportError:
    import prometheus_client.metrics  # noqa: E402

    prometheus_client.metrics._use_created = False

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_api import EngineOutput, EngineSnapshot  # noqa: E402,F401 -- EngineSnapshot is part of the API

SERVER_VERSION = "0.1.0"
METRIC_PREFIX = "tfcb"


# Buckets in seconds: vLLM's, with finer steps at the low end where an H200 decodes a small model.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0)
TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15,
                0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                   120.0, 240.0, 480.0, 960.0)


# ----------------------------------------------------------------------------------------------- log --


def _fmt_value(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format(v, ".6g")
    s = str(v)
    if s == "" or any(c in s for c in ' "=\\\n\t'):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    return s


class EventLog:
    """One event per line: `<RFC 3339 UTC, ms>Z <LEVEL> <event> key=value ...`; values with spaces are quoted."""

    def __init__(self, stream=None, clock=time.time):
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._lock = threading.Lock()

    def line(self, level, event, fields):
        t = self._clock()
        ts = datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"
        parts = [ts, level, event]
        parts.extend(f"{k}={_fmt_value(v)}" for k, v in fields)
        text = " ".join(parts) + "\n"
        with self._lock:
            self._stream.write(text)
            self._stream.flush()

    def info(self, event, **fields):
        self.line("INFO", event, fields.items())

    def warn(self, event, **fields):
        self.line("WARN", event, fields.items())

    def error(self, event, **fields):
        self.line("ERROR", event, fields.items())


# ------------------------------------------------------------------------------------------- metrics --


class _EngineCollector:
    """Gauges read from the engine at scrape time, so /metrics is never stale."""

    def __init__(self, engine, prefix):
        self._engine = engine
        self._p = prefix

    def collect(self):
        s = self._engine.snapshot()
        p = self._p
        yield GaugeMetricFamily(f"{p}:num_requests_running", "Requests admitted by the scheduler (prefilling or "
                                "decoding, holding KV blocks).", value=s.running)
        yield GaugeMetricFamily(f"{p}:num_requests_waiting", "Requests queued, not yet admitted (including "
                                "preempted ones waiting to resume).", value=s.waiting)
        usage = s.kv_blocks_used / s.kv_blocks_total if s.kv_blocks_total else 0.0
        yield GaugeMetricFamily(f"{p}:kv_cache_usage_perc", "Fraction of KV cache blocks in use, 0..1.", value=usage)
        yield GaugeMetricFamily(f"{p}:kv_blocks_total", "KV cache blocks in the paged cache.",
                                value=s.kv_blocks_total)
        yield GaugeMetricFamily(f"{p}:kv_blocks_used", "KV cache blocks allocated to requests.",
                                value=s.kv_blocks_used)
        if s.steps is not None:
            yield CounterMetricFamily(f"{p}:engine_steps", "Batches run by the engine (forward passes).",
                                      value=s.steps)


class ServerMetrics:
    def __init__(self, engine, info_labels, prefix=METRIC_PREFIX):
        self.registry = CollectorRegistry()
        r = self.registry
        p = prefix
        self.prompt_tokens = Counter(f"{p}:prompt_tokens", "Prompt tokens of requests whose prefill finished.",
                                     registry=r)
        self.generation_tokens = Counter(f"{p}:generation_tokens", "Generated tokens sent to clients.", registry=r)
        self.request_success = Counter(f"{p}:request_success", "Finished requests by reason (stop, length, "
                                       "abort, error).", ["finished_reason"], registry=r)
        self.preemptions = Counter(f"{p}:num_preemptions", "Running requests evicted from the KV cache "
                                   "(CPU offload or recompute).", registry=r)
        self.cpu_offloads = Counter(f"{p}:num_cpu_offloads", "Preemptions whose KV blocks were copied to the "
                                    "CPU swap pool instead of being recomputed.", registry=r)
        self.ttft = Histogram(f"{p}:time_to_first_token_seconds", "Arrival of the request to its first token.",
                              buckets=TTFT_BUCKETS, registry=r)
        self.tpot = Histogram(f"{p}:time_per_output_token_seconds", "Per request: (last token - first token) / "
                              "(tokens - 1), requests with at least 2 tokens.", buckets=TPOT_BUCKETS, registry=r)
        self.e2e = Histogram(f"{p}:e2e_request_latency_seconds", "Arrival of the request to its last token.",
                             buckets=LATENCY_BUCKETS, registry=r)
        self.queue_time = Histogram(f"{p}:request_queue_time_seconds", "Time from submission to the engine "
                                    "until the scheduler first admitted the request.", buckets=LATENCY_BUCKETS,
                                    registry=r)
        info = Gauge(f"{p}:engine_info", "Constant 1; labels describe the engine.", list(info_labels), registry=r)
        info.labels(**info_labels).set(1)
        r.register(_EngineCollector(engine, p))

    def exposition(self):
        return generate_latest(self.registry)


# --------------------------------------------------------------------------------------------- server --


class BadRequest(Exception):
    def __init__(self, message, param=None, status=400, kind="BadRequestError"):
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind


def _error_response(err):
    body = {"object": "error", "message": err.message, "type": err.kind, "param": err.param, "code": err.status}
    return web.json_response(body, status=err.status)


def _get_int(body, name, default, minimum):
    v = body.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"{name} must be an integer, got {v!r}", name)
    if v < minimum:
        raise BadRequest(f"{name} must be at least {minimum}, got {v}", name)
    return v


def _get_bool(body, name, default):
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise BadRequest(f"{name} must be a boolean, got {v!r}", name)
    return v


class _Generation:
    """One request in flight: turns the engine's cumulative outputs into batches of (text pieces, finish reason).

    EOS handling: with ignore_eos the engine never stops on EOS (fixed length = max_tokens). With min_tokens > 0
    the engine also ignores EOS and this class stops at the first EOS at index >= min_tokens (an earlier EOS is
    emitted as ordinary text: it is not masked as vLLM does). Otherwise the engine stops on EOS itself.
    An EOS that ends a request counts as a completion token and is sent as an empty text piece, like vLLM.
    """

    def __init__(self, server, req_id, prompt_ids, max_tokens, min_tokens, ignore_eos):
        self.server = server
        self.req_id = req_id
        self.prompt_tokens = len(prompt_ids)
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self.ignore_eos = ignore_eos
        self.sent = 0
        self.done = False
        self.finish_reason = None
        self.error = None
        self.queue_s = None
        self.t_arrival = time.perf_counter()
        self.t_first = None
        self.t_last = None
        self.prefill_counted = False
        self._queue = asyncio.Queue()
        self._eos = server.tokenizer.eos_token_id
        use_eos = not ignore_eos and min_tokens == 0
        server.engine.submit(req_id, prompt_ids, max_tokens, use_eos, self._queue.put_nowait)

    async def next(self):
        """Wait for new tokens: returns (pieces, finish_reason) or raises _EngineError; finish_reason set once."""
        while True:
            try:
                out = await asyncio.wait_for(self._queue.get(), timeout=self.server.engine_check_s)
                break
            except asyncio.TimeoutError:
                if not self.server.engine.alive():
                    out = EngineOutput(tokens=[], finished=True, error="engine stopped while the request was in flight")
                    break
        if out.queue_s is not None and self.queue_s is None:
            self.queue_s = out.queue_s
        if out.error is not None:
            self.done = True
            self.finish_reason = "error"
            self.error = out.error
            return [], "error"
        new = out.tokens[self.sent:]
        pieces = []
        reason = None
        text = self.server.tokenizer.token_text
        for tok in new:
            self.sent += 1
            if tok == self._eos and not self.ignore_eos and self.sent > self.min_tokens:
                pieces.append("")
                reason = "stop"
                break
            pieces.append(text(tok))
        if reason is None and out.finished:
            reason = "length" if self.sent >= self.max_tokens else "stop"
        if reason is not None:
            if not out.finished:
                self.server.engine.cancel(self.req_id)  # stopped here at EOS; the engine would go on
            self.done = True
            self.finish_reason = reason
        now = time.perf_counter()
        if pieces:
            if self.t_first is None:
                self.t_first = now
            self.t_last = now
        return pieces, reason

    def close(self):
        """Called in every case when the handler ends: cancels the request if it did not finish."""
        if not self.done:
            self.done = True
            self.finish_reason = "abort"
            self.server.engine.cancel(self.req_id)


class Server:
    def __init__(self, engine, tokenizer, *, model_name, max_model_len, log, info_labels=None,
                 stats_interval_s=1.0, version_extra=None):
        self.engine = engine
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.max_model_len = max_model_len
        self.log = log
        self.stats_interval_s = stats_interval_s
        self.engine_check_s = 5.0  # how often a request waiting for tokens checks that the engine still runs
        self.version_extra = dict(version_extra or {})
        labels = {"engine": engine.name, "version": engine.version, "model": model_name}
        labels.update(info_labels or {})
        self.metrics = ServerMetrics(engine, labels)
        self.created = int(time.time())
        # Plain totals for the stats line (prometheus counters are for scrapers); guarded: preemptions
        # arrive on the engine's thread.
        self._lock = threading.Lock()
        self.totals = {"prompt_tokens": 0, "generation_tokens": 0, "preemptions": 0, "cpu_offloads": 0,
                       "finished": 0}
        self._stats_task = None
        engine.set_preempt_callback(self._on_preempt)

    # --------------------------------------------------------------------------------------- app ---

    def app(self):
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/health", self.health)
        app.router.add_get("/version", self.version)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/metrics", self.metrics_handler)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app):
        self.engine.attach(asyncio.get_running_loop())
        if self.stats_interval_s > 0:
            self._stats_task = asyncio.ensure_future(self._stats_loop())

    async def _on_cleanup(self, app):
        if self._stats_task is not None:
            self._stats_task.cancel()
            try:
                await self._stats_task
            except asyncio.CancelledError:
                pass

    # ----------------------------------------------------------------------------- simple routes ---

    async def health(self, request):
        if self.engine.alive():
            return web.Response(status=200)
        return web.Response(status=503, text="engine is not running\n")

    async def version(self, request):
        body = {"version": self.engine.version, "engine": self.engine.name, "server": f"headroom-gpu-engine/"
                f"{SERVER_VERSION}"}
        body.update(self.version_extra)
        return web.json_response(body)

    async def models(self, request):
        card = {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "headroom",
                "root": self.model_name, "parent": None, "max_model_len": self.max_model_len}
        return web.json_response({"object": "list", "data": [card]})

    async def metrics_handler(self, request):
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def tokenize(self, request):
        try:
            body = await self._json_body(request)
            ids = self._prompt_ids(body)
        except BadRequest as e:
            return self._reject(None, e)
        return web.json_response({"tokens": ids, "count": len(ids), "max_model_len": self.max_model_len,
                                  "token_strs": None})

    # ----------------------------------------------------------------------------- parsing --------

    async def _json_body(self, request):
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(f"request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        model = body.get("model")
        if model is not None and model != self.model_name:
            raise BadRequest(f"The model `{model}` does not exist.", "model", 404, "NotFoundError")
        return body

    def _prompt_ids(self, body):
        if "messages" in body:
            return self._chat_ids(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        if isinstance(prompt, str):
            return self.tokenizer.encode(prompt)
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                       for t in prompt):
            if any(t < 0 or t >= self.tokenizer.vocab_size for t in prompt):
                raise BadRequest(f"prompt token ids must be in [0, {self.tokenizer.vocab_size})", "prompt")
            return list(prompt)
        raise BadRequest("prompt must be a string, a list of token ids, or a list holding one of those",
                         "prompt")

    def _chat_ids(self, body):
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list", "messages")
        flat = []
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise BadRequest("each message must be an object with a string role", "messages")
            content = m.get("content", "")
            if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
                texts = [part.get("text", "") for part in content if isinstance(part, dict)
                         and part.get("type") == "text"]
                content = "".join(texts)
            if not isinstance(content, str):
                raise BadRequest("message content must be a string or a list of text parts", "messages")
            flat.append({"role": m["role"], "content": content})
        return self.tokenizer.encode_chat(flat)

    def _sampling(self, body, prompt_len, chat):
        for name in ("n", "best_of"):
            if _get_int(body, name, 1, 1) != 1:
                raise BadRequest(f"{name} > 1 is not supported by this engine", name)
        stop = body.get("stop")
        if stop not in (None, [], ""):
            raise BadRequest("stop strings are not supported by this engine (use max_tokens)", "stop")
        if body.get("logprobs") not in (None, False) or body.get("top_logprobs") is not None:
            raise BadRequest("logprobs are not supported by this engine", "logprobs")
        if body.get("echo"):
            raise BadRequest("echo is not supported by this engine", "echo")
        if chat:
            default_max = self.max_model_len - prompt_len
            max_tokens = _get_int(body, "max_completion_tokens", None, 1)
            if max_tokens is None:
                max_tokens = _get_int(body, "max_tokens", default_max, 1)
        else:
            max_tokens = _get_int(body, "max_tokens", 16, 1)
        min_tokens = _get_int(body, "min_tokens", 0, 0)
        if min_tokens > max_tokens:
            raise BadRequest(f"min_tokens ({min_tokens}) must be less than or equal to max_tokens ({max_tokens})",
                             "min_tokens")
        ignore_eos = _get_bool(body, "ignore_eos", False)
        if prompt_len == 0:
            raise BadRequest("prompt is empty", "prompt")
        if prompt_len + max_tokens > self.max_model_len:
            raise BadRequest(f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                             f"requested {prompt_len + max_tokens} tokens ({prompt_len} in the prompt, "
                             f"{max_tokens} in the completion). Please reduce the length of the prompt or "
                             "completion.", "max_tokens")
        stream = _get_bool(body, "stream", False)
        opts = body.get("stream_options") or {}
        if not isinstance(opts, dict):
            raise BadRequest("stream_options must be an object", "stream_options")
        include_usage = bool(opts.get("include_usage", False))
        return max_tokens, min_tokens, ignore_eos, stream, include_usage

    def _reject(self, req_id, err):
        self.log.error("request", req=req_id, status=err.status, param=err.param, error=err.message)
        return _error_response(err)

    # ------------------------------------------------------------------------------ generation ----

    async def completions(self, request):
        return await self._serve(request, chat=False)

    async def chat_completions(self, request):
        return await self._serve(request, chat=True)

    async def _serve(self, request, chat):
        req_id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        try:
            body = await self._json_body(request)
            if chat and "messages" not in body:
                raise BadRequest("messages is required", "messages")
            if not chat and "prompt" not in body:
                raise BadRequest("prompt is required", "prompt")
            prompt_ids = self._prompt_ids(body)
            max_tokens, min_tokens, ignore_eos, stream, include_usage = self._sampling(body, len(prompt_ids), chat)
        except BadRequest as e:
            return self._reject(req_id, e)
        if not self.engine.alive():
            return self._reject(req_id, BadRequest("engine is not running", None, 503, "ServiceUnavailableError"))

        try:
            gen = _Generation(self, req_id, prompt_ids, max_tokens, min_tokens, ignore_eos)
        except Exception as e:  # noqa: BLE001 -- the engine refused the request
            return self._reject(req_id, BadRequest(f"engine did not accept the request: {e}", None, 503,
                                                   "ServiceUnavailableError"))
        snap = self.engine.snapshot()
        self.log.info("admit", req=req_id, endpoint="chat" if chat else "completions", prompt_tokens=len(prompt_ids),
                      max_tokens=max_tokens, min_tokens=min_tokens, ignore_eos=ignore_eos, stream=stream,
                      running=snap.running, waiting=snap.waiting)
        try:
            if stream:
                return await self._stream(request, gen, chat, include_usage)
            return await self._complete(gen, chat)
        finally:
            gen.close()
            self._finished(gen)

    def _on_tokens(self, gen, pieces):
        if not pieces:
            return
        m = self.metrics
        if not gen.prefill_counted:  # first tokens of this request: its prefill is done
            gen.prefill_counted = True
            m.ttft.observe(gen.t_first - gen.t_arrival)
            m.prompt_tokens.inc(gen.prompt_tokens)
            self.totals["prompt_tokens"] += gen.prompt_tokens
        m.generation_tokens.inc(len(pieces))
        self.totals["generation_tokens"] += len(pieces)

    def _finished(self, gen):
        m = self.metrics
        m.request_success.labels(finished_reason=gen.finish_reason).inc()
        self.totals["finished"] += 1
        now = time.perf_counter()
        e2e = now - gen.t_arrival
        fields = {"req": gen.req_id, "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.sent,
                  "reason": gen.finish_reason}
        if gen.t_first is not None:
            fields["ttft_ms"] = f"{(gen.t_first - gen.t_arrival) * 1e3:.3f}"
            if gen.sent >= 2:
                tpot = (gen.t_last - gen.t_first) / (gen.sent - 1)
                m.tpot.observe(tpot)
                fields["tpot_ms"] = f"{tpot * 1e3:.3f}"
        if gen.finish_reason in ("stop", "length"):
            m.e2e.observe(e2e)
        if gen.queue_s is not None:
            m.queue_time.observe(gen.queue_s)
            fields["queue_ms"] = f"{gen.queue_s * 1e3:.3f}"
        fields["e2e_ms"] = f"{e2e * 1e3:.3f}"
        if gen.error is not None:
            fields["error"] = gen.error
            self.log.line("ERROR", "finish", fields.items())
        else:
            self.log.line("INFO", "finish", fields.items())

    def _usage(self, gen):
        return {"prompt_tokens": gen.prompt_tokens, "total_tokens": gen.prompt_tokens + gen.sent,
                "completion_tokens": gen.sent}

    async def _stream(self, request, gen, chat, include_usage):
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream",
                                                       "Cache-Control": "no-cache"})
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = {"id": gen.req_id, "object": obj, "created": created, "model": self.model_name}
        dumps = json.dumps

        def chunk(text, reason):
            if chat:
                choice = {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": reason}
            else:
                choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
            d = dict(head)
            d["choices"] = [choice]
            return "data: " + dumps(d, ensure_ascii=False) + "\n\n"

        try:
            await resp.prepare(request)
            if chat:  # vLLM's first chunk: the role, empty content
                d = dict(head)
                d["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                 "finish_reason": None}]
                await resp.write(("data: " + dumps(d) + "\n\n").encode())
            while not gen.done:
                pieces, reason = await gen.next()
                self._on_tokens(gen, pieces)
                if reason == "error":
                    err = {"object": "error", "message": gen.error, "type": "InternalServerError", "param": None,
                           "code": 500}
                    await resp.write(("data: " + dumps({"error": err}) + "\n\n").encode())
                    break
                out = []
                last = len(pieces) - 1
                for i, text in enumerate(pieces):
                    out.append(chunk(text, reason if i == last else None))
                if not pieces and reason is not None:
                    out.append(chunk("", reason))
                if out:
                    await resp.write("".join(out).encode())
            if gen.finish_reason != "error" and include_usage:
                d = dict(head)
                d["choices"] = []
                d["usage"] = self._usage(gen)
                await resp.write(("data: " + dumps(d) + "\n\n").encode())
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass  # the client went away; gen.close() in the caller cancels the request
        return resp

    async def _complete(self, gen, chat):
        texts = []
        while not gen.done:
            pieces, reason = await gen.next()
            self._on_tokens(gen, pieces)
            texts.extend(pieces)
        if gen.finish_reason == "error":
            err = BadRequest(gen.error, None, 500, "InternalServerError")
            return _error_response(err)
        text = "".join(texts)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                      "finish_reason": gen.finish_reason}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": gen.finish_reason}
            obj = "text_completion"
        body = {"id": gen.req_id, "object": obj, "created": int(time.time()), "model": self.model_name,
                "choices": [choice], "usage": self._usage(gen)}
        return web.json_response(body)

    # ------------------------------------------------------------------------- engine events -----

    def _on_preempt(self, req_id, mode, prompt_tokens, generated_tokens):
        """Called on the engine's thread when a running request is evicted from the KV cache."""
        with self._lock:
            self.totals["preemptions"] += 1
            if mode == "cpu_offload":
                self.totals["cpu_offloads"] += 1
            total = self.totals["preemptions"]
        self.metrics.preemptions.inc()
        if mode == "cpu_offload":
            self.metrics.cpu_offloads.inc()
        s = self.engine.snapshot()
        self.log.warn("preempt", req=req_id, mode=mode, prompt_tokens=prompt_tokens, generated=generated_tokens,
                      kv_blocks_used=s.kv_blocks_used, kv_blocks_total=s.kv_blocks_total, total_preemptions=total)

    async def _stats_loop(self):
        """A `stats` line every interval while requests are in the engine, and one more when it goes idle."""
        prev_t = time.perf_counter()
        prev = dict(self.totals)
        prev_steps = None
        was_busy = False
        while True:
            await asyncio.sleep(self.stats_interval_s)
            try:
                s = self.engine.snapshot()
            except Exception as e:  # noqa: BLE001 -- a broken snapshot must not kill the server
                self.log.error("stats", error=f"snapshot failed: {e!r}")
                continue
            now = time.perf_counter()
            busy = bool(s.running or s.waiting)
            with self._lock:
                cur = dict(self.totals)
            if busy or was_busy or cur != prev:
                dt = now - prev_t
                usage = s.kv_blocks_used / s.kv_blocks_total if s.kv_blocks_total else 0.0
                fields = [("running", s.running), ("waiting", s.waiting), ("kv_blocks_used", s.kv_blocks_used),
                          ("kv_blocks_total", s.kv_blocks_total), ("kv_usage", f"{usage:.3f}")]
                if s.steps is not None:
                    fields.append(("steps", s.steps))
                    if prev_steps is not None:
                        fields.append(("steps_per_s", f"{(s.steps - prev_steps) / dt:.1f}"))
                fields += [
                    ("prompt_tokens_total", cur["prompt_tokens"]),
                    ("generation_tokens_total", cur["generation_tokens"]),
                    ("gen_tokens_per_s", f"{(cur['generation_tokens'] - prev['generation_tokens']) / dt:.1f}"),
                    ("finished_total", cur["finished"]),
                    ("preemptions_total", cur["preemptions"]),
                ]
                self.log.line("INFO", "stats", fields)
            prev_t, prev, prev_steps, was_busy = now, cur, s.steps, busy


# ----------------------------------------------------------------------------------------------- main --


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="server.py",
        description="OpenAI-compatible streaming server over transformers' continuous batching, with a "
                    "random-weight Llama of a real shape. See docs/gpu-engine.md.")
    p.add_argument("--model-shape", choices=["8b", "1b"], default="1b", help="Llama-3.1-8B or Llama-3.2-1B shape")
    p.add_argument("--served-model-name", default=None, help="model id in /v1/models (default: from the shape)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (see the `listening` line)")
    p.add_argument("--kv-blocks", type=int, default=None, help="KV cache blocks (default: engine sizes it from "
                   "free GPU memory)")
    p.add_argument("--block-size", type=int, default=None, help="tokens per KV block (engine default if unset)")
    p.add_argument("--max-batch-tokens", type=int, default=None, help="tokens per forward pass (default: engine)")
    p.add_argument("--scheduler", default="fifo", help="engine scheduler: fifo or prefill_first")
    p.add_argument("--cpu-offload-gib", type=float, default=0.0, help="pinned CPU swap pool for preempted "
                   "requests' KV; 0 = preempted requests are recomputed")
    p.add_argument("--max-memory-percent", type=float, default=None, help="fraction of free GPU memory for the KV "
                   "cache when --kv-blocks is unset")
    p.add_argument("--prefix-sharing", choices=["on", "off"], default="on", help="engine block sharing (prefix "
                   "caching)")
    p.add_argument("--cuda-graph", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--attn-implementation", default="sdpa", help="attention kernel before paging (sdpa, eager, "
                   "flash_attention_2 if installed)")
    p.add_argument("--max-model-len", type=int, default=None, help="longest prompt+completion accepted (default: "
                   "min(max_position_embeddings, KV cache capacity minus one block))")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    p.add_argument("--stats-interval", type=float, default=1.0, help="seconds between `stats` log lines; 0 = off")
    p.add_argument("--write-config", metavar="PATH", default=None, help="write the shape's Hugging Face "
                   "config.json to PATH at start-up")
    p.add_argument("--print-config", action="store_true", help="print the shape's config.json and exit (no GPU)")
    return p.parse_args(argv)


async def _serve_forever(server, host, port, log):
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = port
    for addr in getattr(runner, "addresses", []) or []:
        if isinstance(addr, tuple) and len(addr) >= 2:
            bound = addr[1]
            break
    log.info("listening", host=host, port=bound)
    print(f"listening port={bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutdown", reason="signal")
    await runner.cleanup()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import shapes

    if args.print_config:
        json.dump(shapes.hf_config(args.model_shape), sys.stdout, indent=2, sort_keys=True)
        print()
        return 0
    if args.write_config:
        shapes.write_hf_config(args.model_shape, args.write_config)

    log = EventLog()
    import engine_cb  # torch + transformers: only on the GPU box
    from tokenizer import TiktokenTokenizer

    versions = engine_cb.versions()
    log.info("start", engine=engine_cb.ENGINE_NAME, version=versions["transformers"], torch=versions["torch"],
             python=versions["python"], server=SERVER_VERSION, pid=os.getpid())
    tokenizer = TiktokenTokenizer()
    try:
        engine = engine_cb.TransformersCBEngine(args, log)
    except Exception as e:  # noqa: BLE001 -- report why start-up failed, then exit non-zero
        log.error("engine", error=f"start-up failed: {e!r}")
        raise
    shape = shapes.SHAPES[args.model_shape]
    model_name = args.served_model_name or shape["name"]
    capacity = engine.kv_capacity_tokens()
    max_model_len = args.max_model_len or min(shape["max_position_embeddings"], capacity)
    log.info("tokenizer", name=tokenizer.name, vocab=tokenizer.vocab_size, model_vocab=shape["vocab_size"],
             eos_token_id=tokenizer.eos_token_id)
    log.info("serving", model=model_name, max_model_len=max_model_len, kv_capacity_tokens=capacity)
    server = Server(engine, tokenizer, model_name=model_name, max_model_len=max_model_len, log=log,
                    info_labels={"model_shape": args.model_shape, "dtype": shapes.DTYPE,
                                 "scheduler": engine.scheduler_name},
                    stats_interval_s=args.stats_interval,
                    version_extra={"torch": versions["torch"], "model_shape": args.model_shape,
                                   "weights": "random"})
    try:
        asyncio.run(_serve_forever(server, args.host, args.port, log))
    finally:
        engine.close()
        log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
