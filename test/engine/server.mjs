#!/usr/bin/env node
// headroom's test engine: an OpenAI-compatible streaming server over llama.cpp (node-llama-cpp), on
// 127.0.0.1 only, for integration tests and demo runs. The inference (tokenizer, batched decode,
// KV cache, sampling) is llama.cpp's; this file translates HTTP and lib/scheduler.mjs schedules.
// See docs/test-engine.md for what it is and what it is not.
//
//   node test/engine/server.mjs --model m.gguf [--port 0] [--sequences 4] [--ctx-per-seq 1024]
//        [--kv-budget-tokens N] [--threads 1] [--batch-tokens 512] [--step-log-interval-ms 100]
//        [--model-name NAME] [--max-lifetime-s 0] [--exit-on-stdin-eof]
//
// Every flag can also come from the environment: HEADROOM_ENGINE_<FLAG> with "-" as "_", e.g.
// HEADROOM_ENGINE_KV_BUDGET_TOKENS=4096. The first stdout line is "listening port=N" once the model
// is loaded and /health answers; the log (docs/test-engine.md) goes to stderr.

import {readFileSync} from "node:fs";
import http from "node:http";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import {Logger} from "./lib/log.mjs";
import {Metrics} from "./lib/metrics.mjs";
import {Request, Scheduler} from "./lib/scheduler.mjs";

const HOST = "127.0.0.1";
const ENGINE = "node-llama-cpp";
const MAX_BODY_BYTES = 16 << 20;

const flagSpec = {
  "model": {type: "string"},
  "model-name": {type: "string"},
  "port": {type: "string", default: "0"},
  "sequences": {type: "string", default: "4"},
  "ctx-per-seq": {type: "string", default: "1024"},
  "kv-budget-tokens": {type: "string"}, // default: sequences * ctx-per-seq
  "threads": {type: "string", default: "1"},
  "batch-tokens": {type: "string", default: "512"},
  "step-log-interval-ms": {type: "string", default: "100"},
  "max-lifetime-s": {type: "string", default: "0"},
  "exit-on-stdin-eof": {type: "boolean", default: false},
  "prefix-cache": {type: "boolean", default: false},
};

