package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
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

// parse decodes a long line read from r (its chunks, each dropped once
// read) as parseLong does, giving its value's records to the caller as it
// goes; blank if the line holds nothing but space. An array given twice
// under the value's records (encoding/json keeps the last) is given again
// from the start, after a nil chunk that says so.
func (st *recordStream) parse(r io.Reader) (op *Op, err error, blank bool) {
	defer close(st.out)
	br := bufio.NewReaderSize(r, peekBytes)
	// The first value, as encoding/json's decoder reads it, after the
	// space split trims a line of (parseLong).
	for {
		c, _, err := br.ReadRune()
		if err == io.EOF {
			return nil, nil, true
		}
		if err != nil {
			return nil, err, false
		}
		if !unicode.IsSpace(c) {
			br.UnreadRune()
			break
		}
	}
	head, _ := br.Peek(peekBytes)
	st.key, st.hinted = peekKey(head)
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
		if dec.StackDepth() != 2 {
			return jsonv2.SkipFunc
		}
		if dec.PeekKind() != '[' {
			// null (or what the decoder refuses) after an array: it
			// holds none of them.
			if given && dec.PeekKind() == 'n' {
				if err := send(nil); err != nil {
					return err
				}
				given = false
			}
			return jsonv2.SkipFunc
		}
		again := given
		if again {
			if err := send(nil); err != nil {
				return err
			}
		}
		given = true
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for i := 0; dec.PeekKind() != ']'; i++ {
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
				if err := decodeRecord(raw, &rec, again); err != nil {
					// Decoded apart, it would be named by its own
					// fields only.
					return fmt.Errorf("record %d: %w", i, err)
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
	op = &Op{}
	opts := jsonv2.JoinOptions(longOptions, jsonv2.WithUnmarshalers(records))
	if err := jsonv2.UnmarshalDecode(jsontext.NewDecoder(br, opts), op, opts); err != nil {
		return nil, err, false
	}
	op, err = known(op)
	return op, err, false
}

// peekBytes is how much of a long line is looked at for the partition it
// names ahead of its records (peekKey): an operation's fields before its
// records take a few hundred bytes.
const peekBytes = 64 << 10

// lineFeed gives a long line's chunks to its decoder as they are read
// (splitLines with feeds), and their budget back as they are decoded.
type lineFeed struct {
	pieces chan feedPiece // closed at the line's end
	quit   <-chan struct{}
	ahead  *byteBudget
	// Whether the line is all space (unicode.IsSpace, as split trims a
	// line), as the reader has seen it: seenText once it is not; rune,
	// the start of a rune the last piece cut.
	seenText bool
	rune     []byte
	// complete: the line ended in its newline; err: a read error cut
	// it. Set before pieces is closed.
	complete bool
	err      error
	cur      feedPiece // being read
}

type feedPiece struct {
	b    []byte
	size int // of the budget
}

// give feeds the line's next piece, which holds size of the budget:
// false if the caller has returned.
func (f *lineFeed) give(b []byte, size int) bool {
	select {
	case f.pieces <- feedPiece{b, size}:
		return true
	case <-f.quit:
		return false
	}
}

// text looks at the line's next piece for what is not space, unless it
// has been seen.
func (f *lineFeed) text(b []byte) {
	if f.seenText {
		return
	}
	if len(f.rune) > 0 {
		b = append(f.rune, b...)
		f.rune = nil
	}
	for len(b) > 0 {
		if !utf8.FullRune(b) {
			f.rune = bytes.Clone(b)
			return
		}
		c, n := utf8.DecodeRune(b)
		if !unicode.IsSpace(c) {
			f.seenText = true
			return
		}
		b = b[n:]
	}
}

// blank says whether the whole line was space: a rune the line's end
// cut is not (it reads as U+FFFD).
func (f *lineFeed) blank() bool { return !f.seenText && len(f.rune) == 0 }

// end ends the line: complete if it ended in its newline, err if a read
// error cut it.
func (f *lineFeed) end(complete bool, err error) {
	f.complete, f.err = complete, err
	close(f.pieces)
}

func (f *lineFeed) Read(p []byte) (int, error) {
	for len(f.cur.b) == 0 {
		f.ahead.give(f.cur.size)
		f.cur = feedPiece{}
		select {
		case pc, ok := <-f.pieces:
			if !ok {
				if f.err != nil {
					return 0, f.err
				}
				return 0, io.EOF
			}
			f.cur = pc
		case <-f.quit:
			return 0, errStopped
		}
	}
	n := copy(p, f.cur.b)
	f.cur.b = f.cur.b[n:]
	return n, nil
}

// drain reads what is left of the line, to its end, and says true; false
// at the caller's return, after which the reader may still be ending the
// line (complete, err).
func (f *lineFeed) drain() bool {
	for {
		f.cur.b = nil
		if _, err := f.Read(nil); err != nil {
			return err != errStopped
		}
	}
}

// ErrMergedRecords refuses a long line that gives a read's records twice,
// the second time with a record that lacks its offset or its value:
// encoding/json would fill it in from the first records, which a line
// streamed (ScanReads) no longer holds.
var ErrMergedRecords = errors.New("a read's records given twice, the second time with a record missing its offset or value")

// decodeRecord decodes a record the writer did not write (quickRecord),
// as the decoder would; again: in a records array given a second time
// (see ErrMergedRecords).
func decodeRecord(raw []byte, rec *Record, again bool) error {
	if !again {
		return jsonv2.Unmarshal(raw, rec, longOptions)
	}
	var full struct {
		Offset *int64  `json:"offset"`
		Value  *string `json:"value"`
	}
	if err := jsonv2.Unmarshal(raw, &full, longOptions); err != nil {
		return err
	}
	if full.Offset == nil || full.Value == nil {
		return ErrMergedRecords
	}
	rec.Offset, rec.Value = *full.Offset, *full.Value
	return nil
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

// peekKey is the topic and partition the beginning of a long line (head)
// has its value name ahead of its records; false if it does not.
func peekKey(head []byte) (Key, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(head), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
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
