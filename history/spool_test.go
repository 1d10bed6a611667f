package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpooledIsTheEncoders: a read whose records went to a spool is
// written as the line the encoder writes of the read with its records,
// with a buffered writer too; the spool's file is never in the history's
// directory; a writer that wrote a spooled read keeps no ops (the records
// are only in the file); and a spool is used once.
func TestSpooledIsTheEncoders(t *testing.T) {
	values := []string{"0-1", "", `q"uote`, `back\slash`, "tab\tnl\n", "<a&b>", "é ü", "\u2028\u2029", "bad\xffutf8", "nul\x00"}
	var ops []Op
	for i := range 3 {
		v := &Value{Topic: "t", Partition: int32(i), HW: Int64(int64(i))}
		for j := range 30_000 {
			v.Records = append(v.Records, Record{Offset: int64(j), Value: values[j%len(values)]})
		}
		ops = append(ops, Op{Process: 3, Type: OK, F: FinalRead, Value: v})
	}
	ops[1].Error = "err <&>"
	ops[2].Value.Records = ops[2].Value.Records[:1] // one record, spooled
	for _, buffered := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "h.jsonl")
		create := Create
		if buffered {
			create = CreateBuffered
		}
		w, err := create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Keep(100)
		var want bytes.Buffer
		encodeLine(&want, Header{History: "chaos", Version: SchemaVersion})
		small := Op{Process: 1, Type: Invoke, F: FinalRead, Value: &Value{Topic: "t"}}
		if _, err := w.Append(small); err != nil {
			t.Fatal(err)
		}
		small.Index = 0
		encodeLine(&want, small)
		for i, op := range ops {
			op.Index = int64(i + 1)
			encodeLine(&want, op)
			sp, err := w.NewSpool()
			if err != nil {
				t.Fatal(err)
			}
			for rs := op.Value.Records; len(rs) > 0; {
				n := min(len(rs), 7_000)
				if err := sp.Add(rs[:n]...); err != nil {
					t.Fatal(err)
				}
				rs = rs[n:]
			}
			if sp.Len() != len(op.Value.Records) {
				t.Fatalf("the spool holds %d records, want %d", sp.Len(), len(op.Value.Records))
			}
			if names, _ := os.ReadDir(dir); len(names) != 1 {
				t.Fatalf("the history's directory holds %d files, want the history alone", len(names))
			}
			v := *op.Value
			v.Records, v.Spool = nil, sp
			op.Value = &v
			got, err := w.Append(op)
			if err != nil {
				t.Fatal(err)
			}
			if got.Value.Spool != nil || got.Value.Records != nil {
				t.Fatal("the op as written holds the spool or records")
			}
			if w.Kept() != nil {
				t.Fatal("the writer keeps ops whose records it no longer holds")
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		if !bytes.Equal(raw, want.Bytes()) {
			t.Fatalf("buffered %v: the file is not the encoder's lines (%d bytes, want %d)", buffered, len(raw), want.Len())
		}
		if _, err := ReadFile(path); err != nil {
			t.Fatalf("buffered %v: %v", buffered, err)
		}
	}

	// A spool already written (so closed) is refused.
	w, err := Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sp, err := w.NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	sp.Add(Record{Offset: 1, Value: "x"})
	if _, err := w.Append(Op{F: FinalRead, Value: &Value{Spool: sp}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(Op{F: FinalRead, Value: &Value{Spool: sp}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a spool written twice: Append gave %v, want an error", err)
	}
}