function parseConfig(argv, env) {
  const {values} = parseArgs({args: argv, options: flagSpec, strict: true});
  const get = (name) => values[name] ?? env["HEADROOM_ENGINE_" + name.toUpperCase().replaceAll("-", "_")];
  const int = (name, min) => {
    const raw = get(name) ?? flagSpec[name].default;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} ${raw}: want an integer >= ${min}`);
    return v;
  };
  const c = {
    model: get("model"),
    port: int("port", 0),
    sequences: int("sequences", 1),
    ctxPerSeq: int("ctx-per-seq", 16),
    threads: int("threads", 1),
    batchTokens: int("batch-tokens", 1),
    stepLogIntervalMs: int("step-log-interval-ms", 0),
    maxLifetimeS: int("max-lifetime-s", 0),
    exitOnStdinEof: values["exit-on-stdin-eof"] || get("exit-on-stdin-eof") === "1",
    prefixCache: values["prefix-cache"] || get("prefix-cache") === "1",
  };
  if (!c.model) throw new Error("--model PATH (or HEADROOM_ENGINE_MODEL) is required: a GGUF file");
  c.modelName = get("model-name") ?? path.basename(c.model).replace(/\.gguf$/i, "");
  c.kvBudgetTokens = get("kv-budget-tokens") !== undefined ? int("kv-budget-tokens", 1) : c.sequences * c.ctxPerSeq;
  if (c.port > 65535) throw new Error(`--port ${c.port}: want 0..65535`);
  if (c.kvBudgetTokens < c.ctxPerSeq)
    throw new Error(`--kv-budget-tokens ${c.kvBudgetTokens} is below --ctx-per-seq ${c.ctxPerSeq}: ` +
      "one full-length request could never run");
  if (c.batchTokens < c.sequences)
    throw new Error(`--batch-tokens ${c.batchTokens} is below --sequences ${c.sequences}: a decode step must fit`);
  return c;
}

function packageVersion() {
  const pkg = fileURLToPath(new URL("../package.json", import.meta.resolve("node-llama-cpp")));
  return JSON.parse(readFileSync(pkg, "utf8")).version;
}

// ---- OpenAI request handling ----

class HTTPError extends Error {
  constructor(status, message, type = "BadRequestError") {
    super(message);
    this.status = status;
    this.type = type;
  }
}

const bad = (msg) => new HTTPError(400, msg);

function intField(body, name, dflt, min) {
  const v = body[name];
  if (v === undefined || v === null) return dflt;
  if (!Number.isInteger(v) || v < min) throw bad(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}

function numberField(body, name, dflt, min, max) {
  const v = body[name];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "number" || !(v >= min && v <= max)) throw bad(`${name} must be a number in [${min}, ${max}]`);
  return v;
}

// Features a client might rely on that this engine does not have: refuse them rather than ignore them.
function rejectUnsupported(body) {
  if (body.n !== undefined && body.n !== 1) throw bad("n must be 1: the test engine returns one choice");
  if (body.best_of !== undefined && body.best_of !== 1) throw bad("best_of is not supported by the test engine");
  if (body.echo) throw bad("echo is not supported by the test engine");
  if (body.suffix) throw bad("suffix is not supported by the test engine");
  if (body.logprobs !== undefined && body.logprobs !== null && body.logprobs !== false)
    throw bad("logprobs is not supported by the test engine");
  if (body.stop !== undefined && body.stop !== null && !(Array.isArray(body.stop) && body.stop.length === 0))
    throw bad("stop is not supported by the test engine");
  if (body.tools !== undefined && body.tools !== null) throw bad("tools are not supported by the test engine");
}

function messageText(m, i) {
  if (typeof m?.role !== "string") throw bad(`messages[${i}].role must be a string`);
  if (typeof m.content === "string") return m.content;
  if (Array.isArray(m.content))
    return m.content.map((p) => {
      if (p?.type !== "text" || typeof p.text !== "string") throw bad(`messages[${i}]: only text content parts`);
      return p.text;
    }).join("");
  throw bad(`messages[${i}].content must be a string or a list of text parts`);
}

// The model has no chat template (its weights are random): messages become "role: content" lines and
// the prompt ends with "assistant: ". Documented in docs/test-engine.md.
function chatPrompt(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw bad("messages must be a non-empty list");
  return messages.map((m, i) => `${m.role}: ${messageText(m, i)}\n`).join("") + "assistant: ";
}

class Engine {
  constructor(cfg, llama, model, context, log) {
    this.cfg = cfg;
    this.llama = llama;
    this.model = model;
    this.log = log;
    this.version = packageVersion();
    this.metrics = new Metrics(cfg.kvBudgetTokens);
    this.scheduler = new Scheduler({
      model, context, kvBudgetTokens: cfg.kvBudgetTokens, batchTokens: cfg.batchTokens,
      stepLogIntervalMs: cfg.stepLogIntervalMs, log, metrics: this.metrics, prefixCache: cfg.prefixCache,
    });
    this.nextId = 1;
    this.created = Math.floor(Date.now() / 1000);
  }

  /** tokenize gives prompt token ids, BOS first (as vLLM's add_special_tokens default). */
  tokenize(text) {
    const bos = this.model.tokens.bos;
    const tokens = this.model.tokenize(text);
    return bos === null ? tokens : [bos, ...tokens];
  }

  promptTokens(body, chat) {
    if (chat) return this.tokenize(chatPrompt(body.messages));
    let p = body.prompt;
    if (Array.isArray(p) && p.length === 1 && typeof p[0] === "string") p = p[0];
    if (typeof p === "string") return this.tokenize(p);
    if (Array.isArray(p) && p.length > 0 && p.every((t) => Number.isInteger(t))) {
      const vocab = this.scheduler.tokenText.length;
      if (p.some((t) => t < 0 || t >= vocab)) throw bad(`prompt token ids must be in [0, ${vocab})`);
      return p;
    }
    throw bad("prompt must be a string, a list with one string, or a list of token ids");
  }

  checkModel(body) {
    if (body.model != null && body.model !== this.cfg.modelName)
      throw new HTTPError(404, `The model \`${body.model}\` does not exist.`, "NotFoundError");
  }

  /** generate validates an OpenAI request and streams or returns its completion. */
  generate(req, res, body, chat) {
    const id = (chat ? "chatcmpl-" : "cmpl-") + this.nextId++;
    try {
      if (body === null || typeof body !== "object" || Array.isArray(body)) throw bad("body must be a JSON object");
      this.checkModel(body);
      rejectUnsupported(body);
      const promptTokens = this.promptTokens(body, chat);
      const ctx = this.cfg.ctxPerSeq;
      const maxField = chat && body.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
      // As vLLM: without max_tokens, generate up to the end of the context.
      const maxTokens = intField(body, maxField, Math.max(1, ctx - promptTokens.length), 1);
      const minTokens = intField(body, "min_tokens", 0, 0);
      if (minTokens > maxTokens) throw bad(`min_tokens ${minTokens} exceeds max_tokens ${maxTokens}`);
      if (promptTokens.length + maxTokens > ctx)
        throw bad(`prompt+max_tokens ${promptTokens.length + maxTokens} exceeds per-sequence context ${ctx}`);
      if (body.ignore_eos !== undefined && typeof body.ignore_eos !== "boolean") throw bad("ignore_eos must be a boolean");
      const stream = body.stream === true;
      const includeUsage = stream && body.stream_options?.include_usage === true;
      const request = new Request({
        id, promptTokens, maxTokens, minTokens,
        ignoreEos: body.ignore_eos === true,
        temperature: numberField(body, "temperature", 1, 0, 2),
        topP: numberField(body, "top_p", 1, 0, 1),
        seed: intField(body, "seed", Math.floor(Math.random() * 2 ** 31), 0) % 2 ** 32,
        sink: null,
      });
      request.sink = stream
        ? this.streamSink(res, id, chat, includeUsage)
        : this.collectSink(res, id, chat);
      res.on("close", () => this.scheduler.cancel(request));
      this.scheduler.submit(request);
    } catch (err) {
      this.fail(res, id, err);
    }
  }

  chunk(id, chat, extra) {
    return {id, object: chat ? "chat.completion.chunk" : "text_completion", created: Math.floor(Date.now() / 1000),
      model: this.cfg.modelName, ...extra};
  }

  streamSink(res, id, chat, includeUsage) {
    res.writeHead(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Connection": "keep-alive"});
    const usage = includeUsage ? {usage: null} : {};
    const send = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
    const choice = (text, finishReason) => chat
      ? {index: 0, delta: text === null ? {} : {content: text}, logprobs: null, finish_reason: finishReason}
      : {index: 0, text: text ?? "", logprobs: null, finish_reason: finishReason};
    // As vLLM and OpenAI: a chat stream opens with the assistant role and empty content.
    if (chat)
      send(this.chunk(id, chat, {choices: [{index: 0, delta: {role: "assistant", content: ""}, logprobs: null,
        finish_reason: null}], ...usage}));
    let finishSent = false;
    return {
      // finishReason is set on the last token when the length limit ends the request (as vLLM sends it).
      token: (text, finishReason) => {
        finishSent = finishReason !== null;
        send(this.chunk(id, chat, {choices: [choice(text, finishReason)], ...usage}));
      },
      // A stop at EOS has no text of its own: it gets a chunk with empty text and the finish reason.
      finish: (reason, u) => {
        if (!finishSent) send(this.chunk(id, chat, {choices: [choice(null, reason)], ...usage}));
        if (includeUsage) send(this.chunk(id, chat, {choices: [], usage: u}));
        res.end("data: [DONE]\n\n");
      },
    };
  }

  collectSink(res, id, chat) {
    let text = "";
    return {
      token: (t) => {
        text += t;
      },
      finish: (reason, usage) => {
        const choice = chat
          ? {index: 0, message: {role: "assistant", content: text}, logprobs: null, finish_reason: reason}
          : {index: 0, text, logprobs: null, finish_reason: reason};
        sendJSON(res, 200, {id, object: chat ? "chat.completion" : "text_completion",
          created: Math.floor(Date.now() / 1000), model: this.cfg.modelName, choices: [choice], usage});
      },
    };
  }

  fail(res, id, err) {
    const status = err instanceof HTTPError ? err.status : 500;
    const type = err instanceof HTTPError ? err.type : "InternalServerError";
    const message = err instanceof Error ? err.message : String(err);
    this.log.error("request", [["req", id], ["status", status], ["error", message]]);
    if (res.headersSent) {
      res.end();
      return;
    }
    sendJSON(res, status, {error: {message, type, param: null, code: status}});
  }

  async route(req, res) {
    const url = new URL(req.url, `http://${HOST}`);
    const key = `${req.method} ${url.pathname}`;
    switch (key) {
      case "GET /health":
        res.writeHead(200).end();
        return;
      case "GET /version":
        sendJSON(res, 200, {engine: ENGINE, version: this.version, llama_cpp: this.llama.llamaCppRelease.release});
        return;
      case "GET /v1/models":
        sendJSON(res, 200, {object: "list", data: [{id: this.cfg.modelName, object: "model", created: this.created,
          owned_by: "headroom-test-engine", root: this.cfg.model, max_model_len: this.cfg.ctxPerSeq}]});
        return;
      case "GET /metrics":
        this.scheduler.updateGauges();
        res.writeHead(200, {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}).end(this.metrics.render());
        return;
      case "POST /tokenize":
      case "POST /v1/completions":
      case "POST /v1/chat/completions":
        break;
      default:
        sendJSON(res, 404, {error: {message: `no route ${key}`, type: "NotFoundError", param: null, code: 404}});
        return;
    }
    let body;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      const status = err instanceof HTTPError ? err.status : 400;
      const message = err instanceof HTTPError ? err.message : `body is not valid JSON: ${err.message}`;
      this.fail(res, "-", new HTTPError(status, message));
      return;
    }
    if (key === "POST /tokenize") {
      this.tokenizeRoute(res, body);
      return;
    }
    this.generate(req, res, body, key === "POST /v1/chat/completions");
  }

  // vLLM's /tokenize: {"prompt": "..."} or {"messages": [...]} -> {"count", "max_model_len", "tokens"}.
  tokenizeRoute(res, body) {
    try {
      if (body === null || typeof body !== "object") throw bad("body must be a JSON object");
      this.checkModel(body);
      let tokens;
      if (body.messages !== undefined) tokens = this.tokenize(chatPrompt(body.messages));
      else if (typeof body.prompt === "string") tokens = this.tokenize(body.prompt);
      else throw bad("prompt must be a string (or give messages)");
      if (body.add_special_tokens === false && tokens[0] === this.model.tokens.bos) tokens = tokens.slice(1);
      sendJSON(res, 200, {count: tokens.length, max_model_len: this.cfg.ctxPerSeq, tokens, token_strs: null});
    } catch (err) {
      this.fail(res, "-", err);
    }
  }
}

