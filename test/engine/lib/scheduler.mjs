// The scheduler: continuous batching over one llama.cpp context with N parallel sequences.
//
// One loop runs steps. A step admits waiting requests (FIFO) while a sequence is free and the
// shared KV token budget has room, plans one batch (one token for every decoding request, then
// prompt chunks up to the batch size), starts every request's evaluation in the same tick so that
// node-llama-cpp puts them all into one llama_decode call, awaits it, and streams the sampled
// tokens. Between steps nothing is decoding, so freeing a sequence never waits for a lock.
//
// node-llama-cpp gives each sequence its own context window and never evicts one sequence for
// another, so the KV limit is this scheduler's own token budget across sequences: when the running
// requests would need more than the budget, the newest one is preempted (recompute mode, as vLLM):
// its sequence is cleared, it goes back to the head of the queue, and on re-admission its prompt and
// the tokens it already generated are evaluated again before it continues; the client only sees a pause.

import {TokenBias} from "node-llama-cpp";
import {ms} from "./log.mjs";

/** A request as the scheduler sees it; sink receives its tokens and its end. */
export class Request {
  /**
   * @param {object} o
   * @param {string} o.id
   * @param {number[]} o.promptTokens prompt token ids, BOS included
   * @param {number} o.maxTokens
   * @param {number} o.minTokens EOS is not sampled before this many tokens
   * @param {boolean} o.ignoreEos EOS is never sampled
   * @param {number} o.temperature 0 is greedy
   * @param {number} o.topP
   * @param {number} o.seed
   * @param {{token(text: string, finishReason: ?string): void, finish(reason: string, usage: object): void}} o.sink
   */
  constructor(o) {
    Object.assign(this, o);
    this.generated = [];
    this.pending = o.promptTokens.slice(); // tokens to evaluate before the next sample
    this.kvTokens = 0; // tokens of this request in its sequence's KV cache
    this.seq = null;
    this.gen = null; // the sequence's evaluate() generator once the prompt is in
    this.cancelled = false;
    this.done = false;
    this.everAdmitted = false;
    this.arrivalMs = performance.now();
    this.firstTokenMs = 0;
    this.lastTokenMs = 0;
    this.cachedTokens = 0; // prompt tokens taken from the prefix cache at first admission
  }
}

export class Scheduler {
  /**
   * @param {object} o
   * @param {import("node-llama-cpp").LlamaModel} o.model
   * @param {import("node-llama-cpp").LlamaContext} o.context
   * @param {number} o.kvBudgetTokens
   * @param {number} o.batchTokens the context's batch size: a step never exceeds it
   * @param {number} o.stepLogIntervalMs 0 logs every step
   * @param {import("./log.mjs").Logger} o.log
   * @param {import("./metrics.mjs").Metrics} o.metrics
   */
  constructor(o) {
    this.model = o.model;
    this.kvBudgetTokens = o.kvBudgetTokens;
    this.batchTokens = o.batchTokens;
    this.stepLogIntervalMs = o.stepLogIntervalMs;
    this.log = o.log;
    this.metrics = o.metrics;
    this.free = [];
    for (let i = 0; i < o.context.totalSequences; i++) this.free.push(o.context.getSequence());
    this.waiting = [];
    this.running = []; // in admission order: the last one is the newest
    this.steps = 0;
    this.lastStepLogMs = -Infinity;
    this.looping = false;
    // With the prefix cache a finished request's sequence keeps its tokens; the next request admitted to
    // it evaluates only what follows the longest common prefix (llama.cpp's KV cells are reused as they
    // are). Without it every sequence is cleared when its request ends.
    this.prefixCache = o.prefixCache === true;
    this.releasedAt = new Map(); // sequence -> when its last request released it (the prefix cache's LRU order)
    this.initSampling();
  }

  // Generated text is restricted to tokens that detokenize alone to printable ASCII or a newline, so
  // that every generated token is exactly one non-empty streamed chunk (a random-weight model would
  // otherwise emit stray UTF-8 continuation bytes and control tokens). EOS stays possible unless
  // ignore_eos or min_tokens forbid it; TokenBias.set() ignores end-of-generation tokens, so that
  // ban goes into its bias map directly (node-llama-cpp is pinned, see package.json).
  initSampling() {
    this.tokenText = [];
    const banned = [];
    const eog = [];
    for (const t of this.model.iterateAllTokens()) {
      const text = this.model.detokenize([t]);
      this.tokenText[t] = text;
      if (this.model.isEogToken(t)) eog.push(t);
      else if (!/^[\x20-\x7e\n]+$/.test(text)) banned.push(t);
    }
    this.biasPrintable = new TokenBias(this.model.tokenizer).set(banned, "never");
    this.biasPrintableNoEos = new TokenBias(this.model.tokenizer).set(banned, "never");
    for (const t of eog) this.biasPrintableNoEos._biases.set(t, -Infinity);
  }

  submit(req) {
    this.waiting.push(req);
    this.updateGauges();
    this.kick();
  }

  /** cancel drops a request whose client went away; it is removed before the next step. */
  cancel(req) {
    if (req.done) return;
    req.cancelled = true;
    this.kick();
  }

