package server

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces secret values.
const Redacted = "<redacted>"

// SplitCommand splits a shell command line into words the way /bin/sh
// would for simple commands: single and double quotes, backslash escapes,
// whitespace between words. It does not expand anything. An unterminated
// quote ends at the end of the line.
func SplitCommand(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
			} else {
				cur.WriteString(s[i+1 : i+1+j])
				i += j + 1
			}
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' { // backslash-newline continues the line
				inWord = true
				cur.WriteByte(s[i])
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// secretFlagWords mark a flag, variable or header whose value is a secret
// when one of the name's parts (split at - _ .) is one of them: --api-key,
// HF_TOKEN, MYSQL_PWD, DB_PASS, REDIS_AUTH, -psw, X-Api-Key, but not
// --max-num-batched-tokens or --tokenizer.
var secretFlagWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"credential": true, "credentials": true, "pwd": true, "pass": true, "psw": true, "auth": true,
	"authorization": true,
}

// secretSuffixes mark a name part that ends like one: PGPASSWORD, a
// variable of one word.
var secretSuffixes = []string{"password", "passwd", "secret", "apikey"}

// knownSecretPrefixes are value prefixes of common credentials.
var knownSecretPrefixes = []string{"sk-", "hf_", "ghp_", "gho_", "github_pat_", "xoxb-", "AKIA", "eyJ"}

// LooksLikeToken reports whether a value looks like a credential whatever
// flag it follows: a known prefix (sk-, hf_, ghp_, AKIA, a JWT's eyJ, ...)
// with 8 or more characters after it (hf_token, a name, is not one), or a
// long random-looking string: 32 or more
// characters of the base64/base64url alphabet mixing upper case, lower case
// and digits with at most two separators (- _ /), or 48 or more hex digits.
// Hex strings of 40 (a git commit, e.g. --revision) are kept, and so are
// model names and paths, which have more separators or dots.
func LooksLikeToken(v string) bool {
	for _, p := range knownSecretPrefixes {
		if strings.HasPrefix(v, p) && len(v) >= len(p)+8 {
			return true
		}
	}
	if len(v) < 32 {
		return false
	}
	var upper, lower, digit, seps, hexOnly = false, false, false, 0, true
	for _, r := range v {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		case r == '-' || r == '_' || r == '/':
			seps++
		case r == '+' || r == '=':
		default:
			return false
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			hexOnly = false
		}
	}
	if hexOnly {
		return len(v) >= 48
	}
	return upper && lower && digit && seps <= 2
}

// RedactFlags returns argv with secret values replaced: the value of any
// flag or VAR= assignment whose name mentions a key, token, secret or
// password (--api-key X, --api-key=X, HF_TOKEN=X), an Authorization header
// (-H "Authorization: Bearer X"), any word or part of a word that looks like
// a credential (LooksLikeToken; a value glued to shell punctuation counts),
// and any occurrence of one of the given secrets.
func RedactFlags(argv []string, secrets ...string) []string {
	out, _ := redact(argv, secrets)
	return out
}

// MinSecretBytes is the shortest value SecretValues returns, and the
// shortest secret replaced inside other text: replacing a shorter string
// everywhere in a log would destroy it and hide little. A shorter API key is
// a placeholder (vLLM's EMPTY, "x"), replaced only where it is a whole word
// or a secret flag's value.
const MinSecretBytes = 8