function sendJSON(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, {"Content-Type": "application/json", "Content-Length": Buffer.byteLength(body)}).end(body);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let size = 0;
    req.on("data", (p) => {
      size += p.length;
      if (size > MAX_BODY_BYTES) {
        // Keep reading (and dropping) the rest so that the 413 reaches the client.
        parts.length = 0;
        reject(new HTTPError(413, `body larger than ${MAX_BODY_BYTES} bytes`));
        return;
      }
      parts.push(p);
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

async function main() {
  const log = new Logger();
  let cfg;
  try {
    cfg = parseConfig(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`test engine: ${err.message}\n`);
    process.exit(2);
  }
  if (cfg.maxLifetimeS > 0) setTimeout(() => {
    log.warn("exit", [["reason", "max_lifetime"], ["max_lifetime_s", cfg.maxLifetimeS]]);
    process.exit(3);
  }, cfg.maxLifetimeS * 1000).unref();
  if (cfg.exitOnStdinEof) {
    // The parent holds our stdin open: when it dies, even by SIGKILL, stdin ends and so do we.
    process.stdin.on("end", () => process.exit(0));
    process.stdin.on("error", () => process.exit(0));
    process.stdin.resume();
  }
  for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));

  const llama = await getLlama({
    gpu: false,
    build: "never", // the prebuilt CPU binary or nothing: never compile in a test
    maxThreads: cfg.threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (text !== "") log.warn("llama", [["level", level], ["msg", text]]);
    },
  });
  const model = await llama.loadModel({modelPath: cfg.model, gpuLayers: 0});
  const context = await model.createContext({
    sequences: cfg.sequences,
    contextSize: cfg.ctxPerSeq,
    batchSize: cfg.batchTokens,
    threads: cfg.threads,
  });
  if (context.contextSize < cfg.ctxPerSeq)
    throw new Error(`llama.cpp gave ${context.contextSize} tokens per sequence, asked ${cfg.ctxPerSeq}`);
  const engine = new Engine(cfg, llama, model, context, log);
  log.info("engine start", [["version", engine.version], ["llama", llama.llamaCppRelease.release], ["model", cfg.model],
    ["n_ctx_per_seq", cfg.ctxPerSeq], ["sequences", cfg.sequences], ["kv_budget_tokens", cfg.kvBudgetTokens],
    ["threads", cfg.threads], ["batch", cfg.batchTokens], ["prefix_cache", cfg.prefixCache ? "on" : "off"]]);

  const server = http.createServer((req, res) => {
    engine.route(req, res).catch((err) => engine.fail(res, "-", err));
  });
  server.requestTimeout = 0; // a queued streaming request may legitimately wait long
  server.keepAliveTimeout = 60_000;
  server.listen(cfg.port, HOST, () => {
    process.stdout.write(`listening port=${server.address().port} host=${HOST}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`${new Date().toISOString()} ERROR engine error=${JSON.stringify(String(err?.stack ?? err))}\n`);
  process.exit(1);
});
