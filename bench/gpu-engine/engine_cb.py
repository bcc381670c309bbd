"""The engine behind server.py on the GPU box: transformers' continuous batching over a random-weight Llama.

Everything that matters for performance is transformers': the paged KV cache (PagedAttentionCache), the
scheduler (FIFO or prefill-first), the batching loop (ContinuousBatchingManager, its own thread), preemption
(offload to a CPU swap pool, or recompute). This adapter only
  - builds the model (random bf16 weights created on the GPU, like vLLM's --load-format dummy),
  - passes the knobs to ContinuousBatchingConfig,
  - routes the manager's per-request outputs to the server's event loop,
  - reads running/waiting/KV blocks from the scheduler and the cache for /metrics, and
  - wraps the offloading manager's evict call so that every preemption becomes a log line and a counter.
The attribute names read here were checked against transformers 5.17's source (see docs/gpu-engine.md);
every read is defensive so a renamed attribute degrades a metric, not the server.
"""

import dataclasses
import logging
import platform
import threading
import time

import shapes
from engine_api import EngineOutput, EngineSnapshot

ENGINE_NAME = "transformers-cb"


def versions():
    import torch
    import transformers

    return {"transformers": transformers.__version__, "torch": torch.__version__,
            "python": platform.python_version()}


class _ForwardToEventLog(logging.Handler):
    """transformers' own log records become `hf` lines in the server's log format."""

    _LEVELS = {"WARNING": "WARN", "CRITICAL": "ERROR"}

    def __init__(self, log):
        super().__init__(level=logging.INFO)
        self._log = log

    def emit(self, record):
        try:
            msg = record.getMessage()
            if record.exc_info:
                msg += " | " + logging.Formatter().formatException(record.exc_info)
            level = self._LEVELS.get(record.levelname, record.levelname)
            self._log.line(level, "hf", [("logger", record.name), ("msg", msg.strip())])
        except Exception:  # noqa: BLE001 -- logging must never raise into the engine
            self.handleError(record)


def _redirect_transformers_logs(log):
    import transformers.utils.logging as tlog

    handler = _ForwardToEventLog(log)
    tlog.disable_default_handler()
    tlog.add_handler(handler)
    tlog.set_verbosity_warning()
    # The continuous-batching code logs useful INFO lines (cache size, offloads) on its own logger.
    try:
        import transformers.generation.continuous_batching.requests  # noqa: F401 -- creates that logger
    except ImportError:
        pass
    for name in ("ContinuousBatchingLogger", "transformers.generation.continuous_batching"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.INFO)
        if name == "ContinuousBatchingLogger":
            for h in list(lg.handlers):
                lg.removeHandler(h)
            lg.addHandler(handler)
            lg.propagate = False
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(handler)


def _fmt(v):
    if isinstance(v, (tuple, list)):
        return ",".join(str(x) for x in v)
    return v


