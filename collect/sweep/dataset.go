package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Dataset formats, named as vllm bench serve's --dataset-name names them.
const (
	// DatasetCustom is JSONL of prompts: {"prompt": …} (vllm bench's custom
	// dataset), or "text", or chat "messages"; optional "output_tokens"
	// (or "max_tokens") and "prompt_tokens".
	DatasetCustom = "custom"
	// DatasetShareGPT is ShareGPT's JSON: an array (or JSONL) of
	// {"conversations": [{"from", "value"}, …]}.
	DatasetShareGPT = "sharegpt"
	// DatasetHF is JSONL as the Hugging Face datasets library writes a
	// dataset's rows (Dataset.to_json): rows of conversations, messages,
	// turns, instruction/input/output, prompt/completion or question/answer.
	DatasetHF = "hf"
	// DatasetRandom is generated prompts (no file).
	DatasetRandom = "random"
)

// DatasetNames are the formats a dataset file can have.
var DatasetNames = []string{DatasetCustom, DatasetShareGPT, DatasetHF}

// datasetRecord is one prompt of a dataset, with its reference answer when
// the dataset has one.
type datasetRecord struct {
	prompt       string          // completions text, or the user message for chat
	messages     json.RawMessage // chat messages, verbatim (custom datasets)
	reference    string          // the dataset's answer: its length is the output length
	hasReference bool
	outputTokens int // given by the record; 0: from the reference or the output distribution
	promptTokens int // given by the record, or counted; 0: unknown
	// turns is the whole conversation, for multi-turn sessions, with each
	// message's role in roles ("user" or "assistant"; system messages are
	// left out).
	turns []string
	roles []string
}

// readDataset reads a dataset file of the given format; "" detects it from
// the content: a JSON array, or rows with "conversations", is ShareGPT;
// rows with "prompt", "text" or "messages" are custom; other rows are
// HF-style.
func readDataset(path, format string) ([]datasetRecord, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	recs, format, err := parseDatasetAs(bufio.NewReaderSize(f, 1<<20), format)
	if err != nil {
		return nil, format, fmt.Errorf("dataset %s: %w", path, err)
	}
	return recs, format, nil
}

// parseDataset reads a custom JSONL dataset.
func parseDataset(r io.Reader) ([]datasetRecord, error) {
	recs, _, err := parseDatasetAs(bufio.NewReader(r), DatasetCustom)
	return recs, err
}

func parseDatasetAs(r *bufio.Reader, format string) ([]datasetRecord, string, error) {
	first, err := firstByte(r)
	if err != nil {
		return nil, format, err
	}
	if first == '[' {
		// A JSON array: ShareGPT's own files.
		if format != "" && format != DatasetShareGPT {
			return nil, format, fmt.Errorf("a JSON array, not the JSONL a %s dataset is (ShareGPT's files are arrays: --dataset-name sharegpt)", format)
		}
		recs, err := parseShareGPTArray(r)
		return recs, DatasetShareGPT, err
	}
	var recs []datasetRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, format, fmt.Errorf("line %d: not a JSON object (%s)", line, jsonProblem(err))
		}
		if format == "" {
			format = detectFormat(row)
		}
		var rec datasetRecord
		switch format {
		case DatasetCustom:
			rec, err = customRecord(row)
		case DatasetShareGPT:
			rec, err = conversationRecord(row["conversations"])
		default:
			rec, err = hfRecord(row)
		}
		if err != nil {
			return nil, format, fmt.Errorf("line %d: %w", line, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, format, err
	}
	if len(recs) == 0 {
		return nil, format, errors.New("no prompts")
	}
	return recs, format, nil
}

func firstByte(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			return 0, errors.New("no prompts")
		}
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\n' && b != '\r' && b != '\t' {
			return b, r.UnreadByte()
		}
	}
}

// jsonProblem says what is wrong with a JSON value in words, without Go
// type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%q has the wrong kind of value", te.Field)
		}
		return "the wrong kind of JSON value"
	}
	return "invalid JSON"
}

