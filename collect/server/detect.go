package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Engine is what could be learned about the server.
type Engine struct {
	Name             string // a rundir.Engine* name when known, else as the server named itself; "" if unknown
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
			if c, ok := rundir.CanonicalEngine(name); ok {
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
			set(rundir.EngineVLLM, str(m, "version"), "/version")
		default:
			set(ownedBy, str(m, "version"), "/version")
		}
	}
	switch ownedBy {
	case "sglang":
		if m := get("/get_server_info"); m != nil {
			set(rundir.EngineSGLang, str(m, "version"), "/get_server_info")
		}
		set(rundir.EngineSGLang, "", "/v1/models owned_by")
	case "llamacpp":
		if m := get("/props"); m != nil {
			set(rundir.EngineLlamaCpp, str(m, "build_info"), "/props")
		}
		set(rundir.EngineLlamaCpp, "", "/v1/models owned_by")
	case "library":
		if m := get("/api/version"); m != nil {
			set(rundir.EngineOllama, str(m, "version"), "/api/version")
		}
		set(rundir.EngineOllama, "", "/v1/models owned_by")
	}
	if e.Name == "" {
		if m := get("/info"); m != nil && str(m, "model_id") != "" {
			set(rundir.EngineTGI, str(m, "version"), "/info")
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
	{rundir.EngineVLLM, regexp.MustCompile(`vLLM API server version ([0-9][^\s,]*)`)},
	{rundir.EngineVLLM, regexp.MustCompile(`\bvLLM\b.*\bversion ([0-9][^\s,]*)`)},
	{rundir.EngineNodeLlamaCpp, regexp.MustCompile(`engine start version=([^\s]+)`)},
	{rundir.EngineSGLang, regexp.MustCompile(`(?i)sglang.*version[= ]v?([0-9][^\s,]*)`)},
	{rundir.EngineLlamaCpp, regexp.MustCompile(`^build: ([0-9]+ \([0-9a-f]+\))`)},
	{rundir.EngineTGI, regexp.MustCompile(`text_generation_launcher.*version[:= ]"?([0-9][^\s",]*)`)},
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
