package serverlog

import (
	"sync"
	"time"
)

// Fixed-layout timestamp readers. They check every digit and return false
// rather than guessing, so that a line which merely resembles a timestamp
// is not taken for one.

// clock reads "HH:MM:SS" at b[i:].
func clock(b []byte, i int) (h, m, s int, ok bool) {
	if i+8 > len(b) || b[i+2] != ':' || b[i+5] != ':' {
		return 0, 0, 0, false
	}
	h, ok1 := num2(b, i)
	m, ok2 := num2(b, i+3)
	s, ok3 := num2(b, i+6)
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 60 {
		return 0, 0, 0, false
	}
	return h, m, s, true
}

// monthDayClock reads vLLM's "MM-DD HH:MM:SS" at the start of b.
func monthDayClock(b []byte) (mon, day, h, m, s int, ok bool) {
	if len(b) < 14 || b[2] != '-' || b[5] != ' ' {
		return
	}
	var ok1, ok2 bool
	mon, ok1 = num2(b, 0)
	day, ok2 = num2(b, 3)
	if !ok1 || !ok2 || mon < 1 || mon > 12 || day < 1 || day > 31 {
		return 0, 0, 0, 0, 0, false
	}
	h, m, s, ok = clock(b, 6)
	return
}

// dateClock reads "YYYY-MM-DD HH:MM:SS" (or with 'T') at the start of b.
func dateClock(b []byte) (y, mon, day, h, m, s int, ok bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') {
		return
	}
	y1, ok1 := num2(b, 0)
	y2, ok2 := num2(b, 2)
	mon, ok3 := num2(b, 5)
	day, ok4 := num2(b, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 || mon < 1 || mon > 12 || day < 1 || day > 31 {
		return 0, 0, 0, 0, 0, 0, false
	}
	y = y1*100 + y2
	h, m, s, ok = clock(b, 11)
	return
}

// fractionNS reads the digits of a fraction of a second at the start of b
// (the "123" of ".123") as nanoseconds; digits past the ninth are read and
// dropped. It returns the nanoseconds and the number of digits, 0 if none.
func fractionNS(b []byte) (ns, n int) {
	for n < len(b) && isDigit(b[n]) {
		if n < 9 {
			ns = ns*10 + int(b[n]-'0')
		}
		n++
	}
	for d := n; d > 0 && d < 9; d++ {
		ns *= 10
	}
	return ns, n
}

// isoTime reads an RFC 3339 / ISO 8601 time at the start of b:
// "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM|±HHMM)". It returns the time and the
// number of bytes used. A time without a zone is not accepted: callers use
// it for wrappers, whose times are always zoned.
func isoTime(b []byte) (time.Time, int, bool) {
	y, mon, day, h, m, s, ok := dateClock(b)
	if !ok || b[10] != 'T' {
		return time.Time{}, 0, false
	}
	i := 19
	ns := 0
	if i < len(b) && (b[i] == '.' || b[i] == ',') {
		var digits int
		if ns, digits = fractionNS(b[i+1:]); digits == 0 {
			return time.Time{}, 0, false
		}
		i += 1 + digits
	}
	if i >= len(b) {
		return time.Time{}, 0, false
	}
	var loc *time.Location
	switch b[i] {
	case 'Z', 'z':
		loc = time.UTC
		i++
	case '+', '-':
		sign := 1
		if b[i] == '-' {
			sign = -1
		}
		zh, ok1 := num2(b, i+1)
		if !ok1 {
			return time.Time{}, 0, false
		}
		j := i + 3
		if j < len(b) && b[j] == ':' {
			j++
		}
		zm, ok2 := num2(b, j)
		if !ok2 || zh > 23 || zm > 59 {
			return time.Time{}, 0, false
		}
		off := sign * (zh*3600 + zm*60)
		if off == 0 {
			loc = time.UTC
		} else {
			loc = fixedZone(off)
		}
		i = j + 2
	default:
		return time.Time{}, 0, false
	}
	t := time.Date(y, time.Month(mon), day, h, m, s, ns, loc)
	if t.IsZero() {
		// 0001-01-01T00:00:00Z is no log's time, and the zero Time means
		// "no stamp" to every caller (found by FuzzUnwrap).
		return time.Time{}, 0, false
	}
	return t, i, true
}

// fixedZones caches zones by offset so a log with a fixed offset does not
// allocate one per line. Offsets are bounded (±24h in minutes), so is the map.
var fixedZones sync.Map // int -> *time.Location

func fixedZone(off int) *time.Location {
	if l, ok := fixedZones.Load(off); ok {
		return l.(*time.Location)
	}
	l, _ := fixedZones.LoadOrStore(off, time.FixedZone("", off))
	return l.(*time.Location)
}

var monthAbbrev = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// syslogTime reads journald's short format stamp "Mon DD HH:MM:SS" (day
// padded with a space or a zero) with an optional ".micros", at the start
// of b. It returns month, day, clock, nanoseconds and bytes used.
func syslogTime(b []byte) (mon, day, h, m, s, ns, n int, ok bool) {
	if len(b) < 15 || b[3] != ' ' || b[6] != ' ' {
		return
	}
	for i, a := range monthAbbrev {
		if bstr(b[:3]) == a {
			mon = i + 1
			break
		}
	}
	if mon == 0 {
		return
	}
	switch {
	case b[4] == ' ' && isDigit(b[5]):
		day = int(b[5] - '0')
	case isDigit(b[4]) && isDigit(b[5]):
		day = int(b[4]-'0')*10 + int(b[5]-'0')
	default:
		return 0, 0, 0, 0, 0, 0, 0, false
	}
	if day < 1 || day > 31 {
		return 0, 0, 0, 0, 0, 0, 0, false
	}
	h, m, s, ok = clock(b, 7)
	if !ok {
		return
	}
	n = 15
	if n < len(b) && b[n] == '.' {
		var digits int
		ns, digits = fractionNS(b[n+1:])
		n += 1 + digits
	}
	return mon, day, h, m, s, ns, n, true
}

// llamaElapsed reads llama.cpp's --log-timestamps prefix "M.SS.mmm.uuu"
// (minutes, seconds, milliseconds, microseconds since the log started) at
// the start of b.
func llamaElapsed(b []byte) (time.Duration, int, bool) {
	i := 0
	min := 0
	for i < len(b) && isDigit(b[i]) && i < 7 {
		min = min*10 + int(b[i]-'0')
		i++
	}
	if i == 0 || i+11 > len(b) || b[i] != '.' || b[i+3] != '.' || b[i+7] != '.' {
		return 0, 0, false
	}
	sec, ok1 := num2(b, i+1)
	if !ok1 || sec > 59 || !allDigits(b, i+4, 3) || !allDigits(b, i+8, 3) {
		return 0, 0, false
	}
	ms := int(b[i+4]-'0')*100 + int(b[i+5]-'0')*10 + int(b[i+6]-'0')
	us := int(b[i+8]-'0')*100 + int(b[i+9]-'0')*10 + int(b[i+10]-'0')
	d := time.Duration(min)*time.Minute + time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond + time.Duration(us)*time.Microsecond
	return d, i + 11, true
}
