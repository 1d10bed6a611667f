package checker

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

var update = flag.Bool("update", false, "rewrite the verdicts of testdata/corpus/*.want from what the checkers say now")

// TestCorpus judges every history of testdata/corpus (recorded runs cut
// down, and histories written by hand for a finding) under the
// configuration its .want file names, and compares the verdict and every
// result that is not "none" with what the file expects. The files are
// data a reader can follow, in the manner of porcupine's test_data and etcd
// raft's testdata: NAME.jsonl is a history chaos check reads as it is, and
// NAME.want starts with comment lines saying what the case shows and a
// config line (the checker.Config as JSON), followed by the expected
// results. go test ./checker -run TestCorpus -update rewrites the expected
// results, keeping the comments and the config.
func TestCorpus(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			wantPath := strings.TrimSuffix(path, ".jsonl") + ".want"
			head, want, cfg := readWant(t, wantPath)
			ops, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := Check(ops, cfg, Options{})
			got := renderVerdict(res)
			sameAsStreamed(t, ops, cfg, Options{}, res)
			if *update {
				if err := os.WriteFile(wantPath, []byte(head+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s:\ngot:\n%swant:\n%s", name, got, want)
			}
		})
	}
}

// readWant splits a .want file into its head (comments and config) and
// its expected results, and decodes the config.
func readWant(t *testing.T, path string) (head, want string, cfg Config) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h, w strings.Builder
	sawConfig := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !sawConfig && strings.HasPrefix(line, "config "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "config ")), &cfg); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			sawConfig = true
			h.WriteString(line + "\n")
		case !sawConfig:
			h.WriteString(line + "\n")
		default:
			w.WriteString(line + "\n")
		}
	}
	if !sawConfig {
		t.Fatalf("%s has no config line", path)
	}
	return h.String(), w.String(), cfg
}

// renderVerdict is the part of the results a corpus case pins: the verdict
// and each result that found something, could not judge, or does not
// apply.
func renderVerdict(res *Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s\n", res.Valid)
	fmt.Fprintf(&b, "faults %s %v\n", res.FaultClass, res.Faults)
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note %s\n", n)
	}
	for _, r := range res.Results {
		if r.Valid == Valid {
			continue
		}
		if r.NotApplicable {
			fmt.Fprintf(&b, "%s n/a: %s\n", r.Name, r.NotChecked)
			continue
		}
		fmt.Fprintf(&b, "%s %s count=%d forbidden=%d expected=%v", r.Name, r.Valid, r.Count, r.Forbidden, r.Expected)
		for _, c := range Causes() {
			if n := r.Causes[c]; n > 0 {
				fmt.Fprintf(&b, " %s=%d", c, n)
			}
		}
		if r.Undecided > 0 {
			fmt.Fprintf(&b, " undecided=%d", r.Undecided)
		}
		if r.NotChecked != "" {
			fmt.Fprintf(&b, " (not checked: %s)", r.NotChecked)
		}
		b.WriteString("\n")
	}
	return b.String()
}
