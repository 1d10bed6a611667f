package history

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestWriteLongIsTheEncoders: an op with many records, written a piece at
// a time, is the line the encoder writes whole, whatever its values hold
// (quotes, escapes, control characters, HTML, non-ASCII, invalid UTF-8,
// the writer's own mark), and reads back as written, with a buffered
// writer too.
func TestWriteLongIsTheEncoders(t *testing.T) {
	defer func(n int) { longRecords = n }(longRecords)
	longRecords = 2
	values := []string{"0-1", "", `q"uote`, `back\slash`, "tab\tnl\n", "<a&b>", "é ü", "\u2028\u2029", "bad\xffutf8", "nul\x00", "x" + recordsMark}
	var ops []Op
	for i := range 3 {
		v := &Value{Topic: "t", Partition: int32(i), From: Int64(-5), HW: Int64(math.MaxInt64)}
		for j, s := range values {
			v.Records = append(v.Records, Record{Offset: int64(j*1000 - 7), Value: s})
		}
		for j := range 20_000 {
			v.Records = append(v.Records, Record{Offset: int64(j), Value: "1-2"})
		}
		ops = append(ops, Op{Process: 3, Type: OK, F: FinalRead, Value: v})
	}
	ops[1].Error = "err <&>"
	ops[2].Error = recordsMark // the mark elsewhere: written whole
	for _, buffered := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "h.jsonl")
		create := Create
		if buffered {
			create = CreateBuffered
		}
		w, err := create(path)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		encodeLine(&want, Header{History: "chaos", Version: SchemaVersion})
		for i, op := range ops {
			op.Index = int64(i)
			encodeLine(&want, op)
			if _, err := w.Append(op); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		if !bytes.Equal(raw, want.Bytes()) {
			t.Fatalf("buffered %v: the file is not the encoder's lines (%d bytes, want %d)", buffered, len(raw), want.Len())
		}
		back, err := Read(&want)
		if err != nil || !reflect.DeepEqual(got, back) {
			t.Fatalf("buffered %v: read back differently: %v", buffered, err)
		}
	}
}
