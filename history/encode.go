package history

import (
	"bytes"
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
	v := *op.Value
	recs := v.Records
	v.Records = []Record{{Offset: math.MinInt64, Value: recordsMark}}
	op.Value = &v
	var head bytes.Buffer
	if err := encodeLine(&head, op); err != nil {
		return err
	}
	line := head.Bytes()
	at := bytes.Index(line, markArray)
	if at < 0 || bytes.Count(line, markArray) != 1 {
		// The mark elsewhere too (a value that holds it): whole.
		op.Value.Records = recs
		return w.writeLine(op)
	}
	var dst io.Writer = w.f
	if w.bw != nil {
		dst = w.bw
	}
	buf := append(make([]byte, 0, 64<<10), line[:at]...)
	buf = append(buf, '[')
	for i, r := range recs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"offset":`...)
		buf = strconv.AppendInt(buf, r.Offset, 10)
		buf = append(buf, `,"value":`...)
		var err error
		if buf, err = appendString(buf, r.Value); err != nil {
			return err
		}
		buf = append(buf, '}')
		if len(buf) >= 60<<10 {
			if _, err := dst.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, ']')
	buf = append(buf, line[at+len(markArray):]...)
	_, err := dst.Write(buf)
	return err
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
