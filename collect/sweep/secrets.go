package sweep

import (
	"strings"

	"github.com/headroom-llm/headroom/collect/server"
)

// KnownSecrets gathers every secret a sweep's settings hold, for the one
// redaction pass of everything it writes or prints: the API key, the base
// URL's user, password and query values (and the Basic authorization a
// client makes of them), every value that the server command's redaction
// hides, and credential-looking values pasted into headroom's own
// free-text flags (label, tags, description). The CLI uses it for what it
// prints before a Sweep exists.
func KnownSecrets(baseURL, apiKey, serverCmd string, freeText ...string) *server.Secrets {
	sec := &server.Secrets{}
	sec.Add(apiKey)
	for _, u := range strings.Split(baseURL, ",") { // several replicas
		sec.AddURL(strings.TrimSpace(u))
	}
	if serverCmd != "" {
		sec.Add(server.SecretValues(server.SplitCommand(serverCmd), apiKey)...)
	}
	for _, v := range freeText {
		sec.Add(server.SecretValues(server.SplitCommand(v))...)
	}
	return sec
}

// collectSecrets is KnownSecrets of the sweep's settings, and the values of
// the headers given (--header), which may be credentials of any shape.
func (s *Sweep) collectSecrets() *server.Secrets {
	bases := make([]string, len(s.bases))
	for i, b := range s.bases {
		bases[i] = b.String()
	}
	sec := KnownSecrets(strings.Join(bases, ","), s.cfg.apiKey, s.cfg.serverCmd, append([]string{s.cfg.label, s.cfg.engineDesc}, s.cfg.tags...)...)
	for _, vs := range s.cfg.headers {
		sec.Add(vs...)
	}
	return sec
}
