package loadgen

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name, in               string
		textBytes              int
		text, finish, errMsg   string
		usage                  bool
		prompt, completion     int64
		isError, wantSyntaxErr bool
	}{
		{name: "completion", in: `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" ledger","logprobs":null,"finish_reason":null}]}`,
			textBytes: 7, text: " ledger", prompt: -1, completion: -1},
		{name: "completion last", in: `{"choices":[{"index":0,"text":"x","finish_reason":"length","stop_reason":null}],"usage":null}`,
			textBytes: 1, text: "x", finish: "length", prompt: -1, completion: -1},
		{name: "chat role chunk", in: `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			prompt: -1, completion: -1},
		{name: "chat content", in: `{"choices":[{"index":0,"delta":{"content":"h\u00e9\n\ud83d\ude00"}}]}`,
			textBytes: 1 + 2 + 1 + 4, text: `h\u00e9\n\ud83d\ude00`, prompt: -1, completion: -1},
		{name: "chat reasoning", in: `{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}`,
			textBytes: 5, text: "think", prompt: -1, completion: -1},
		{name: "usage only", in: `{"id":"x","choices":[],"usage":{"prompt_tokens":130,"total_tokens":146,"completion_tokens":16}}`,
			usage: true, prompt: 130, completion: 16},
		{name: "usage float", in: `{"usage":{"prompt_tokens":1.0e2,"completion_tokens":7}}`, usage: true, prompt: 100, completion: 7},
		{name: "vllm stream error", in: `{"error":{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}}`,
			isError: true, errMsg: "boom", prompt: -1, completion: -1},
		{name: "object error", in: `{"object":"error","message":"bad","code":400}`, isError: true, errMsg: "bad", prompt: -1, completion: -1},
		{name: "error string", in: ` {"error" : "overloaded"} `, isError: true, errMsg: "overloaded", prompt: -1, completion: -1},
		{name: "null error", in: `{"error":null,"choices":[{"text":"a"}]}`, textBytes: 1, text: "a", prompt: -1, completion: -1},
		{name: "escaped key", in: `{"choices":[{"te\u0078t":"ab"}]}`, textBytes: 2, text: "ab", prompt: -1, completion: -1},
		{name: "nested skip", in: `{"x":[1,{"a":[true,false,null,-0.5e+3,"]"]}],"choices":[{"logprobs":{"t":[{"b":[1]}]},"text":"q"}]}`,
			textBytes: 1, text: "q", prompt: -1, completion: -1},
		{name: "truncated", in: `{"choices":[{"text":"a"`, wantSyntaxErr: true},
		{name: "not object", in: `[1]`, wantSyntaxErr: true},
		{name: "trailing", in: `{} {}`, wantSyntaxErr: true},
		{name: "bad escape", in: `{"choices":[{"text":"\x"}]}`, wantSyntaxErr: true},
		{name: "control char", in: "{\"choices\":[{\"text\":\"a\nb\"}]}", wantSyntaxErr: true},
		{name: "empty", in: ``, wantSyntaxErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c chunk
			var p jparser
			err := p.parseChunk([]byte(tt.in), &c)
			if tt.wantSyntaxErr {
				if err == nil {
					t.Fatalf("no error for %q", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.textBytes != tt.textBytes || string(c.text) != tt.text || string(c.finishReason) != tt.finish ||
				c.hasUsage != tt.usage || c.promptTokens != tt.prompt || c.completionTokens != tt.completion ||
				c.isError != tt.isError || string(c.errMsg) != tt.errMsg {
				t.Errorf("got %+v (text %q finish %q err %q)", c, c.text, c.finishReason, c.errMsg)
			}
		})
	}
}

func TestParseChunkAllocatesNothing(t *testing.T) {
	in := []byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" ledger\u00e9","logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
	var c chunk
	p := new(jparser)
	if n := testing.AllocsPerRun(100, func() { _ = p.parseChunk(in, &c) }); n != 0 {
		t.Errorf("parseChunk allocates %v times per chunk", n)
	}
}

// reference decodes a chunk with encoding/json, as the oracle for fuzzing:
// the same fields, the same rule that values of another type are ignored.
func reference(data []byte) (c chunk, ok bool) {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil || hasDuplicateKeys(data) {
		return c, false
	}
	c.promptTokens, c.completionTokens = -1, -1
	add := func(v any) {
		if s, ok := v.(string); ok {
			c.textBytes += len(s)
		}
	}
	if choices, ok := m["choices"].([]any); ok {
		for _, ch := range choices {
			ch, ok := ch.(map[string]any)
			if !ok {
				continue
			}
			add(ch["text"])
			if d, ok := ch["delta"].(map[string]any); ok {
				add(d["content"])
				add(d["reasoning_content"])
				add(d["reasoning"])
			}
			if f, ok := ch["finish_reason"].(string); ok {
				c.finishReason = []byte(f)
			}
		}
	}
	if u, ok := m["usage"].(map[string]any); ok {
		c.hasUsage = true
		if v, ok := u["prompt_tokens"].(float64); ok {
			c.promptTokens = int64(v)
		}
		if v, ok := u["completion_tokens"].(float64); ok {
			c.completionTokens = int64(v)
		}
	}
	e, hasErr := m["error"]
	c.isError = (hasErr && e != nil) || m["object"] == "error"
	return c, true
}

// hasDuplicateKeys reports whether any object in data repeats a key
// (encoding/json keeps the last; the chunk parser sees every one).
func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys  map[string]bool
		isObj bool
		key   bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.isObj {
					top.key = true
				}
				stack = append(stack, &frame{keys: map[string]bool{}, isObj: v == '{', key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.isObj && top.key {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.isObj {
			top.key = true
		}
	}
}

func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"text":" ledger","finish_reason":null}]}`,
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"delta":{"content":"\ud83d\ude00\u00e9"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":{"message":"x"}}`, `{"object":"error","message":"y"}`, `{"usage":null,"choices":[]}`,
		`{"a":[1,2,{"b":null}],"choices":[null,{"text":"\"\\\/\b\f\n\r\t"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got chunk
		var p jparser
		err := p.parseChunk(data, &got)
		want, ok := reference(data)
		if !ok || !utf8.Valid(data) {
			return // lenient on what encoding/json rejects; invalid UTF-8 is counted raw
		}
		if err != nil {
			t.Fatalf("parseChunk rejected valid JSON %q: %v", data, err)
		}
		if got.textBytes != want.textBytes || string(got.finishReason) != string(want.finishReason) ||
			got.hasUsage != want.hasUsage || got.promptTokens != want.promptTokens ||
			got.completionTokens != want.completionTokens || got.isError != want.isError {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// A vLLM completion chunk of the usual size (~190 bytes).
var benchChunk = []byte(`{"id":"cmpl-8f2c1e6a9b7d4c1f","object":"text_completion","created":1764460800,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" ledger","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)

func BenchmarkParseChunk(b *testing.B) {
	var c chunk
	p := new(jparser)
	b.SetBytes(int64(len(benchChunk)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.parseChunk(benchChunk, &c); err != nil || c.textBytes != 7 {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSON decodes the same chunk into a struct with only the
// needed fields, the usual way: the cost parseChunk avoids.
func BenchmarkEncodingJSON(b *testing.B) {
	var v struct {
		Choices []struct {
			Text         string  `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	b.SetBytes(int64(len(benchChunk)))
	b.ReportAllocs()
	for b.Loop() {
		v.Choices = v.Choices[:0]
		if err := json.Unmarshal(benchChunk, &v); err != nil || v.Choices[0].Text != " ledger" {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream reads a whole stream of 256 chunks through the SSE
// scanner and the chunk parser, as one stream's goroutine does.
func BenchmarkStream(b *testing.B) {
	var stream bytes.Buffer
	for range 256 {
		stream.WriteString("data: ")
		stream.Write(benchChunk)
		stream.WriteString("\n\n")
	}
	stream.WriteString("data: [DONE]\n\n")
	data := stream.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var c chunk
	p := new(jparser)
	r := bytes.NewReader(data)
	for b.Loop() {
		r.Reset(data)
		sc := newLineScanner(r, 4096, DefaultMaxLineBytes)
		n := 0
		for {
			line, _, err := sc.next()
			if err != nil {
				break
			}
			if f, v := sseField(line); string(f) == "data" && string(v) != "[DONE]" {
				if err := p.parseChunk(v, &c); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		if n != 256 {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/chunk")
}
