package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunLayoutAndLatest(t *testing.T) {
	store := t.TempDir()
	t0 := time.Date(2026, 11, 29, 17, 0, 0, 123e6, time.UTC)
	a, err := NewRun(store, "acks=-1 clean", t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(store, "acks_-1_clean", "20261129T170000.123Z"); a.Dir != want {
		t.Fatalf("dir %s, want %s", a.Dir, want)
	}
	if err := a.WriteJSON("results.json", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkLatest(); err != nil {
		t.Fatal(err)
	}
	b, _ := NewRun(store, "acks=-1 clean", t0.Add(time.Second))
	if err := b.MarkLatest(); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{filepath.Join(store, "latest"), filepath.Join(store, "acks_-1_clean", "latest")} {
		got, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := filepath.EvalSymlinks(b.Dir)
		if got != want {
			t.Fatalf("%s -> %s, want %s", link, got, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(a.Dir, "results.json")); err != nil || len(data) == 0 {
		t.Fatalf("results.json: %v", err)
	}
	if _, err := NewRun(store, "..", t0); err == nil {
		t.Fatal("a test named .. was accepted")
	}
}
