package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// vllmBenchServeFlags is every flag of vllm bench serve, copied as names
// from vllm's source: add_cli_args in vllm/benchmarks/serve.py
// (vllm-project/vllm at def9ce85ba1079af970a58ed3d42dd861ae35d58) and
// add_dataset_parser in vllm/benchmarks/datasets/arg_utils.py (at
// 237145ea190a901f93c570f157091fe43835bc63), which serve.py calls first.
var vllmBenchServeFlags = []string{
	// serve.py
	"label", "backend", "base-url", "host", "port", "endpoint", "header", "max-concurrency", "model", "input-len",
	"output-len", "tokenizer", "tokenizer-mode", "use-beam-search", "logprobs", "request-rate", "burstiness",
	"trust-remote-code", "disable-tqdm", "num-warmups", "profile", "save-result", "save-detailed", "append-result",
	"metadata", "result-dir", "result-filename", "ignore-eos", "percentile-metrics", "metric-percentiles", "goodput",
	"request-id-prefix", "top-p", "top-k", "min-p", "temperature", "frequency-penalty", "presence-penalty",
	"repetition-penalty", "common-prefix-len", "served-model-name", "lora-modules", "ramp-up-strategy",
	"ramp-up-start-rps", "ramp-up-end-rps", "ready-check-timeout-sec", "extra-body",
	// datasets/arg_utils.py
	"seed", "num-prompts", "dataset-name", "no-stream", "dataset-path", "no-oversample", "skip-chat-template",
	"disable-shuffle", "custom-output-len", "spec-bench-output-len", "spec-bench-category", "sonnet-input-len",
	"sonnet-output-len", "sonnet-prefix-len", "sharegpt-output-len", "blazedit-min-distance", "blazedit-max-distance",
	"random-input-len", "random-output-len", "random-range-ratio", "random-prefix-len", "random-batch-size",
	"no-reranker", "random-mm-base-items-per-request", "random-mm-num-mm-items-range-ratio",
	"random-mm-limit-mm-per-prompt", "random-mm-bucket-config", "hf-subset", "hf-split", "hf-name", "hf-output-len",
	"prefix-repetition-prefix-len", "prefix-repetition-suffix-len", "prefix-repetition-num-prefixes",
	"prefix-repetition-output-len",
}

// Every vllm bench serve flag is known to headroom sweep and has its row
// in docs/sweep.md's table: a row naming headroom's flag for those that
// mean the same, "none" with the reason for the others, which answer with
// that reason (exit 2, one line) instead of "unknown flag".
func TestEveryVLLMBenchFlagMapped(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sweep.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## vllm bench serve's flags\n")
	section, _, _ = strings.Cut(section, "\n## ")
	flagRe := regexp.MustCompile("`--([a-z0-9-]+)")
	rows := map[string]string{} // vllm flag -> headroom's cell
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`--") {
			continue
		}
		for _, m := range flagRe.FindAllStringSubmatch(cells[1], -1) {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("docs/sweep.md: --%s has two rows", m[1])
			}
			rows[m[1]] = strings.TrimSpace(cells[2])
		}
	}
	fl := newSweepCmd().Flags()
	for _, name := range vllmBenchServeFlags {
		cell, documented := rows[name]
		_, without := vllmWithout[name]
		switch {
		case !documented:
			t.Errorf("--%s: no row in docs/sweep.md's vllm bench serve table", name)
		case fl.Lookup(name) == nil:
			t.Errorf("--%s: headroom sweep does not know it", name)
		case without != (cell == "none"):
			t.Errorf("--%s: the table says %q, the command has an equivalent: %v", name, cell, !without)
		}
		for _, m := range flagRe.FindAllStringSubmatch(cell, -1) {
			if f := fl.Lookup(m[1]); f == nil || vllmWithout[m[1]] != "" {
				t.Errorf("--%s: the table's headroom flag --%s is not one", name, m[1])
			}
		}
	}
	for name := range rows {
		if !slices.Contains(vllmBenchServeFlags, name) {
			t.Errorf("docs/sweep.md's table has --%s, which vllm bench serve does not have", name)
		}
	}
	for name, reason := range vllmWithout {
		args := []string{"sweep", "--" + name}
		if !slices.Contains(vllmWithoutSwitches, name) {
			args = append(args, "1")
		}
		code, _, errs := headroom(t, args...)
		if code != 2 || !strings.Contains(errs, reason) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}
