package sim

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden.txt from what the simulation gives now")

// goldenShapes are the runs whose histories and results a refactoring
// must leave byte for byte as they were: the workload's options (acks,
// retries, idempotent sessions in flight), the fault kinds, composites
// and a planted bug, each for two seeds.
var goldenShapes = []struct {
	name string
	edit func(*runner.Spec)
}{
	{"default", func(s *runner.Spec) {}},
	{"idempotent-kill-partition", func(s *runner.Spec) {
		s.Idempotent, s.Retries, s.MaxInFlight, s.Faults = true, 3, 3, []string{"kill", "partition"}
	}},
	{"acks1-partition-leader", func(s *runner.Spec) {
		s.Acks, s.Settings.MinInsyncReplicas, s.Faults = 1, 1, []string{"partition-leader"}
	}},
	{"acks0-pause", func(s *runner.Spec) { s.Acks, s.Faults = 0, []string{"pause"} }},
	{"overlap-network", func(s *runner.Spec) {
		s.Faults, s.NemesisOverlap = []string{"slow-follower", "latency", "majority-ring", "zombie-follower"}, 2
	}},
	{"lose-unsynced", func(s *runner.Spec) { s.Faults = []string{"lose-unsynced"} }},
	{"bug-hw-ignores-isr", func(s *runner.Spec) {
		s.Settings.Bugs, s.Faults = []string{"hw-ignores-isr"}, []string{"kill-leader"}
	}},
	{"subscribe-kill-partition", func(s *runner.Spec) { s.SubVia, s.Faults = "subscribe", []string{"kill", "partition"} }},
}

// TestGolden: the simulation's histories and results for goldenShapes are
// the ones testdata/golden.txt holds (sha256 of history.jsonl and
// results.json). It is the guard of a change that must not change what a
// seed does (a refactoring: the client's seam, the workload's loops);
// a change that means to, rewrites the file with -update and says why.
func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 14 simulations")
	}
	path := filepath.Join("testdata", "golden.txt")
	var got []string
	for _, g := range goldenShapes {
		for _, seed := range []uint64{1, 2} {
			s := spec(t, seed)
			g.edit(&s)
			o := run(t, s)
			got = append(got, fmt.Sprintf("%s seed %d history %x results %x", g.name, seed,
				sha256.Sum256(file(t, o, results.HistoryFile)), sha256.Sum256(file(t, o, results.ResultsFile))))
		}
	}
	if *updateGolden {
		text := "# sha256 of history.jsonl and results.json per shape and seed (sim/golden_test.go; go test ./sim -run TestGolden -update)\n" + strings.Join(got, "\n") + "\n"
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (go test ./sim -run TestGolden -update writes it)", err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	if len(want) != len(got) {
		t.Fatalf("testdata/golden.txt holds %d runs, the shapes give %d (rewrite it with -update)", len(want), len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("a seed changed what it does:\n got %s\nwant %s\n(if the change means to, rewrite testdata/golden.txt with go test ./sim -run TestGolden -update and say why)", got[i], want[i])
		}
	}
}
