package results

import (
	"os"
	"path/filepath"
	"strings"
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

func TestListStore(t *testing.T) {
	store := t.TempDir()
	mk := func(rel string, files ...string) {
		dir := filepath.Join(store, filepath.FromSlash(rel))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644)
		}
	}
	mk("a/20261129T170000.000Z", TestFile)
	mk("b/20261129T180000.000Z")
	mk("a/20261129T190000.000Z", TestFile)
	mk("a/x.tmp")
	mk(".hidden/20261129T170000.000Z")
	mk("campaigns/20261129T175000.000Z", CampaignFile)
	mk("hunts/20261129T160000.000Z", HuntFile)
	os.WriteFile(filepath.Join(store, "a", "notes"), nil, 0o644)
	os.Symlink("a/20261129T190000.000Z", filepath.Join(store, "latest"))
	os.Symlink("20261129T190000.000Z", filepath.Join(store, "a", "latest"))

	l, err := ListStore(store)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, r := range l.Runs {
		runs = append(runs, r.Dir)
	}
	if want := "a/20261129T190000.000Z b/20261129T180000.000Z a/20261129T170000.000Z"; strings.Join(runs, " ") != want {
		t.Fatalf("runs %v, want %s", runs, want)
	}
	if r := l.Runs[0]; r.Test != "a" || r.Path != filepath.Join(store, "a", "20261129T190000.000Z") || !r.Start.Equal(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)) {
		t.Fatalf("run %+v", r)
	}
	if len(l.Campaigns) != 1 || l.Campaigns[0].Dir != "campaigns/20261129T175000.000Z" || len(l.Problems) != 0 {
		t.Fatalf("campaigns %+v, problems %v", l.Campaigns, l.Problems)
	}
	if len(l.Hunts) != 1 || l.Hunts[0].Dir != "hunts/20261129T160000.000Z" || l.Hunts[0].Test != HuntsDir {
		t.Fatalf("hunts %+v: want the one with hunt.json, not among the runs", l.Hunts)
	}
	if _, err := ListStore(filepath.Join(store, "missing")); err == nil {
		t.Fatal("a missing store is no error")
	}
}
