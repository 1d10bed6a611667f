package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/chaos-isr/chaos/internal/atomicfile"
)

// The files of a run directory.
const (
	HistoryFile         = "history.jsonl"
	TestFile            = "test.json"
	ResultsFile         = "results.json"
	ReportFile          = "report.html"
	LinearizabilityFile = "linearizability.html"
)

// Run is one run's directory in the store.
type Run struct {
	Store string // the store's root
	Test  string // the test's name
	Dir   string // store/<test>/<timestamp>
}

var safeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// TestName is a test's name as the store files it: every run of a
// character other than a letter, digit, '.', '_' or '-' becomes one '_'.
func TestName(name string) string { return safeName.ReplaceAllString(name, "_") }

// stampLayout names a run's directory after its start.
const stampLayout = "20060102T150405.000Z"

// NewRun creates store/<test>/<timestamp>/ for a run starting at t. The
// timestamp is UTC with milliseconds so that runs sort by name.
func NewRun(store, test string, t time.Time) (*Run, error) {
	test = TestName(test)
	if test == "" || test == "." || test == ".." {
		return nil, fmt.Errorf("bad test name %q", test)
	}
	dir := filepath.Join(store, test, t.UTC().Format(stampLayout))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Run{Store: store, Test: test, Dir: dir}, nil
}

// Path is a file in the run's directory.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// WriteJSON writes v as indented JSON to name in the run's directory,
// atomically.
func (r *Run) WriteJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(r.Path(name), append(data, '\n'))
}

// MarkLatest points store/latest (and store/<test>/latest) at this run.
func (r *Run) MarkLatest() error {
	rel, err := filepath.Rel(r.Store, r.Dir)
	if err != nil {
		return err
	}
	if err := Relink(filepath.Join(r.Store, "latest"), rel); err != nil {
		return err
	}
	return Relink(filepath.Join(r.Store, r.Test, "latest"), filepath.Base(r.Dir))
}

// relinks numbers this process's new links (Relink).
var relinks atomic.Int64

// Relink points the symlink link at target atomically: a new link renamed
// over the old, so that a reader finds the old target or the new, never
// no link. The new link's name is its own (the process and a count), so
// that runs sharing a store (a hunt beside a sweep, a sweep's parallel
// runs) do not take each other's away; the last rename wins.
func Relink(link, target string) error {
	tmp := fmt.Sprintf("%s.%d-%d.tmp", link, os.Getpid(), relinks.Add(1))
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteFileAtomic writes data to path so that readers see the old file or
// the new one, never a part.
func WriteFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }
