package checker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestCheckProgress: Options.Progress is told of every check's end, the
// count rising to the whole, and of each partition linearizability begins,
// in order, whether the checks take turns (the index in a file) or run
// side by side (in the heap); without linearizability, of the others.
func TestCheckProgress(t *testing.T) {
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	var buf bytes.Buffer
	for _, op := range synth(synthConfig{ops: 3_000, producers: 4, consumers: 3, partitions: 3, endEvery: 5, seed: 9}) {
		if err := encodeOp(&buf, op); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	step := regexp.MustCompile(`^(\d+) of (\d+) checks done(?:; linearizability: partition (\d+) of (\d+))?$`)
	for _, inFile := range []bool{false, true} {
		for _, skipLin := range []bool{false, true} {
			name := fmt.Sprintf("inFile=%v skipLin=%v", inFile, skipLin)
			h := buildFromFile(t, cfg, path, inFile)
			var steps []string
			res := CheckHistory(h, Options{SkipLinearizability: skipLin, Progress: func(s string) { steps = append(steps, s) }})
			h.Close()
			if res.Valid == Invalid || !skipLin && res.Valid != Valid {
				t.Fatalf("%s: %s %v", name, res.Valid, res.Unexpected)
			}
			want := len(checkers()) + 1
			if skipLin {
				want--
			}
			ended, parts := 0, 0
			for _, s := range steps {
				m := step.FindStringSubmatch(s)
				if m == nil {
					t.Fatalf("%s: step %q", name, s)
				}
				n, _ := strconv.Atoi(m[1])
				if of, _ := strconv.Atoi(m[2]); of != want {
					t.Errorf("%s: %q: %d checks in all, want %d", name, s, of, want)
				}
				switch {
				case n == ended+1:
					ended = n
				case n != ended:
					t.Errorf("%s: %q after %d checks done", name, s, ended)
				}
				if m[3] == "" {
					continue
				}
				p, _ := strconv.Atoi(m[3])
				if m[4] != "3" || (p != parts && p != parts+1) {
					t.Errorf("%s: %q after partition %d", name, s, parts)
				}
				parts = p
			}
			if ended != want {
				t.Errorf("%s: %d checks said done, want %d: %q", name, ended, want, steps)
			}
			if wantParts := map[bool]int{false: 3, true: 0}[skipLin]; parts != wantParts {
				t.Errorf("%s: linearizability's last partition told %d, want %d: %q", name, parts, wantParts, steps)
			}
			if len(steps) == 0 || steps[len(steps)-1] != fmt.Sprintf("%d of %d checks done", want, want) {
				t.Errorf("%s: steps %q: the last is not every check done", name, steps)
			}
		}
	}
}
