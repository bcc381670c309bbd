package sweep

import "github.com/headroom-llm/headroom/collect/server"

// collectSecrets gathers every secret the sweep knows, for the one
// redaction pass of everything it writes or prints: the API key, the base
// URL's user, password and query values (and the Basic authorization a
// client makes of them), the values of the headers given, every value that the server command's redaction
// hides, and credential-looking values pasted into headroom's own
// free-text flags (label, tags, description).
func (s *Sweep) collectSecrets() *server.Secrets {
	sec := &server.Secrets{}
	sec.Add(s.cfg.apiKey)
	for _, vs := range s.cfg.headers {
		sec.Add(vs...)
	}
	sec.AddURL(s.base.String())
	if s.cfg.serverCmd != "" {
		sec.Add(server.SecretValues(server.SplitCommand(s.cfg.serverCmd), s.cfg.apiKey)...)
	}
	for _, v := range append([]string{s.cfg.label, s.cfg.engineDesc}, s.cfg.tags...) {
		sec.Add(server.SecretValues(server.SplitCommand(v))...)
	}
	return sec
}
