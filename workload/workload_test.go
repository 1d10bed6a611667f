package workload

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// recording is a Recorder into a history file of the test's own.
type recording struct {
	*Recorder
	w    *history.Writer
	path string
}

func newRecording(t *testing.T) *recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	return &recording{NewRecorder(w, time.Now()), w, path}
}

// newRecordingClock is a recording stamped by clock.
func newRecordingClock(t *testing.T, clock func() time.Duration) *recording {
	t.Helper()
	r := newRecording(t)
	r.Recorder = NewRecorderClock(r.w, clock)
	return r
}

// ops closes the history and reads it back, with each operation's pair
// (history.Pairs), failing t if the operations do not pair.
func (r *recording) ops(t *testing.T) ([]history.Op, []int) {
	t.Helper()
	if err := r.w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := history.Pairs(ops)
	if err != nil {
		t.Fatalf("the operations do not pair: %v", err)
	}
	return ops, pairs
}