  kick() {
    if (this.looping) return;
    this.looping = true;
    setImmediate(() => this.loop());
  }

  async loop() {
    try {
      while (this.running.length > 0 || this.waiting.length > 0) await this.step();
    } catch (err) {
      // A failed llama_decode leaves sequences in an unknown state: stop loudly rather than serve garbage.
      this.log.error("engine", [["error", String(err?.stack ?? err)]]);
      process.exit(1);
    } finally {
      this.looping = false;
      this.updateGauges();
    }
  }

  kvUsed() {
    let n = 0;
    for (const r of this.running) n += r.kvTokens;
    return n;
  }

  /** kvHeld counts what running requests hold once their pending tokens are in. */
  kvHeld() {
    let n = 0;
    for (const r of this.running) n += r.kvTokens + r.pending.length;
    return n;
  }

  async step() {
    await this.dropCancelled();
    await this.admit();
    let plan = this.plan();
    while (this.kvUsed() + plan.tokens > this.kvBudgetTokens && this.running.length > 1) {
      await this.preempt(this.running[this.running.length - 1], this.kvUsed() + plan.tokens);
      plan = this.plan();
    }
    if (plan.items.length === 0) return;
    this.steps++;

    // Start every evaluation before awaiting any: node-llama-cpp batches what is queued in this tick.
    const results = await Promise.all(plan.items.map((it) => this.start(it)));

    const now = performance.now();
    const finished = [];
    plan.items.forEach((it, i) => {
      const res = results[i];
      if (res === null || it.r.cancelled) return; // a prompt chunk without a sample, or a gone client
      if (res.done || this.model.isEogToken(res.value)) {
        finished.push([it.r, "stop"]);
        return;
      }
      const last = it.r.generated.length + 1 >= it.r.maxTokens;
      this.emit(it.r, res.value, now, last);
      if (last) finished.push([it.r, "length"]);
    });
    this.logStep(plan, now);
    for (const [r, reason] of finished) await this.finish(r, reason, now);
    this.updateGauges();
  }

  async admit() {
    while (this.waiting.length > 0 && this.free.length > 0) {
      const r = this.waiting[0];
      // Room for its prompt (and recomputed tokens) plus one decode token per running request.
      const need = r.pending.length + this.running.length + 1;
      if (this.running.length > 0 && this.kvHeld() + need > this.kvBudgetTokens) break;
      this.waiting.shift();
      r.seq = this.takeSequence(r.pending);
      const reused = this.prefixCache ? await this.reusePrefix(r) : 0;
      this.running.push(r);
      if (!r.everAdmitted) {
        r.everAdmitted = true;
        this.metrics.promptTokens += r.promptTokens.length;
        if (this.prefixCache) {
          r.cachedTokens = reused;
          this.metrics.prefixCacheQueries += r.promptTokens.length;
          this.metrics.prefixCacheHits += reused;
        }
      }
      const fields = [["req", r.id], ["prompt_tokens", r.promptTokens.length], ["max_tokens", r.maxTokens],
        ["running", this.running.length], ["waiting", this.waiting.length]];
      if (this.prefixCache) fields.push(["cached_tokens", reused]);
      this.log.info("admit", fields);
    }
  }

  /**
   * takeSequence gives a free sequence. With the prefix cache: the one whose every cached token starts tokens
   * (a conversation's next turn finds its history), the longest such; else the least recently used one (its
   * cache is evicted, as an LRU cache would).
   */
  takeSequence(tokens) {
    if (!this.prefixCache || this.free.length < 2) return this.free.pop();
    let best = -1;
    let bestLen = 0;
    let lru = 0;
    this.free.forEach((seq, i) => {
      const held = seq.contextTokens;
      if (held.length > bestLen && commonPrefix(held, tokens) === held.length) [best, bestLen] = [i, held.length];
      if ((this.releasedAt.get(seq) ?? -Infinity) < (this.releasedAt.get(this.free[lru]) ?? -Infinity)) lru = i;
    });
    return this.free.splice(best >= 0 ? best : lru, 1)[0];
  }

  /**
   * reusePrefix keeps the part of r's sequence that equals the start of its pending tokens, erases the rest,
   * and returns how many tokens were kept. One token is always evaluated again: the step that samples needs
   * its logits.
   */
  async reusePrefix(r) {
    const held = r.seq.contextTokens;
    const keep = Math.min(commonPrefix(held, r.pending), r.pending.length - 1);
    if (keep < held.length) {
      if (keep === 0) await r.seq.clearHistory();
      else await r.seq.eraseContextTokenRanges([{start: keep, end: r.seq.nextTokenIndex}]);
    }
    if (keep > 0) {
      r.pending = r.pending.slice(keep);
      r.kvTokens = keep;
    }
    return keep;
  }

  /** plan lists what each running request evaluates this step: decodes first, then prompt chunks. */
  plan() {
    const items = [];
    let left = this.batchTokens;
    let prefill = 0;
    for (const r of this.running) {
      if (r.gen !== null && left > 0) {
        items.push({r, n: 1});
        left--;
      }
    }
    for (const r of this.running) {
      if (r.gen === null && r.pending.length > 0 && left > 0) {
        const n = Math.min(r.pending.length, left);
        items.push({r, n});
        left -= n;
        prefill += n;
      }
    }
    return {items, tokens: this.batchTokens - left, prefill};
  }

