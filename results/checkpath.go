package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What chaos check says when its PATH is not what it judges: what PATH is,
// and the runs of the store it could have meant.

const checkPathHelp = "a run directory (store/<test>/<time>, or store/latest for the newest run) or a history file (a run's history.jsonl, docs/history.md)"

// CheckArgs refuses chaos check's arguments but one PATH, saying what PATH
// is.
func CheckArgs(args []string) error {
	switch len(args) {
	case 0:
		return errors.New("PATH: missing; chaos check judges " + checkPathHelp + ", e.g. chaos check store/latest")
	case 1:
		return nil
	}
	return fmt.Errorf("PATH: one at a time, got %d (%s); e.g. chaos check store/latest", len(args), strings.Join(args, " "))
}

// FindHistory resolves chaos check's PATH to the history to read and the
// directory of its run (where test.json would be).
func FindHistory(path string) (hist, dir string, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("PATH: no such file or directory, got %q; chaos check judges %s%s", path, checkPathHelp, RunsHint(NearestDir(path)))
	}
	if err != nil {
		return "", "", err
	}
	if !fi.IsDir() {
		return path, filepath.Dir(path), nil
	}
	hist = filepath.Join(path, HistoryFile)
	if _, err := os.Stat(hist); err == nil {
		return hist, path, nil
	}
	what, near := "not a run directory (no history.jsonl in it)", path
	if _, err := os.Stat(filepath.Join(path, CampaignFile)); err == nil {
		// STORE/campaigns/<time>: its runs are in the store, two up.
		what, near = "a campaign directory, not a run (campaign.json lists its runs' directories)", filepath.Dir(filepath.Dir(filepath.Clean(path)))
	} else if _, err := os.Stat(filepath.Join(path, TestFile)); err == nil {
		what = "a run directory without a history (the run stopped before its workload began)"
	}
	return "", "", fmt.Errorf("PATH: %s, got %q; chaos check judges %s%s", what, path, checkPathHelp, RunsHint(near))
}

// NearestDir is the closest existing directory at or above path.
func NearestDir(path string) string {
	for d := filepath.Dir(filepath.Clean(path)); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if d == "." || d == string(filepath.Separator) {
			return "."
		}
	}
}

// RunsHint names the runs found at or below dir (up to three levels, as in
// store/<test>/<time>), the "latest" links first, for an error message.
func RunsHint(dir string) string {
	var latest, runs []string
	base := filepath.Clean(dir)
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		depth := 0
		if p != base {
			depth = strings.Count(strings.TrimPrefix(p, base), string(filepath.Separator))
		}
		if d.Name() == "latest" && d.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(filepath.Join(p, HistoryFile)); err == nil {
				latest = append(latest, p)
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(p, HistoryFile)); err == nil && p != base {
			runs = append(runs, p)
			return filepath.SkipDir
		}
		if depth >= 3 {
			return filepath.SkipDir
		}
		return nil
	})
	if len(latest)+len(runs) == 0 {
		return ""
	}
	// The shortest "latest" first (store/latest before
	// store/<test>/latest), then the newest runs (their names are UTC
	// timestamps).
	slices.SortFunc(latest, func(a, b string) int { return len(a) - len(b) })
	slices.SortFunc(runs, func(a, b string) int { return strings.Compare(filepath.Base(b), filepath.Base(a)) })
	names := append(latest, runs...)
	const show = 4
	hint := "; runs found here: " + strings.Join(names[:min(show, len(names))], ", ")
	if len(names) > show {
		hint += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return hint + "; e.g. chaos check " + names[0]
}

// NotHistory is the error for a file of which not one line is an
// operation (test.json, say): it says so, and what to pass instead,
// rather than a JSON error about the file's first line.
func NotHistory(path string, err error) error {
	suggest := "chaos check " + filepath.Dir(path)
	switch filepath.Base(path) {
	case TestFile:
		return fmt.Errorf("PATH: not a history but a run's configuration (test.json), got %q; pass the run directory: %s", path, suggest)
	case ResultsFile:
		return fmt.Errorf("PATH: not a history but a run's verdict (results.json), got %q; pass the run directory: %s", path, suggest)
	}
	return fmt.Errorf("PATH: not a history (%v), got %q; chaos check judges %s", err, path, checkPathHelp)
}
