package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// fakeServer is an OpenAI-compatible streaming server for tests: a
// byte-level tokenizer (tokens = UTF-8 bytes + 1 BOS), one token per chunk,
// and knobs for timing and faults.
type fakeServer struct {
	t *testing.T
	*httptest.Server

	firstDelay  time.Duration // before the first token
	tokenDelay  time.Duration // between tokens
	rejectMin   bool          // 400 for min_tokens (as an old vLLM)
	noTokenize  bool
	noUsage     bool
	chat        bool // answer chat with a role chunk first
	crlf        bool
	noSpace     bool          // "data:{...}" without the space
	noDone      bool          // end the stream without [DONE]
	streamError string        // send {"error": ...} after the first token
	status      int           // answer every generation with this status
	disconnect  int           // drop the connection after this many tokens
	stallAfter  int           // stop sending (but keep the connection) after this many tokens
	longLine    int           // pad the first chunk's JSON with this many bytes
	garbage     bool          // send a data line that is not JSON after the first token
	wantKey     string        // required bearer token
	retryAfter  string        // Retry-After header sent with status
	retryAt     time.Duration // with status: Retry-After is the HTTP date this long after each answer
	failEvery   int           // with status: only every n-th generation request fails
	badUTF8     bool          // text and error messages with invalid UTF-8
	noFinish    bool          // no finish_reason and no [DONE]: the stream just ends
	location    string        // with status 3xx: the Location header
	echoAuth    bool          // with status: the error body echoes the Authorization header
	slots       int           // serve at most this many generations at once; the others wait (0: no limit)
	slotSem     chan struct{}
	hangModels  bool // /v1/models never answers
	hangTokens  bool // /tokenize never answers
	maxModelLen int  // /v1/models lists it (vLLM's max_model_len)

	mu        sync.Mutex
	bodies    []map[string]any
	sends     map[int64][]int64 // request number -> Unix ns of each token chunk's write
	requests  atomic.Int64
	inFlight  atomic.Int64
	streaming atomic.Int64 // requests whose first chunk has been sent
	maxFlight atomic.Int64
}

