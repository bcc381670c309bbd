package server

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Secrets is every secret a headroom process knows (the API key, the
// server's address's user, password and query values, the Basic
// authorization they make, what the server command hides), and the one
// pass that removes them from whatever goes to disk or to the terminal.
// Values of MinSecretBytes or more are replaced wherever they occur; a
// shorter one only where its context marks it (after "Bearer ", inside a
// URL's user information, after "name="), since replacing a short string
// everywhere would destroy a log and hide little. The zero value holds no
// secret; it is safe for concurrent use.
type Secrets struct {
	mu    sync.RWMutex
	pairs map[string]string // what to find → what to write instead
	r     *strings.Replacer
}

// Add records secrets to replace by Redacted (shorter than MinSecretBytes:
// only after "Bearer " or "Basic ").
func (s *Secrets) Add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if v == "" {
			continue
		}
		if len(v) >= MinSecretBytes {
			s.put(v, Redacted)
		}
		s.put("Bearer "+v, "Bearer "+Redacted)
		s.put("Basic "+v, "Basic "+Redacted)
	}
}

// AddURL records the credentials of an address: its user name and password
// (also as the Basic authorization a client makes of them), and its query
// values: each replaced after its "name=", and anywhere when it is named
// like a secret or looks like one.
func (s *Secrets) AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	var vals []string
	s.mu.Lock()
	if u.User != nil {
		user := u.User.Username()
		pass, hasPass := u.User.Password()
		for _, name := range unique(user, url.PathEscape(user), url.QueryEscape(user)) {
			if name != "" {
				s.put("//"+name+"@", "//xxxxx@")
				s.put("//"+name+":", "//xxxxx:")
				vals = append(vals, name)
			}
		}
		if hasPass {
			for _, p := range unique(pass, url.PathEscape(pass), url.QueryEscape(pass)) {
				if p != "" {
					s.put(":"+p+"@", ":xxxxx@")
					vals = append(vals, p)
				}
			}
		}
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		s.put("Basic "+basic, "Basic "+Redacted)
		vals = append(vals, basic)
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if v == "" {
				continue
			}
			for _, ev := range unique(v, url.QueryEscape(v)) {
				s.put(k+"="+ev, k+"=xxxxx")
			}
			if secretName(k) || LooksLikeToken(v) {
				vals = append(vals, v, url.QueryEscape(v))
			}
		}
	}
	s.mu.Unlock()
	// The user name is rarely secret, but a token is sometimes put there
	// (https://TOKEN@host): a long one is replaced anywhere, as a password.
	s.Add(vals...)
}

func unique(vals ...string) []string {
	slices.Sort(vals)
	return slices.Compact(vals)
}

// put records one replacement; the caller holds mu.
func (s *Secrets) put(find, with string) {
	if s.pairs == nil {
		s.pairs = map[string]string{}
	}
	if _, ok := s.pairs[find]; ok {
		return
	}
	s.pairs[find] = with
	s.r = nil
}

// replacer builds the replacer, longest secret first, so that a secret
// containing another is replaced whole.
func (s *Secrets) replacer() *strings.Replacer {
	s.mu.RLock()
	r := s.r
	s.mu.RUnlock()
	if r != nil || s.empty() {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		finds := make([]string, 0, len(s.pairs))
		for f := range s.pairs {
			finds = append(finds, f)
		}
		slices.SortFunc(finds, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
		args := make([]string, 0, 2*len(finds))
		for _, f := range finds {
			args = append(args, f, s.pairs[f])
		}
		s.r = strings.NewReplacer(args...)
	}
	return s.r
}

func (s *Secrets) empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.pairs) == 0
}

// String returns v with every secret replaced.
func (s *Secrets) String(v string) string {
	if s == nil {
		return v
	}
	r := s.replacer()
	if r == nil {
		return v
	}
	// Replacing until nothing changes: a secret that an earlier
	// replacement made appear (a secret split by another) is caught too.
	for range 3 {
		nv := r.Replace(v)
		if nv == v {
			break
		}
		v = nv
	}
	return v
}

// Bytes returns b with every secret replaced (b itself when none occurs).
func (s *Secrets) Bytes(b []byte) []byte {
	if s == nil || s.empty() {
		return b
	}
	if v := s.String(string(b)); v != string(b) {
		return []byte(v)
	}
	return b
}

// Error hides the secrets in an error's message, keeping what it wraps for
// errors.Is and errors.As.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	if msg := s.String(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
