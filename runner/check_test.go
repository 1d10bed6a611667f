package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// TestCheckStreamsLongReads: chaos check of a history whose final reads
// are lines longer than the reader's chunk (their records streamed into
// the index as they are decoded: history.ScanReads) gives the results of
// judging its operations held whole, the value lost from one final read
// found in both.
func TestCheckStreamsLongReads(t *testing.T) {
	var ops []history.Op
	add := func(op history.Op) {
		op.Index, op.Time = int64(len(ops)), int64(len(ops)+1)*1000
		ops = append(ops, op)
	}
	const n = 40_000 // about 1.4 MB of records a final read
	for p := range int32(2) {
		for i := range n {
			v := history.Value{Topic: "t", Partition: p, Value: fmt.Sprintf("%d-%d", p, i)}
			add(history.Op{Process: int(p), Type: history.Invoke, F: history.Send, Value: &v})
			ok := v
			ok.Offset = history.Int64(int64(i))
			add(history.Op{Process: int(p), Type: history.OK, F: history.Send, Value: &ok})
		}
	}
	for p := range int32(2) {
		add(history.Op{Process: 9, Type: history.Invoke, F: history.FinalRead, Value: &history.Value{Topic: "t", Partition: p}})
		v := &history.Value{Topic: "t", Partition: p, HW: history.Int64(n)}
		for i := range n {
			if p == 1 && i == 777 {
				continue
			}
			v.Records = append(v.Records, history.Record{Offset: int64(i), Value: fmt.Sprintf("%d-%d", p, i)})
		}
		add(history.Op{Process: 9, Type: history.OK, F: history.FinalRead, Value: v})
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if _, err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Check{Path: path, Given: func(string) bool { return false }, SkipLinearizability: true}.Run(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := checker.NewHistory(ops, checker.Strictest())
	h.NotSupported(checker.CrashName, "the history comes without its run's test.json: nothing says the tool that recorded it watched the nodes for crashes")
	want := checker.CheckHistory(h, checker.Options{SkipLinearizability: true})
	g, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(g, wj) {
		t.Fatalf("chaos check:\n%s\nwhole:\n%s", g, wj)
	}
	if want.Valid != checker.Invalid || !bytes.Contains(wj, []byte(`"1-777"`)) {
		t.Fatalf("the lost value is not found: %s", wj)
	}
}
