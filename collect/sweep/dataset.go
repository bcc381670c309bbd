package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// datasetRecord is one prompt of a JSONL dataset.
type datasetRecord struct {
	prompt       string          // completions text, or the user message for chat
	messages     json.RawMessage // chat messages, verbatim
	outputTokens int             // 0: from the output distribution
	promptTokens int             // 0: unknown
}

// readDataset reads a JSONL file of prompts. Each line is an object with
// "prompt" (or "text") as a string, or "messages" as a chat message list,
// and optionally "output_tokens" (or "max_tokens") and "prompt_tokens".
// Blank lines are skipped; any other bad line is an error naming it.
func readDataset(path string) ([]datasetRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	recs, err := parseDataset(f)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return recs, nil
}

func parseDataset(r io.Reader) ([]datasetRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var recs []datasetRecord
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v struct {
			Prompt       *string         `json:"prompt"`
			Text         *string         `json:"text"`
			Messages     json.RawMessage `json:"messages"`
			OutputTokens int             `json:"output_tokens"`
			MaxTokens    int             `json:"max_tokens"`
			PromptTokens int             `json:"prompt_tokens"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("line %d: expected a JSON object with \"prompt\" or \"messages\": %v", line, err)
		}
		if v.OutputTokens < 0 || v.MaxTokens < 0 || v.PromptTokens < 0 {
			return nil, fmt.Errorf("line %d: token counts must not be negative", line)
		}
		if v.OutputTokens > MaxTokens || v.MaxTokens > MaxTokens || v.PromptTokens > MaxTokens {
			return nil, fmt.Errorf("line %d: token counts of more than %d: no model takes that many", line, MaxTokens)
		}
		rec := datasetRecord{outputTokens: max(v.OutputTokens, v.MaxTokens), promptTokens: v.PromptTokens}
		switch {
		case v.Prompt != nil:
			rec.prompt = *v.Prompt
		case v.Text != nil:
			rec.prompt = *v.Text
		case len(v.Messages) > 0 && v.Messages[0] == '[':
			var msgs []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			}
			if err := json.Unmarshal(v.Messages, &msgs); err != nil || len(msgs) == 0 {
				return nil, fmt.Errorf("line %d: \"messages\" must be a non-empty list of {role, content}", line)
			}
			rec.messages = append(json.RawMessage(nil), v.Messages...)
			if s, ok := msgs[len(msgs)-1].Content.(string); ok {
				rec.prompt = s
			}
		default:
			return nil, fmt.Errorf("line %d: expected \"prompt\", \"text\" or \"messages\"", line)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no prompts")
	}
	return recs, nil
}