class TransformersCBEngine:
    name = ENGINE_NAME

    def __init__(self, args, log):
        import torch
        import transformers
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

        try:
            from transformers import ContinuousBatchingConfig
        except ImportError:
            from transformers.generation.configuration_utils import ContinuousBatchingConfig

        self.version = transformers.__version__
        self._log = log
        self._loop = None
        self._preempt_cb = None
        self._routes = {}
        self._closing = False
        self._hooked_bp = None
        self.preempt_hook = "none"
        self.scheduler_name = args.scheduler
        _redirect_transformers_logs(log)

        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device: this engine runs on the GPU box only")
        shape = shapes.SHAPES[args.model_shape]
        self.shape = shape

        # --- model: random bf16 weights, created directly on the GPU --------------------------------
        torch.manual_seed(args.seed)
        kw = shapes.llama_config_kwargs(shape)
        try:
            config = LlamaConfig(**kw)
        except TypeError:  # a config class that only takes rope_parameters
            theta = kw.pop("rope_theta")
            config = LlamaConfig(**kw, rope_parameters={"rope_type": "default", "rope_theta": theta})
        t0 = time.perf_counter()
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device("cuda"):
                model = LlamaForCausalLM(config)
        finally:
            torch.set_default_dtype(previous)
        model = model.to(dtype=torch.bfloat16).eval()
        torch.cuda.synchronize()
        build_s = time.perf_counter() - t0
        try:
            model.set_attn_implementation(args.attn_implementation)
        except (AttributeError, TypeError, ValueError):
            model.config._attn_implementation = args.attn_implementation
        params = sum(p.numel() for p in model.parameters())
        rope = getattr(config, "rope_parameters", None) or {"rope_theta": getattr(config, "rope_theta", None)}
        log.info("model", shape=args.model_shape, hidden=shape["hidden_size"], layers=shape["num_hidden_layers"],
                 heads=shape["num_attention_heads"], kv_heads=shape["num_key_value_heads"],
                 head_dim=shapes.head_dim(shape), intermediate=shape["intermediate_size"],
                 vocab=shape["vocab_size"], tied_embeddings=shape["tie_word_embeddings"], params=params,
                 weight_bytes=params * shapes.DTYPE_BYTES, dtype=shapes.DTYPE, weights="random",
                 seed=args.seed, rope_theta=rope.get("rope_theta"), build_s=f"{build_s:.2f}",
                 device=torch.cuda.get_device_name(), attn=args.attn_implementation)

        # --- continuous batching: knobs straight into ContinuousBatchingConfig ----------------------
        fields = {f.name for f in dataclasses.fields(ContinuousBatchingConfig)}
        from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

        if args.scheduler not in SCHEDULER_MAPPING:
            raise ValueError(f"--scheduler {args.scheduler!r}: this transformers knows "
                             f"{sorted(SCHEDULER_MAPPING)}")
        wanted = {
            "num_blocks": args.kv_blocks,
            "max_batch_tokens": args.max_batch_tokens,
            "scheduler_type": args.scheduler,
            "cpu_offload_space": args.cpu_offload_gib,
            "allow_block_sharing": args.prefix_sharing == "on",
            "use_cuda_graph": {"auto": None, "on": True, "off": False}[args.cuda_graph],
            "max_memory_percent": args.max_memory_percent,
            "seed": args.seed,
        }
        if args.block_size is not None:  # 5.17 calls it block_size; later releases page_size
            wanted["page_size" if "page_size" in fields else "block_size"] = args.block_size
        kwargs = {k: v for k, v in wanted.items() if k in fields and v is not None}
        ignored = sorted(k for k, v in wanted.items() if k not in fields and v is not None)
        if ignored:
            log.warn("config", msg="this transformers' ContinuousBatchingConfig has no such fields; ignored",
                     ignored=",".join(ignored))
        generation_config = GenerationConfig(max_new_tokens=16, do_sample=False, eos_token_id=shapes.EOS_TOKEN_ID,
                                             pad_token_id=shapes.EOS_TOKEN_ID)
        self.mgr = model.init_continuous_batching(generation_config=generation_config,
                                                  continuous_batching_config=ContinuousBatchingConfig(**kwargs))
        # Create the cache and the scheduler now (warmup() does; it also captures CUDA graphs when they are on)
        # so that the start-up facts are real and the preemption hook is in place before the first request.
        t0 = time.perf_counter()
        if hasattr(self.mgr, "warmup"):
            self.mgr.warmup()
        else:
            self.mgr.batch_processor = self.mgr._create_batch_processor()
        warmup_s = time.perf_counter() - t0
        bp = self.mgr.batch_processor
        self._install_hooks(bp)
        cache = bp.cache
        self._num_blocks = int(cache.num_blocks)
        self._block_size = int(_block_size(cache))
        resolved = self.mgr.continuous_batching_config
        om = getattr(bp, "offloading_manager", None)
        kv_bytes = sum(t.numel() * t.element_size() for t in list(getattr(cache, "key_cache", []))
                       + list(getattr(cache, "value_cache", [])))
        log.info("cache", kv_blocks=self._num_blocks, block_size=self._block_size,
                 kv_capacity_tokens=self._num_blocks * self._block_size,
                 kv_bytes_per_token=shapes.kv_bytes_per_token(shape), kv_cache_bytes=kv_bytes,
                 max_batch_tokens=getattr(cache, "max_batch_tokens", None),
                 max_requests_per_batch=getattr(resolved, "max_requests_per_batch", None),
                 scheduler=args.scheduler, scheduler_class=type(bp.scheduler).__name__,
                 safety_margin=getattr(bp.scheduler, "safety_margin", None),
                 prefix_sharing=getattr(cache, "use_prefix_sharing", None),
                 cuda_graph=_fmt(getattr(resolved, "use_cuda_graph", None)),
                 async_batching=getattr(resolved, "use_async_batching", None),
                 cpu_offload_gib=args.cpu_offload_gib, cpu_swap_blocks=getattr(om, "_num_cpu_blocks", None),
                 preempt_hook=self.preempt_hook, attn=getattr(model.config, "_attn_implementation", None),
                 warmup_s=f"{warmup_s:.2f}", gpu_mem_allocated_bytes=torch.cuda.memory_allocated(),
                 gpu_mem_total_bytes=torch.cuda.get_device_properties(0).total_memory)
        self._use_handlers = hasattr(self.mgr, "register_result_handler")
        self.mgr.start()

    # ---------------------------------------------------------------------------------- facts ---

    def kv_capacity_tokens(self):
        """Longest request the cache is sure to hold: the scheduler may allocate up to two blocks ahead."""
        return max(self._num_blocks - 2, 1) * self._block_size

    # ----------------------------------------------------------------------- server interface ---

    def attach(self, loop):
        self._loop = loop
        if not self._use_handlers:
            threading.Thread(target=self._dispatch_loop, name="cb-dispatch", daemon=True).start()

    def set_preempt_callback(self, fn):
        self._preempt_cb = fn

    def alive(self):
        if self._closing:
            return False
        is_running = getattr(self.mgr, "is_running", None)
        if is_running is not None:
            return bool(is_running())
        t = getattr(self.mgr, "_generation_thread", None)
        return t is not None and t.is_alive()

    def submit(self, req_id, prompt_ids, max_new_tokens, use_eos, on_output):
        deliver = _output_converter(on_output)
        if self._use_handlers:
            self.mgr.register_result_handler(req_id, deliver)  # before add_request: no output can be missed
        else:
            self._routes[req_id] = deliver
        vocab = self.shape["vocab_size"]  # o200k ids can exceed the model's vocabulary: fold them (same compute)
        ids = [t if t < vocab else t % vocab for t in prompt_ids]
        rid = self.mgr.add_request(ids, request_id=req_id, max_new_tokens=max_new_tokens,
                                   streaming=True, eos_token_id=None if use_eos else -1)
        if rid is None:  # newer managers refuse requests while stopping
            self._forget(req_id)
            raise RuntimeError("the continuous batching manager is not accepting requests")

    def cancel(self, req_id):
        self.mgr.cancel_request(req_id)
        self._forget(req_id)

    def snapshot(self):
        mgr = self.mgr
        bp = getattr(mgr, "batch_processor", None)
        queued = _qsize(getattr(mgr, "input_queue", None))
        steps = getattr(mgr, "current_batch", None)
        if bp is None:
            return EngineSnapshot(0, queued, self._num_blocks, 0, steps)
        if bp is not self._hooked_bp:  # a manager that rebuilt its batch processor
            self._install_hooks(bp)
        sched = bp.scheduler
        running = len(sched.active_requests)
        waiting = len(sched.waiting_requests) + queued
        used = self._num_blocks - _free_blocks(bp.cache)
        return EngineSnapshot(running, waiting, self._num_blocks, max(used, 0), steps)

    def close(self):
        if self._closing:
            return
        self._closing = True
        stop = self.mgr.stop
        try:
            stop(block=True, timeout=30, hard_stop=True)
        except TypeError:  # managers without hard_stop
            stop(block=True, timeout=30)

    # -------------------------------------------------------------------------------- internals ---

    def _forget(self, req_id):
        self._routes.pop(req_id, None)
        router = getattr(self.mgr, "output_router", None)
        if router is not None and hasattr(router, "result_handlers"):
            with router._lock:
                router.result_handlers.pop(req_id, None)

    def _dispatch_loop(self):
        """For managers without register_result_handler: one thread drains the shared output queue."""
        while not self._closing:
            out = self.mgr.get_result(timeout=0.1)
            if out is None:
                if not self.alive():
                    time.sleep(0.1)
                continue
            self._loop.call_soon_threadsafe(self._route, out)

    def _route(self, out):
        deliver = self._routes.get(out.request_id)
        if deliver is not None:
            deliver(out)
            if out.is_finished() or getattr(out, "error", None):
                self._routes.pop(out.request_id, None)

    def _install_hooks(self, bp):
        """Wrap the offloading manager's evict call so that each preemption is reported.

        transformers 5.17 evicts with `offloading_manager.offload_requests()` (several at once; earlier releases had
        `offload_one_request()`). Either way an evicted request leaves `scheduler.active_requests` and is put back in
        `scheduler.waiting_requests`, either with its KV copied to the CPU pool (`is_cpu_offloaded`) or as an
        equivalent fresh request that recomputes prompt and generated tokens. The wrapper compares the two dicts
        before and after the call, so it needs no knowledge of how the victims are chosen. Runs on the engine's
        thread, which is the only one that mutates those dicts.
        """
        self._hooked_bp = bp
        om = getattr(bp, "offloading_manager", None)
        sched = getattr(bp, "scheduler", None)
        names = [n for n in ("offload_requests", "offload_one_request") if om is not None and hasattr(om, n)]
        if not names or sched is None:
            self.preempt_hook = "none"
            return
        for name in names:
            setattr(om, name, self._reporting(getattr(om, name), sched))
        self.preempt_hook = "offloading_manager." + "+".join(names)

    def _reporting(self, evict, sched):
        def evict_and_report(*a, **k):
            before = dict(sched.active_requests)
            result = evict(*a, **k)
            cb = self._preempt_cb
            if cb is None:
                return result
            active, waiting = sched.active_requests, sched.waiting_requests
            for request_id, old in before.items():
                if request_id in active or request_id not in waiting:
                    continue  # still running, or finished/cancelled rather than evicted
                new = waiting[request_id]
                mode = "cpu_offload" if getattr(new, "is_cpu_offloaded", False) else "recompute"
                initial = len(getattr(old, "initial_tokens", None) or [])
                true_initial = getattr(old, "_true_initial_tokens", 0) or initial
                generated = initial - true_initial + len(getattr(old, "generated_tokens", None) or [])
                cb(request_id, mode, true_initial, generated)
            return result

        return evict_and_report


def _output_converter(on_output):
    def deliver(out):
        error = getattr(out, "error", None)
        status = getattr(out, "status", None)
        failed = error is not None or getattr(status, "name", "") == "FAILED"
        queue_s = None
        lifespan = getattr(out, "lifespan", None)
        created = getattr(out, "created_time", None)
        if lifespan and created and lifespan[0] and lifespan[0] > 0:
            queue_s = max(lifespan[0] - created, 0.0)
        on_output(EngineOutput(tokens=list(out.generated_tokens), finished=bool(out.is_finished() or failed),
                               error=(error or "request failed in the engine") if failed else None,
                               queue_s=queue_s))

    return deliver


def _block_size(cache):
    for name in ("block_size", "page_size"):
        v = getattr(cache, name, None)
        if isinstance(v, int) and v > 0:
            return v
    raise RuntimeError("cannot read the KV block size from transformers' PagedAttentionCache")


def _free_blocks(cache):
    get = getattr(cache, "get_num_free_blocks", None)
    if get is not None:
        return get()
    return cache._block_manager.num_free_blocks


def _qsize(q):
    try:
        return q.qsize() if q is not None else 0
    except NotImplementedError:
        return 0
