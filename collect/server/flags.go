package server

import (
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

// secretFlagWords mark a flag or variable whose value is a secret when one
// of the name's parts (split at - _ .) is one of them: --api-key, HF_TOKEN,
// but not --max-num-batched-tokens or --tokenizer.
var secretFlagWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"credential": true, "credentials": true,
}

// knownSecretPrefixes are value prefixes of common credentials.
var knownSecretPrefixes = []string{"sk-", "hf_", "ghp_", "gho_", "github_pat_", "xoxb-", "AKIA"}

// RedactFlags returns argv with secret values replaced: the value of any
// flag or VAR= assignment whose name mentions a key, token, secret or
// password (--api-key X, --api-key=X, HF_TOKEN=X), any word that looks like
// a known credential, and any word containing one of the given secrets.
func RedactFlags(argv []string, secrets ...string) []string {
	out := make([]string, len(argv))
	secretName := func(name string) bool {
		parts := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
		for _, p := range parts {
			if secretFlagWords[p] {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		out[i] = a
		for _, s := range secrets {
			if s != "" && strings.Contains(a, s) {
				out[i] = strings.ReplaceAll(a, s, Redacted)
				a = out[i]
			}
		}
		for _, p := range knownSecretPrefixes {
			if strings.HasPrefix(a, p) && len(a) > len(p)+4 {
				out[i] = Redacted
			}
		}
		name, value, hasValue := strings.Cut(a, "=")
		isFlag := strings.HasPrefix(a, "-")
		isAssign := hasValue && !isFlag && name != "" && !strings.ContainsAny(name, "/ ")
		switch {
		case (isFlag || isAssign) && hasValue && secretName(name) && value != "":
			out[i] = name + "=" + Redacted
		case isFlag && !hasValue && secretName(a) && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-"):
			out[i+1] = Redacted
			i++
		}
	}
	return out
}
