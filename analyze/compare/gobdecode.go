package compare

import (
	"bytes"
	"encoding/gob"
	"errors"
	"reflect"
	"sync"
)

// Decoding gob files of one type (a run's own summary, a cache entry)
// fast: a gob.Decoder compiles its decoding of every type the first time
// it sees it, and a file is a stream of its own, so a fresh decoder per
// file paid that compilation for every run (~0.15 ms of the ~1 ms a
// compare from the summaries spent per run, docs/performance.md). Every
// file of a type that a fresh gob.Encoder wrote starts with the same type
// definitions; decodeGob checks that a file does, then hands the one value
// message after them to a decoder that has already read those definitions
// and decoded a value of the type. Any other file (another type's, an
// older format, a damaged one) is decoded by a fresh decoder as before,
// so what decodeGob returns is always what gob.NewDecoder(...).Decode
// would.

// primed is the type definitions a fresh encoder writes for one type and
// the decoders that have read them.
type primed struct {
	types []byte // the type-definition messages that start every file
	value []byte // the value message of the zero value, to prime with
	pool  sync.Pool
}

var primedTypes sync.Map // [2]reflect.Type{F, T} -> *primed

// primedFor is the primed set for files of F decoded into T, nil when F's
// files do not split into type definitions and one value message.
func primedFor[F, T any]() *primed {
	t := [2]reflect.Type{reflect.TypeFor[F](), reflect.TypeFor[T]()}
	if p, ok := primedTypes.Load(t); ok {
		return p.(*primed)
	}
	var buf bytes.Buffer
	var zero F
	var p *primed
	if err := gob.NewEncoder(&buf).Encode(zero); err == nil {
		if types, value, ok := splitGob(buf.Bytes()); ok {
			p = &primed{types: types, value: value}
		}
	}
	v, _ := primedTypes.LoadOrStore(t, p)
	return v.(*primed)
}

// decodeGob decodes data, one gob stream holding one T, into dst.
func decodeGob[T any](data []byte, dst *T) error {
	return decodeGobAs[T](data, dst)
}

// decodeGobAs decodes data, one gob stream holding one F, into dst, a T
// with some of F's fields: gob matches fields by name and skips the
// others' bytes without making their values (the index, which needs no
// request samples, reads a summary without them).
func decodeGobAs[F, T any](data []byte, dst *T) error {
	p := primedFor[F, T]()
	types, value, ok := splitGob(data)
	if p == nil || !ok || !bytes.Equal(types, p.types) {
		return gob.NewDecoder(bytes.NewReader(data)).Decode(dst)
	}
	d, _ := p.pool.Get().(*primedDecoder)
	if d == nil {
		var err error
		if d, err = newPrimedDecoder[T](p); err != nil {
			return gob.NewDecoder(bytes.NewReader(data)).Decode(dst)
		}
	}
	d.r.Reset(value)
	if err := d.dec.Decode(dst); err != nil {
		// The decoder may be left mid-message: not reused.
		return err
	}
	if d.r.Len() != 0 {
		return errors.New("gob: data after the value")
	}
	p.pool.Put(d)
	return nil
}

// primedDecoder is a gob.Decoder that has read a type's definitions, over
// a reader that decodeGob points at each file's value message in turn (a
// bytes.Reader is an io.ByteReader, so the decoder reads no further ahead
// than the message it decodes).
type primedDecoder struct {
	r   bytes.Reader
	dec *gob.Decoder
}

func newPrimedDecoder[T any](p *primed) (*primedDecoder, error) {
	d := &primedDecoder{}
	d.r.Reset(append(append([]byte(nil), p.types...), p.value...))
	d.dec = gob.NewDecoder(&d.r)
	var zero T
	if err := d.dec.Decode(&zero); err != nil {
		return nil, err
	}
	return d, nil
}

// splitGob splits a gob stream into its leading type-definition messages
// and the one value message after them; ok is false for a stream of any
// other shape (a value that sends definitions of its own, two values, a
// damaged stream).
func splitGob(data []byte) (types, value []byte, ok bool) {
	rest := data
	for len(rest) > 0 {
		n, w := gobUint(rest)
		if w == 0 || n == 0 || n > uint64(len(rest)-w) {
			return nil, nil, false
		}
		msg := rest[w : w+int(n)]
		id, iw := gobUint(msg)
		if iw == 0 {
			return nil, nil, false
		}
		if id&1 == 0 { // a non-negative type id: a value
			if w+int(n) != len(rest) {
				return nil, nil, false
			}
			return data[:len(data)-len(rest)], rest, true
		}
		rest = rest[w+int(n):]
	}
	return nil, nil, false
}

// gobUint reads one of gob's unsigned integers: a byte below 128 is the
// value; else the byte is minus the count of big-endian bytes that
// follow. w is the bytes read, 0 when b does not start with one.
func gobUint(b []byte) (v uint64, w int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	n := -int(int8(b[0]))
	if n < 1 || n > 8 || len(b) < 1+n {
		return 0, 0
	}
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	return v, 1 + n
}