  /** start begins one request's part of the step; it resolves to a generator result or null. */
  start({r, n}) {
    r.kvTokens += n;
    if (r.gen !== null) return r.gen.next(); // feeds the last sampled token, samples the next
    const chunk = r.pending.splice(0, n);
    if (r.pending.length > 0) return r.seq.evaluateWithoutGeneratingNewTokens(chunk).then(() => null);
    r.gen = r.seq.evaluate(chunk, {
      temperature: r.temperature,
      topP: r.topP,
      topK: 0, // whole vocabulary
      minP: 0,
      seed: r.seed,
      yieldEogToken: true,
      tokenBias: () => (r.ignoreEos || r.generated.length < r.minTokens) ? this.biasPrintableNoEos : this.biasPrintable,
    });
    return r.gen.next();
  }

  emit(r, token, now, last) {
    r.generated.push(token);
    if (r.generated.length === 1) {
      r.firstTokenMs = now;
      this.metrics.ttft.observe((now - r.arrivalMs) / 1000);
    } else {
      this.metrics.tpot.observe((now - r.lastTokenMs) / 1000);
    }
    r.lastTokenMs = now;
    this.metrics.generationTokens++;
    r.sink.token(this.tokenText[token], last ? "length" : null);
  }

  async finish(r, reason, now) {
    await this.release(r);
    r.done = true;
    this.logFinish(r, reason, now);
    if (reason !== "abort") r.sink.finish(reason, usageOf(r, this.prefixCache));
  }

  logFinish(r, reason, now) {
    this.metrics.success[reason]++;
    // ttft_ms is the time to the end for a request that never produced a token.
    const ttftMs = r.generated.length > 0 ? r.firstTokenMs - r.arrivalMs : now - r.arrivalMs;
    this.log.info("finish", [["req", r.id], ["prompt_tokens", r.promptTokens.length],
      ["completion_tokens", r.generated.length], ["reason", reason], ["ttft_ms", ms(ttftMs)],
      ["e2e_ms", ms(now - r.arrivalMs)]]);
  }

  /**
   * release takes r out of the running set and gives its sequence back: emptied, or holding its tokens for the
   * prefix cache (keep).
   */
  async release(r, keep = this.prefixCache) {
    const i = this.running.indexOf(r);
    if (i >= 0) this.running.splice(i, 1);
    if (r.gen !== null) await r.gen.return();
    r.gen = null;
    if (r.seq !== null) {
      if (!keep) await r.seq.clearHistory();
      this.releasedAt.set(r.seq, performance.now());
      this.free.push(r.seq);
      r.seq = null;
    }
    r.kvTokens = 0;
  }

  async preempt(r, demandTokens) {
    await this.release(r, false); // recompute mode: its KV is gone
    r.pending = r.promptTokens.concat(r.generated);
    this.waiting.unshift(r);
    this.metrics.preemptions++;
    this.log.warn("preempt", [["req", r.id], ["mode", "recompute"], ["generated", r.generated.length],
      ["kv_used_tokens", demandTokens], ["kv_budget_tokens", this.kvBudgetTokens],
      ["total_preemptions", this.metrics.preemptions]]);
  }

  async dropCancelled() {
    const now = performance.now();
    for (const r of this.running.filter((r) => r.cancelled)) await this.finish(r, "abort", now);
    const gone = this.waiting.filter((r) => r.cancelled);
    if (gone.length === 0) return;
    this.waiting = this.waiting.filter((r) => !r.cancelled);
    for (const r of gone) {
      r.done = true;
      this.logFinish(r, "abort", now);
    }
  }

  logStep(plan, now) {
    if (this.stepLogIntervalMs > 0 && now - this.lastStepLogMs < this.stepLogIntervalMs) return;
    this.lastStepLogMs = now;
    const used = this.kvUsed();
    this.log.info("step", [["n", this.steps], ["running", this.running.length], ["waiting", this.waiting.length],
      ["batch_tokens", plan.tokens], ["prefill_tokens", plan.prefill], ["kv_used_tokens", used],
      ["kv_budget_tokens", this.kvBudgetTokens], ["kv_usage", (used / this.kvBudgetTokens).toFixed(3)]]);
  }

  updateGauges() {
    this.metrics.running = this.running.length;
    this.metrics.waiting = this.waiting.length;
    this.metrics.kvUsage = this.kvUsed() / this.kvBudgetTokens;
  }
}

/** usageOf is the OpenAI usage object of a request; prompt_tokens_details only with the prefix cache. */
function usageOf(r, prefixCache) {
  const u = {
    prompt_tokens: r.promptTokens.length,
    completion_tokens: r.generated.length,
    total_tokens: r.promptTokens.length + r.generated.length,
  };
  if (prefixCache) u.prompt_tokens_details = {cached_tokens: r.cachedTokens};
  return u;
}

/** commonPrefix is the length of the longest common prefix of two token lists. */
function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
