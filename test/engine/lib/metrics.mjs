// Prometheus text exposition (format 0.0.4) of the names in docs/test-engine.md.
// A dozen series do not need a client library.

// Same edges as vLLM's time_to_first_token_seconds.
const ttftBuckets = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
  160, 640, 2560];
// vLLM's time_per_output_token_seconds edges, plus sub-10 ms ones: a CPU toy model decodes in 1-10 ms.
const tpotBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1,
  2.5, 5, 7.5, 10, 20, 40, 80];

export const finishReasons = ["stop", "length", "abort"];

class Histogram {
  constructor(buckets) {
    this.buckets = buckets;
    this.counts = new Array(buckets.length).fill(0);
    this.count = 0;
    this.sum = 0;
  }
  observe(v) {
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]) this.counts[i]++;
    this.count++;
    this.sum += v;
  }
  render(name) {
    let out = "";
    for (let i = 0; i < this.buckets.length; i++) out += `${name}_bucket{le="${this.buckets[i]}"} ${this.counts[i]}\n`;
    out += `${name}_bucket{le="+Inf"} ${this.count}\n${name}_sum ${this.sum}\n${name}_count ${this.count}\n`;
    return out;
  }
}

export class Metrics {
  constructor(kvBudgetTokens) {
    this.running = 0;
    this.waiting = 0;
    this.kvUsage = 0;
    this.kvBudgetTokens = kvBudgetTokens;
    this.preemptions = 0;
    this.promptTokens = 0;
    this.generationTokens = 0;
    this.prefixCacheQueries = 0;
    this.prefixCacheHits = 0;
    this.success = Object.fromEntries(finishReasons.map((r) => [r, 0]));
    this.ttft = new Histogram(ttftBuckets);
    this.tpot = new Histogram(tpotBuckets);
  }

  render() {
    const p = "nodellama:";
    const one = (name, type, help, value) =>
      `# HELP ${p}${name} ${help}\n# TYPE ${p}${name} ${type}\n${p}${name} ${value}\n`;
    let out = "";
    out += one("num_requests_running", "gauge", "Requests holding a sequence (prefill or decode).", this.running);
    out += one("num_requests_waiting", "gauge", "Requests queued for a sequence or KV budget.", this.waiting);
    out += one("kv_cache_usage_perc", "gauge", "KV tokens in use over the KV token budget (fraction 0..1).", this.kvUsage);
    out += one("kv_budget_tokens", "gauge", "Shared KV token budget across sequences.", this.kvBudgetTokens);
    out += one("num_preemptions_total", "counter", "Requests preempted (recompute) to stay within the KV budget.",
      this.preemptions);
    out += one("prompt_tokens_total", "counter", "Prompt tokens of admitted requests (recomputation not counted).",
      this.promptTokens);
    out += one("generation_tokens_total", "counter", "Generated tokens sent to clients.", this.generationTokens);
    out += one("prefix_cache_queries_total", "counter",
      "Prompt tokens looked up in the prefix cache at first admission (vLLM V1's prefix_cache_queries).",
      this.prefixCacheQueries);
    out += one("prefix_cache_hits_total", "counter",
      "Prompt tokens found in the prefix cache at first admission, not evaluated again (vLLM V1's prefix_cache_hits).",
      this.prefixCacheHits);
    out += `# HELP ${p}request_success_total Finished requests by finish reason.\n`;
    out += `# TYPE ${p}request_success_total counter\n`;
    for (const r of finishReasons) out += `${p}request_success_total{finished_reason="${r}"} ${this.success[r]}\n`;
    out += `# HELP ${p}time_to_first_token_seconds Arrival to first generated token.\n`;
    out += `# TYPE ${p}time_to_first_token_seconds histogram\n`;
    out += this.ttft.render(`${p}time_to_first_token_seconds`);
    out += `# HELP ${p}time_per_output_token_seconds Time between consecutive generated tokens of a request.\n`;
    out += `# TYPE ${p}time_per_output_token_seconds histogram\n`;
    out += this.tpot.render(`${p}time_per_output_token_seconds`);
    return out;
  }
}
