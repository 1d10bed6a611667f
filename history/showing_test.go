package history

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestScanReadsFileShowing: the line shown says how many operations have
// been read, every 4,096 (as often as that, with showEvery 0), and how
// many MB of the file, rising to at most its size; every operation still
// reaches fn.
func TestScanReadsFileShowing(t *testing.T) {
	defer func(d time.Duration) { showEvery = d }(showEvery)
	showEvery = 0
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	pad := strings.Repeat("x", 200) // a few MB in all
	for i := range n / 2 {
		v := fmt.Sprintf("0-%d-%s", i, pad)
		for _, op := range []Op{
			{Time: int64(2 * i), Process: 0, Type: Invoke, F: Send, Value: &Value{Topic: "t", Partition: 0, Value: v}},
			{Time: int64(2*i + 1), Process: 0, Type: OK, F: Send, Value: &Value{Topic: "t", Partition: 0, Value: v, Offset: Int64(int64(i))}},
		} {
			if _, err := w.Append(op); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	var steps []string
	err = ScanReadsFileShowing(path, func(*Op) error { seen++; return nil },
		func(Key, bool, []Record) error { return nil }, func(s string) { steps = append(steps, s) })
	if err != nil || seen != n {
		t.Fatalf("%d operations read, %v; want %d", seen, err, n)
	}
	line := regexp.MustCompile(`^reading history\.jsonl: (\d+) operations, (\d+) of (\d+) MB$`)
	if len(steps) != n/4096 {
		t.Fatalf("%d lines shown, want %d: %q", len(steps), n/4096, steps)
	}
	lastMB := 0
	for i, s := range steps {
		m := line.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("shown %q", s)
		}
		ops, _ := strconv.Atoi(m[1])
		mb, _ := strconv.Atoi(m[2])
		size, _ := strconv.Atoi(m[3])
		if ops != 4096*(i+1) || mb < lastMB || int64(size) != fi.Size()>>20 || mb > size {
			t.Errorf("line %d: %q (file %d MB)", i, s, fi.Size()>>20)
		}
		lastMB = mb
	}
	if lastMB == 0 {
		t.Errorf("the MB read never rose: %q", steps)
	}
}
