package history

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
)

// longRecords: an op with at least this many records is written as a
// stream (writeLong). A variable, so that a test can make it small.
var longRecords = 4096

// recordsMark stands for a long op's records while the rest of it is
// encoded: a value no workload writes.
const recordsMark = "\x00chaos: the records go here\x00"

// markArray is how the encoder writes a records array holding only the
// mark.
var markArray = func() []byte {
	var b bytes.Buffer
	if err := encodeLine(&b, []Record{{Offset: math.MinInt64, Value: recordsMark}}); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}()

// writeLong writes op, whose records are many (a long run's final read:
// a million records, a line of 42 MB), as the encoder would, but its
// records a piece at a time: encoded whole, the line was built in a
// buffer that doubled as it grew (128 MB allocated for 42), beside the
// records, at the end of a run, when the final phase reads every
// partition and replica. The line takes several writes, under the
// writer's lock: a writer killed during it leaves it as its torn last
// line, as ever.
func (w *Writer) writeLong(op Op) error {
	recs := op.Value.Records
	head, tail, err := aroundRecords(op)
	switch {
	case err != nil:
		return err
	case head == nil:
		// The mark elsewhere too (a value that holds it): whole.
		return w.writeLine(op)
	}
	dst := w.dst()
	buf := append(make([]byte, 0, 64<<10), head...)
	for i, r := range recs {
		if buf, err = appendRecord(buf, r, i == 0); err != nil {
			return err
		}
		if len(buf) >= 60<<10 {
			if _, err := dst.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err = dst.Write(append(buf, tail...))
	return err
}

// writeSpooled writes op with the records in spool, as writeLong would
// have written them.
func (w *Writer) writeSpooled(op Op, spool *Spool) error {
	head, tail, err := aroundRecords(op)
	switch {
	case err != nil:
		return err
	case head == nil:
		return errors.New("history: a long read's op holds the records' mark")
	}
	dst := w.dst()
	if _, err := dst.Write(head); err != nil {
		return err
	}
	if err := spool.copyTo(dst); err != nil {
		return err
	}
	_, err = dst.Write(tail)
	return err
}

// aroundRecords is op's line as the encoder writes it, up to its records
// (with the array's '[') and after them (from its ']'); nil if a value
// other than the records holds the mark that stands for them.
func aroundRecords(op Op) (head, tail []byte, err error) {
	v := *op.Value
	v.Records, v.Spool = []Record{{Offset: math.MinInt64, Value: recordsMark}}, nil
	op.Value = &v
	var b bytes.Buffer
	if err := encodeLine(&b, op); err != nil {
		return nil, nil, err
	}
	line := b.Bytes()
	at := bytes.Index(line, markArray)
	if at < 0 || bytes.Count(line, markArray) != 1 {
		return nil, nil, nil
	}
	head = append(line[:at:at], '[')
	tail = append([]byte{']'}, line[at+len(markArray):]...)
	return head, tail, nil
}

// appendRecord appends r as a records array holds it, after a comma
// unless it is the first.
func appendRecord(buf []byte, r Record, first bool) ([]byte, error) {
	if !first {
		buf = append(buf, ',')
	}
	buf = append(buf, `{"offset":`...)
	buf = strconv.AppendInt(buf, r.Offset, 10)
	buf = append(buf, `,"value":`...)
	buf, err := appendString(buf, r.Value)
	if err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

// dst is where lines go: the buffer, or the file.
func (w *Writer) dst() io.Writer {
	if w.bw != nil {
		return w.bw
	}
	return w.f
}

// appendString appends s as the encoder writes a string (without HTML
// escapes): as it is, quoted, when it holds nothing the encoder would
// escape; else in the encoder's own words.
func appendString(buf []byte, s string) ([]byte, error) {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"'), nil
	}
	var b bytes.Buffer
	if err := encodeLine(&b, s); err != nil {
		return buf, err
	}
	return append(buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}
