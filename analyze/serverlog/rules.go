package serverlog

// A msgRule reads the messages that start with prefix: read gets the
// whole message and the rest after the prefix. A rule whose prefix
// matched but whose line it is not after all (a prefix shared by two
// kinds of line) returns stNext, and the rules after it are tried.
type msgRule struct {
	prefix string
	read   func(s *Scanner, msg, rest []byte) status
}

// msgRules are an engine's message rules filed by the first byte of their
// prefix, so that a message is compared only with the prefixes it can
// start with, in the order the rules are listed.
type msgRules [256][]msgRule

func newMsgRules(rules ...msgRule) *msgRules {
	t := new(msgRules)
	for _, r := range rules {
		if r.prefix == "" {
			panic("serverlog: a message rule with an empty prefix")
		}
		t[r.prefix[0]] = append(t[r.prefix[0]], r)
	}
	return t
}

// match is the status of the first rule that reads msg; ok is false when
// none does.
func (t *msgRules) match(s *Scanner, msg []byte) (st status, ok bool) {
	if len(msg) == 0 {
		return stUnknown, false
	}
	for _, r := range t[msg[0]] {
		if rest, hit := afterPrefix(msg, r.prefix); hit {
			if st := r.read(s, msg, rest); st != stNext {
				return st, true
			}
		}
	}
	return stUnknown, false
}

// The rules' common readers: a fact from the rest of the line (an integer
// or a size) or a constant one, and a request's id.

func intRule(prefix, key string) msgRule {
	return msgRule{prefix, func(s *Scanner, _, rest []byte) status { return s.intFact(key, rest) }}
}

func sizeRule(prefix, key string) msgRule {
	return msgRule{prefix, func(s *Scanner, _, rest []byte) status { return s.sizeFact(key, rest) }}
}

func constRule(prefix, key, value string) msgRule {
	return msgRule{prefix, func(s *Scanner, _, _ []byte) status { return s.fact(key, value) }}
}

func requestRule(prefix, action string) msgRule {
	return msgRule{prefix, func(s *Scanner, _, rest []byte) status { return s.request(action, trimID(rest)) }}
}