func newFakeServer(t *testing.T, configure func(*fakeServer)) *fakeServer {
	f := &fakeServer{t: t, sends: map[int64][]int64{}}
	if configure != nil {
		configure(f)
	}
	if f.slots > 0 {
		f.slotSem = make(chan struct{}, f.slots)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	if f.wantKey != "" && r.Header.Get("Authorization") != "Bearer "+f.wantKey {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		if f.hangModels {
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"fake","max_model_len":%d}]}`, f.maxModelLen)
		return
	case "/tokenize":
		if f.hangTokens {
			io.Copy(io.Discard, r.Body) // the server notices the client leave only once the body is read
			<-r.Context().Done()
			return
		}
		if f.noTokenize {
			http.NotFound(w, r)
			return
		}
		var body struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		fmt.Fprintf(w, `{"count":%d}`, len(body.Prompt)+1)
		return
	case "/metrics":
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake-model\"} %d\n", f.inFlight.Load())
		fmt.Fprint(w, "# TYPE vllm:e2e_request_latency_seconds histogram\n"+
			"vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"fake-model\"} 1\n"+
			"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"fake-model\"} 2\n"+
			"vllm:e2e_request_latency_seconds_sum{model_name=\"fake-model\"} 1.5\n"+
			"vllm:e2e_request_latency_seconds_count{model_name=\"fake-model\"} 2\n")
		return
	case "/v1/completions", "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if _, ok := body["min_tokens"]; ok && f.rejectMin {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'min_tokens'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","code":400}`)
		return
	}
	reqNo := f.requests.Add(1)
	if f.status != 0 && (f.failEvery == 0 || reqNo%int64(f.failEvery) == 0) {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		if f.retryAt > 0 {
			w.Header().Set("Retry-After", time.Now().Add(f.retryAt).UTC().Format(http.TimeFormat))
		}
		if f.location != "" {
			w.Header().Set("Location", f.location)
		}
		w.WriteHeader(f.status)
		msg := "overloaded"
		if f.echoAuth {
			msg = "bad credentials: " + r.Header.Get("Authorization")
		}
		if f.badUTF8 {
			msg += " \xff\xfe"
		}
		fmt.Fprintf(w, `{"error":{"message":"%s"}}`, msg) // raw bytes, as a broken server sends
		return
	}
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxFlight.Load()
		if n <= m || f.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	prompt, _ := body["prompt"].(string)
	chat := r.URL.Path == "/v1/chat/completions"
	if chat {
		msgs, _ := body["messages"].([]any)
		if len(msgs) > 0 {
			prompt, _ = msgs[0].(map[string]any)["content"].(string)
		}
	}
	maxTokens := int(body["max_tokens"].(float64))
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	eol := "\n\n"
	if f.crlf {
		eol = "\r\n\r\n"
	}
	prefix := "data: "
	if f.noSpace {
		prefix = "data:"
	}
	send := func(s string) {
		io.WriteString(w, prefix+s+eol)
		fl.Flush()
	}
	if chat {
		send(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	}
	var stamps []int64
	sleep := func(d time.Duration) bool {
		select {
		case <-r.Context().Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	if f.slotSem != nil {
		select {
		case f.slotSem <- struct{}{}:
			defer func() { <-f.slotSem }()
		case <-r.Context().Done():
			return
		}
	}
	if !sleep(f.firstDelay) {
		return
	}
	for i := range maxTokens {
		if i > 0 && !sleep(f.tokenDelay) {
			return
		}
		if f.disconnect > 0 && i == f.disconnect {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		if f.stallAfter > 0 && i == f.stallAfter {
			<-r.Context().Done()
			return
		}
		finish := "null"
		if i == maxTokens-1 && !f.noFinish {
			finish = `"length"`
		}
		pad := ""
		if i == 0 && f.longLine > 0 {
			pad = `,"pad":"` + strings.Repeat("x", f.longLine) + `"`
		}
		var chunk string
		if f.badUTF8 && !chat {
			// raw invalid UTF-8 inside the JSON string, as a broken server may send
			chunk = fmt.Sprintf("{\"choices\":[{\"index\":0,\"text\":\"%d:\xff%d\",\"finish_reason\":%s}]%s}", reqNo, i, finish, pad)
		} else if chat {
			chunk = fmt.Sprintf(`{"id":"c","choices":[{"index":0,"delta":{"content":"%d:%d"},"finish_reason":%s}]%s}`, reqNo, i, finish, pad)
		} else {
			chunk = fmt.Sprintf(`{"id":"c","object":"text_completion","choices":[{"index":0,"text":"%d:%d","logprobs":null,"finish_reason":%s}]%s}`, reqNo, i, finish, pad)
		}
		stamps = append(stamps, time.Now().UnixNano())
		send(chunk)
		if i == 0 {
			f.streaming.Add(1)
			defer f.streaming.Add(-1)
		}
		if i == 0 && f.garbage {
			send(`{"choices":[{"text":"x"}`)
			return
		}
		if i == 0 && f.streamError != "" {
			send(`{"error":{"object":"error","message":"` + f.streamError + `","code":500}}`)
			return
		}
	}
	if f.noFinish {
		return
	}
	f.mu.Lock()
	f.sends[reqNo] = stamps
	f.mu.Unlock()
	if opts, ok := body["stream_options"].(map[string]any); ok && opts["include_usage"] == true && !f.noUsage {
		send(fmt.Sprintf(`{"id":"c","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			len(prompt)+1, maxTokens, len(prompt)+1+maxTokens))
	}
	if !f.noDone {
		send("[DONE]")
	}
}

// memRecorder keeps a sweep's rows in memory.
type memRecorder struct {
	mu       sync.Mutex
	requests []rundir.RequestRow
	tokens   map[string][]rundir.TokenRow
	levels   []rundir.LevelRow
	samples  []rundir.ClientSampleRow
}

func newMemRecorder() *memRecorder { return &memRecorder{tokens: map[string][]rundir.TokenRow{}} }

func (m *memRecorder) Request(r rundir.RequestRow, t []rundir.TokenRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, r)
	m.tokens[r.RequestID] = t
}

func (m *memRecorder) ClientSample(r rundir.ClientSampleRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, r)
}

func (m *memRecorder) LevelDone(l rundir.LevelRow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.levels = append(m.levels, l)
	return nil
}
