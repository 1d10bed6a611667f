package history

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// recordStream carries the records of a long line from the goroutine
// that decodes it to ScanReads' caller, a chunk at a time, so that
// neither holds them all.
type recordStream struct {
	out  chan []Record // closed once the line is decoded
	free chan []Record // chunks the caller is done with
	quit <-chan struct{}
	// key is the partition the line names ahead of its records, if
	// hinted (peekKey); set before the first chunk is given.
	key    Key
	hinted bool
}

// streamChunk is how many records the caller is given at a time.
const streamChunk = 4096

// errStopped ends a decode whose caller has returned.
var errStopped = errors.New("history: scan stopped")

// parse decodes a long line (its chunks, each dropped once read) as
// parseLong does, giving its value's records to the caller as it goes.
// An array given twice under the value's records (encoding/json keeps the
// last) is given again from the start, after a nil chunk that says so.
func (st *recordStream) parse(segs [][]byte) (*Op, error) {
	defer close(st.out)
	st.key, st.hinted = peekKey(segs)
	for range cap(st.free) {
		st.free <- make([]Record, 0, streamChunk)
	}
	var buf []Record
	given := false
	send := func(rs []Record) error {
		select {
		case st.out <- rs:
			return nil
		case <-st.quit:
			return errStopped
		}
	}
	take := func() error {
		select {
		case buf = <-st.free:
			return nil
		case <-st.quit:
			return errStopped
		}
	}
	records := jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *[]Record) error {
		// Only the operation's value's records (depth 2: the op, its
		// value); a transaction's are read whole, as ever.
		if dec.StackDepth() != 2 || dec.PeekKind() != '[' {
			return jsonv2.SkipFunc
		}
		if given {
			if err := send(nil); err != nil {
				return err
			}
		}
		given = true
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			raw, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if buf == nil {
				if err := take(); err != nil {
					return err
				}
			}
			var rec Record
			if !quickRecord(raw, &rec) {
				if err := jsonv2.Unmarshal(raw, &rec, longOptions); err != nil {
					return err
				}
			}
			if buf = append(buf, rec); len(buf) == cap(buf) {
				if err := send(buf); err != nil {
					return err
				}
				buf = nil
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		if len(buf) > 0 {
			if err := send(buf); err != nil {
				return err
			}
			buf = nil
		}
		*v = nil
		return nil
	})
	var op Op
	return decodeLong(segs, &op, jsonv2.JoinOptions(longOptions, jsonv2.WithUnmarshalers(records)))
}

// quickRecord decodes a record as the writer writes it
// ({"offset":N,"value":"S"}, S without escapes), and says false for any
// other form, which the decoder then reads: a long read's millions of
// records are decoded in a third of the time.
func quickRecord(raw []byte, rec *Record) bool {
	const head, mid = `{"offset":`, `,"value":"`
	rest, ok := bytes.CutPrefix(raw, []byte(head))
	if !ok {
		return false
	}
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return false
	}
	off, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(mid))
	if !ok {
		return false
	}
	v, ok := bytes.CutSuffix(rest, []byte(`"}`))
	if !ok || bytes.IndexByte(v, '\\') >= 0 || bytes.IndexByte(v, '"') >= 0 || !utf8.Valid(v) {
		return false
	}
	rec.Offset, rec.Value = off, string(v)
	return true
}

// peekKey is the topic and partition a long line's value names ahead of
// its records, read without dropping its chunks; false if it names
// neither, or not first.
func peekKey(segs [][]byte) (Key, bool) {
	dec := jsontext.NewDecoder(&segReader{segs: slices.Clone(segs)}, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return Key{}, false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return Key{}, false
		}
		if name.String() != "value" {
			if dec.SkipValue() != nil {
				return Key{}, false
			}
			continue
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return Key{}, false
		}
		var k Key
		topic, part := false, false
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return Key{}, false
			}
			switch name.String() {
			case "topic":
				tok, err := dec.ReadToken()
				if err != nil || tok.Kind() != '"' {
					return Key{}, false
				}
				k.Topic, topic = tok.String(), true
			case "partition":
				tok, err := dec.ReadToken()
				if err != nil || tok.Kind() != '0' {
					return Key{}, false
				}
				n, err := strconv.ParseInt(tok.String(), 10, 32)
				if err != nil {
					return Key{}, false
				}
				k.Partition, part = int32(n), true
			case "records":
				return k, topic && part
			default:
				if dec.SkipValue() != nil {
					return Key{}, false
				}
			}
		}
		return Key{}, false
	}
	return Key{}, false
}
