package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/headroom-llm/headroom/engines"
)

// Engine is what could be learned about the server.
type Engine struct {
	Name             string // a package engines name when known, else as the server named itself; "" if unknown
	Version          string
	MaxContextTokens int
	Config           map[string]string // facts read from the server
	Source           string            // where Name/Version came from
}

// Detect asks the server what it is: /version (vLLM, the test engine),
// /v1/models (owned_by, max_model_len), /get_server_info (SGLang), /props
// (llama.cpp), /info (TGI), /api/version (Ollama), and else the first log
// lines. It never fails; what it cannot learn stays empty.
func Detect(ctx context.Context, client *http.Client, baseURL string, header http.Header, logHead []string) Engine {
	e := Engine{Config: map[string]string{}}
	get := func(path string) map[string]any {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, JoinURL(baseURL, path), nil)
		if err != nil {
			return nil
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		var m map[string]any
		if json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&m) != nil {
			return nil
		}
		return m
	}
	str := func(m map[string]any, k string) string {
		switch v := m[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return ""
	}
	ownedBy := ""
	if m := get("/v1/models"); m != nil {
		if data, ok := m["data"].([]any); ok && len(data) > 0 {
			if d, ok := data[0].(map[string]any); ok {
				ownedBy = str(d, "owned_by")
				if n, ok := d["max_model_len"].(float64); ok {
					e.MaxContextTokens = int(n)
				}
				if r := str(d, "root"); r != "" {
					e.Config["model_root"] = r
				}
				if ownedBy != "" {
					e.Config["owned_by"] = ownedBy
				}
			}
		}
	}
	set := func(name, version, source string) {
		if e.Name == "" {
			if c, ok := engines.Canonical(name); ok {
				name = c
			}
			e.Name, e.Source = name, source
		}
		if e.Version == "" && version != "" {
			e.Version = version
		}
	}
	if m := get("/version"); m != nil {
		switch name := str(m, "engine"); {
		case name != "":
			set(name, str(m, "version"), "/version")
			for k := range m {
				if k != "engine" && k != "version" {
					if v := str(m, k); v != "" {
						e.Config[k] = v
					}
				}
			}
		case ownedBy == "vllm" || ownedBy == "":
			set(engines.VLLM, str(m, "version"), "/version")
		default:
			set(ownedBy, str(m, "version"), "/version")
		}
	}
	switch ownedBy {
	case "sglang":
		if m := get("/get_server_info"); m != nil {
			set(engines.SGLang, str(m, "version"), "/get_server_info")
		}
		set(engines.SGLang, "", "/v1/models owned_by")
	case "llamacpp":
		if m := get("/props"); m != nil {
			set(engines.LlamaCpp, str(m, "build_info"), "/props")
		}
		set(engines.LlamaCpp, "", "/v1/models owned_by")
	case "library":
		if m := get("/api/version"); m != nil {
			set(engines.Ollama, str(m, "version"), "/api/version")
		}
		set(engines.Ollama, "", "/v1/models owned_by")
	}
	if e.Name == "" {
		if m := get("/info"); m != nil && str(m, "model_id") != "" {
			set(engines.TGI, str(m, "version"), "/info")
		}
	}
	if e.Name == "" || e.Version == "" {
		if name, version := fromLog(logHead); name != "" {
			set(name, version, "server log")
		}
	}
	if e.Name == "" && ownedBy != "" {
		set(ownedBy, "", "/v1/models owned_by")
	}
	return e
}

var logPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{engines.VLLM, regexp.MustCompile(`vLLM API server version ([0-9][^\s,]*)`)},
	{engines.VLLM, regexp.MustCompile(`\bvLLM\b.*\bversion ([0-9][^\s,]*)`)},
	{engines.NodeLlamaCpp, regexp.MustCompile(`engine start version=([^\s]+)`)},
	{engines.SGLang, regexp.MustCompile(`(?i)sglang.*version[= ]v?([0-9][^\s,]*)`)},
	{engines.LlamaCpp, regexp.MustCompile(`^build: ([0-9]+ \([0-9a-f]+\))`)},
	{engines.TGI, regexp.MustCompile(`text_generation_launcher.*version[:= ]"?([0-9][^\s",]*)`)},
}

// fromLog finds the engine and version in the server's first log lines.
func fromLog(lines []string) (name, version string) {
	for _, l := range lines {
		for _, p := range logPatterns {
			if m := p.re.FindStringSubmatch(l); m != nil {
				return p.name, m[1]
			}
		}
	}
	return "", ""
}
