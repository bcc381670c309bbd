package serverlog

import (
	"strings"
	"testing"
)

// Rules are tried in the order listed among those whose prefix the message
// starts with; a rule that answers stNext passes the line on, and a line no
// rule takes is not matched.
func TestMsgRulesOrderAndNext(t *testing.T) {
	var tried []string
	rule := func(name, prefix string, st status) msgRule {
		return msgRule{prefix, func(_ *Scanner, _, rest []byte) status {
			tried = append(tried, name+":"+string(rest))
			return st
		}}
	}
	rules := newMsgRules(
		rule("a", "Engine ", stNext),
		rule("other", "Other", stEvent),
		rule("b", "Engine 0", stIgnored),
		rule("c", "Engine", stEvent),
	)
	for _, c := range []struct {
		msg   string
		st    status
		ok    bool
		tried string
	}{
		{"Engine 000: x", stIgnored, true, "a:000: x b:00: x"},
		{"Engine 1", stEvent, true, "a:1 c: 1"},
		{"Enginex", stEvent, true, "c:x"},
		{"Nothing", stUnknown, false, ""},
		{"", stUnknown, false, ""},
	} {
		tried = nil
		st, ok := rules.match(nil, []byte(c.msg))
		got := strings.Join(tried, " ")
		if st != c.st || ok != c.ok || got != c.tried {
			t.Errorf("%q: status %d, matched %v, tried %q; want %d, %v, %q", c.msg, st, ok, got, c.st, c.ok, c.tried)
		}
	}
}