func detectFormat(row map[string]json.RawMessage) string {
	if _, ok := row["conversations"]; ok {
		return DatasetShareGPT
	}
	for _, k := range []string{"prompt", "text", "messages"} {
		if _, ok := row[k]; ok {
			return DatasetCustom
		}
	}
	return DatasetHF
}

// parseShareGPTArray reads ShareGPT's JSON array one conversation at a time.
func parseShareGPTArray(r io.Reader) ([]datasetRecord, error) {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not a JSON array (%s)", jsonProblem(err))
	}
	var recs []datasetRecord
	for i := 0; dec.More(); i++ {
		var entry map[string]json.RawMessage
		if err := dec.Decode(&entry); err != nil {
			return nil, fmt.Errorf("entry %d: not a JSON object (%s)", i, jsonProblem(err))
		}
		conv, ok := entry["conversations"]
		if !ok {
			return nil, fmt.Errorf("entry %d: no \"conversations\" (a ShareGPT entry is {\"conversations\": [{\"from\", \"value\"}, …]})", i)
		}
		rec, err := conversationRecord(conv)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil, errors.New("no conversations")
	}
	return recs, nil
}

// turn is one message of a conversation, in ShareGPT's or OpenAI's names.
type turn struct {
	From    string          `json:"from"`
	Value   *string         `json:"value"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// roleOf names a message's author as the chat API does: ShareGPT's
// "human" is the user; "gpt" (and any other author) the assistant.
func roleOf(t turn) string {
	who := strings.ToLower(t.From)
	if who == "" {
		who = strings.ToLower(t.Role)
	}
	switch who {
	case "human", "user":
		return "user"
	case "system":
		return "system"
	}
	return "assistant"
}

func (t turn) text() (string, bool) {
	if t.Value != nil {
		return *t.Value, true
	}
	var s string
	if json.Unmarshal(t.Content, &s) == nil {
		return s, true
	}
	return "", false
}

// conversationRecord is a conversation's first turn as the prompt and its
// second as the reference answer, as vllm bench takes ShareGPT; a
// conversation of one turn has no reference (vllm bench skips it: so does
// the sampling, see validFor).
func conversationRecord(raw json.RawMessage) (datasetRecord, error) {
	var turns []turn
	if err := json.Unmarshal(raw, &turns); err != nil {
		return datasetRecord{}, fmt.Errorf("\"conversations\" is not a list of {\"from\", \"value\"} (%s)", jsonProblem(err))
	}
	var rec datasetRecord
	for i, t := range turns {
		s, ok := t.text()
		if !ok {
			return datasetRecord{}, fmt.Errorf("turn %d has no text \"value\"", i)
		}
		rec.turns = append(rec.turns, s)
		rec.roles = append(rec.roles, roleOf(t))
	}
	if len(rec.turns) > 0 {
		rec.prompt = rec.turns[0]
	}
	if len(rec.turns) > 1 {
		rec.reference, rec.hasReference = rec.turns[1], true
	}
	return rec, nil
}

// customRecord reads a custom row: "prompt" (or "text") as a string, or
// "messages" as a chat message list (sent verbatim with the chat endpoint;
// for completions the last message's content is the prompt), optional
// "output_tokens" (or "max_tokens") and "prompt_tokens".
func customRecord(row map[string]json.RawMessage) (datasetRecord, error) {
	var v struct {
		Prompt       *string         `json:"prompt"`
		Text         *string         `json:"text"`
		Messages     json.RawMessage `json:"messages"`
		OutputTokens int             `json:"output_tokens"`
		MaxTokens    int             `json:"max_tokens"`
		PromptTokens int             `json:"prompt_tokens"`
	}
	if err := remarshal(row, &v); err != nil {
		return datasetRecord{}, fmt.Errorf("expected \"prompt\" as a string, or \"messages\" (%s)", jsonProblem(err))
	}
	if v.OutputTokens < 0 || v.MaxTokens < 0 || v.PromptTokens < 0 {
		return datasetRecord{}, errors.New("token counts must not be negative")
	}
	if v.OutputTokens > MaxTokens || v.MaxTokens > MaxTokens || v.PromptTokens > MaxTokens {
		return datasetRecord{}, fmt.Errorf("token counts of more than %d: no model takes that many", MaxTokens)
	}
	rec := datasetRecord{outputTokens: max(v.OutputTokens, v.MaxTokens), promptTokens: v.PromptTokens}
	switch {
	case v.Prompt != nil:
		rec.prompt = *v.Prompt
	case v.Text != nil:
		rec.prompt = *v.Text
	case len(v.Messages) > 0 && v.Messages[0] == '[':
		var msgs []turn
		if err := json.Unmarshal(v.Messages, &msgs); err != nil || len(msgs) == 0 {
			return datasetRecord{}, errors.New("\"messages\" must be a non-empty list of {role, content}")
		}
		rec.messages = append(json.RawMessage(nil), v.Messages...)
		if s, ok := msgs[len(msgs)-1].text(); ok {
			rec.prompt = s
		}
		for _, m := range msgs {
			if s, ok := m.text(); ok {
				rec.turns, rec.roles = append(rec.turns, s), append(rec.roles, roleOf(m))
			}
		}
	default:
		return datasetRecord{}, errors.New("expected \"prompt\", \"text\" or \"messages\"")
	}
	return rec, nil
}

func remarshal(row map[string]json.RawMessage, v any) error {
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// hfRecord reads a row of a Hugging Face dataset exported as JSONL, by
// the fields the common chat and instruction datasets use: conversations
// (ShareGPT-like), messages (OpenAI-style: the first user message and the
// assistant's answer after it), turns (MT-Bench: the first turn, no
// reference), instruction with optional input and output (Alpaca,
// InstructCoder), prompt with completion or response, question with answer
// (GSM8K).
func hfRecord(row map[string]json.RawMessage) (datasetRecord, error) {
	str := func(k string) (string, bool) {
		var s string
		raw, ok := row[k]
		return s, ok && json.Unmarshal(raw, &s) == nil
	}
	if raw, ok := row["conversations"]; ok {
		return conversationRecord(raw)
	}
	if raw, ok := row["messages"]; ok {
		var msgs []turn
		if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
			return datasetRecord{}, errors.New("\"messages\" must be a non-empty list of {role, content}")
		}
		var rec datasetRecord
		for _, m := range msgs {
			if m.Role == "system" {
				continue
			}
			s, ok := m.text()
			if !ok {
				return datasetRecord{}, errors.New("a message has no text \"content\"")
			}
			rec.turns = append(rec.turns, s)
			rec.roles = append(rec.roles, roleOf(m))
		}
		if len(rec.turns) == 0 {
			return datasetRecord{}, errors.New("\"messages\" has no user message")
		}
		rec.prompt = rec.turns[0]
		if len(rec.turns) > 1 {
			rec.reference, rec.hasReference = rec.turns[1], true
		}
		return rec, nil
	}
	if raw, ok := row["turns"]; ok {
		var turns []string
		if err := json.Unmarshal(raw, &turns); err != nil || len(turns) == 0 {
			return datasetRecord{}, errors.New("\"turns\" must be a non-empty list of strings")
		}
		// MT-Bench: every entry is a user turn, none answered.
		rec := datasetRecord{prompt: turns[0], turns: turns}
		for range turns {
			rec.roles = append(rec.roles, "user")
		}
		return rec, nil
	}
	if ins, ok := str("instruction"); ok {
		rec := datasetRecord{prompt: ins}
		if in, ok := str("input"); ok && strings.TrimSpace(in) != "" {
			rec.prompt += "\n\n" + in
		}
		for _, k := range []string{"output", "response"} {
			if out, ok := str(k); ok {
				rec.reference, rec.hasReference = out, true
				break
			}
		}
		return rec, nil
	}
	for _, pair := range [][2]string{{"prompt", "completion"}, {"prompt", "response"}, {"question", "answer"}, {"prompt", ""}, {"question", ""}} {
		if p, ok := str(pair[0]); ok {
			rec := datasetRecord{prompt: p}
			if pair[1] != "" {
				if ref, ok := str(pair[1]); ok {
					rec.reference, rec.hasReference = ref, true
				} else {
					continue
				}
			}
			return rec, nil
		}
	}
	return datasetRecord{}, errors.New("no prompt field: expected conversations, messages, turns, instruction, prompt or question")
}