// SecretValues returns the values that RedactFlags hides in argv (besides
// the given secrets), at least MinSecretBytes long, so that they can be
// removed from what the server logs and answers too: servers print their
// own arguments.
func SecretValues(argv []string, secrets ...string) []string {
	_, found := redact(argv, secrets)
	var out []string
	for _, v := range found {
		if len(v) >= MinSecretBytes && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// RedactURL hides a URL's credentials for the record: its user
// information whole (a token is sometimes the user name: https://TOKEN@host)
// and the values of query parameters named like a secret or looking like
// one. A string that is not a URL is redacted as a command-line word.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return RedactFlags([]string{s})[0]
	}
	changed := false
	if u.User != nil {
		u.User = url.User("xxxxx")
		changed = true
	}
	if q := u.Query(); len(q) > 0 {
		for k, vs := range q {
			for i, v := range vs {
				if secretName(k) || LooksLikeToken(v) {
					vs[i] = "xxxxx"
					changed = true
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	if !changed {
		return s
	}
	return u.String()
}

func secretName(name string) bool {
	parts := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	for _, p := range parts {
		if secretFlagWords[p] {
			return true
		}
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(p, suf) {
				return true
			}
		}
	}
	return false
}

// headerName returns the name of a "Name: value" header in w (curl's -H,
// --header), when it names a secret (Authorization, X-Api-Key), and the
// offset just after its colon.
func headerName(w string) (int, bool) {
	j := strings.IndexByte(w, ':')
	if j <= 0 {
		return 0, false
	}
	name := strings.TrimLeft(w[:j], "'\"")
	if name == "" || strings.ContainsAny(name, " =/@") || strings.HasPrefix(name, "-") {
		return 0, false
	}
	return j + 1, secretName(name)
}

// redactTokens replaces every piece of text that looks like a credential
// (LooksLikeToken) by Redacted.
func redactTokens(text []byte) []byte {
	var out []byte
	for _, piece := range tokenPieces(string(text)) {
		if LooksLikeToken(piece) {
			if out == nil {
				out = append([]byte(nil), text...)
			}
			out = bytes.ReplaceAll(out, []byte(piece), []byte(Redacted))
		}
	}
	if out == nil {
		return text
	}
	return out
}

// tokenPieces splits a word at every character that no token contains
// (quotes, shell punctuation, '=', '.', ':'), so that a credential glued to
// them is still seen.
func tokenPieces(w string) []string {
	return strings.FieldsFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '_' || r == '-')
	})
}

// bareValue strips the shell punctuation and quotes around a value, as a
// server would print it.
func bareValue(v string) string { return strings.Trim(v, ";&|()'\"` ") }

// redact returns argv redacted and the secret values it found.
func redact(argv, secrets []string) (out, found []string) {
	out = make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if LooksLikeToken(a) {
			out[i] = Redacted
			found = append(found, a)
			continue
		}
		w := a
		for _, piece := range tokenPieces(a) {
			if LooksLikeToken(piece) {
				w = strings.ReplaceAll(w, piece, Redacted)
				found = append(found, piece)
			}
		}
		for _, s := range secrets {
			if w == s || len(s) >= MinSecretBytes && strings.Contains(w, s) {
				w = strings.ReplaceAll(w, s, Redacted)
			}
		}
		// A header given on the command line: "Authorization: Bearer X",
		// "X-Api-Key: X", or its name and value as two words.
		if j, ok := headerName(a); ok {
			if v := bareValue(a[j:]); v != "" {
				found = append(found, bareValue(strings.TrimPrefix(strings.TrimPrefix(v, "Bearer "), "bearer ")))
				if jw, ok := headerName(w); ok {
					w = w[:jw] + " " + Redacted
				}
			} else if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
				out[i] = w
				out[i+1] = Redacted
				found = append(found, bareValue(strings.TrimPrefix(strings.TrimPrefix(argv[i+1], "Bearer "), "bearer ")))
				i++
				continue
			}
		}
		out[i] = w
		name, value, hasValue := strings.Cut(w, "=")
		isFlag := strings.HasPrefix(w, "-")
		isAssign := hasValue && !isFlag && name != "" && !strings.ContainsAny(name, "/ ")
		switch {
		case (isFlag || isAssign) && hasValue && value != "" && secretName(name):
			out[i] = name + "=" + Redacted
			if _, v, ok := strings.Cut(a, "="); ok {
				found = append(found, bareValue(v))
			}
		case isFlag && !hasValue && secretName(w) && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-"):
			out[i+1] = Redacted
			found = append(found, bareValue(argv[i+1]))
			i++
		}
	}
	return out, found
}
