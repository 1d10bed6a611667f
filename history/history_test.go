package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReadAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ops := []Op{
		{Time: 1, Process: 0, Type: Invoke, F: Send, Value: &Value{Topic: "t", Partition: 1, Value: "0-1"}},
		{Time: 2, Process: 0, Type: OK, F: Send, Value: &Value{Topic: "t", Partition: 1, Value: "0-1", Offset: Int64(7)}},
		{Time: 3, Process: NemesisProcess, Type: Info, F: "start-kill", Value: &Value{Fault: "kill", Targets: []string{"broker-2"}}},
	}
	for _, op := range ops {
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
	if len(got) != 3 || got[1].Index != 1 || *got[1].Value.Offset != 7 || got[2].Value.Targets[0] != "broker-2" {
		t.Fatalf("read back %+v", got)
	}
	// A writer killed mid-line leaves a torn tail: the prefix still reads.
	data, _ := os.ReadFile(path)
	torn := string(data) + `{"index":3,"time":4,"proc`
	got, err = Read(strings.NewReader(torn))
	if !errors.Is(err, ErrTornTail) || len(got) != 3 {
		t.Fatalf("torn tail: %d ops, err %v", len(got), err)
	}
	// A bad line in the middle is an error with its line number.
	bad := strings.Replace(string(data), `"type":"ok"`, `"type":"maybe"`, 1)
	if _, err := Read(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad type: %v", err)
	}
	// Bare ops without a header are accepted (another tool's history).
	lines := strings.SplitN(string(data), "\n", 2)
	if got, err := Read(strings.NewReader(lines[1])); err != nil || len(got) != 3 {
		t.Fatalf("headerless: %d ops, %v", len(got), err)
	}
}

func TestPairs(t *testing.T) {
	ops := []Op{
		{Process: 0, Type: Invoke, F: Send},
		{Process: 1, Type: Invoke, F: Poll},
		{Process: 0, Type: Info, F: Send},
		{Process: 0, Type: Invoke, F: Send},
	}
	p, err := Pairs(ops)
	if err != nil {
		t.Fatal(err)
	}
	if p[0] != 2 || p[2] != 0 || p[1] != -1 || p[3] != -1 {
		t.Fatalf("pairs %v", p)
	}
	if _, err := Pairs(append(ops, Op{Process: 0, Type: Invoke, F: Send})); err == nil {
		t.Fatal("two open ops on one process accepted")
	}
	if _, err := Pairs([]Op{{Process: 3, Type: OK, F: Send}}); err == nil {
		t.Fatal("completion without invoke accepted")
	}
}
