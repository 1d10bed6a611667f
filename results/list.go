package results

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Listing is what a store holds: its run, campaign and hunt directories,
// each newest first.
type Listing struct {
	Runs      []StoredDir
	Campaigns []StoredDir
	Hunts     []StoredDir
	// Problems are the directories that could not be read; the rest is
	// still listed.
	Problems []string
}

// StoredDir is a run's or a campaign's directory.
type StoredDir struct {
	// Test is the test's name, the directory above the run ("campaigns"
	// for a campaign, "hunts" for a hunt).
	Test string
	// Dir is the directory relative to the store, with slashes:
	// <test>/<timestamp>.
	Dir string
	// Path is the directory on disk: the store's root joined with Dir.
	Path string
	// Start is the time in the directory's name, or its modification time
	// for a directory named otherwise.
	Start time.Time
}

// ListStore lists a store's runs, campaigns and hunts: the directories
// two levels below the root, a campaign being one with campaign.json and a
// hunt one with hunt.json. Links
// (store/latest, store/<test>/latest) are skipped, since they point at
// directories listed anyway, and so are files, hidden and temporary names;
// a directory that cannot be read is a Problem, not an error. Only an
// unreadable root is one.
func ListStore(store string) (Listing, error) {
	var l Listing
	tests, err := os.ReadDir(store)
	if err != nil {
		return l, err
	}
	for _, t := range tests {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue // files, links (latest), hidden names
		}
		runs, err := os.ReadDir(filepath.Join(store, t.Name()))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			l.Problems = append(l.Problems, fmt.Sprintf("%s: %v", t.Name(), err))
			continue
		}
		for _, r := range runs {
			if !r.IsDir() || strings.HasPrefix(r.Name(), ".") || strings.HasSuffix(r.Name(), ".tmp") {
				continue
			}
			d := StoredDir{Test: t.Name(), Dir: t.Name() + "/" + r.Name(), Path: filepath.Join(store, t.Name(), r.Name()), Start: stampTime(r)}
			if _, err := os.Stat(filepath.Join(d.Path, CampaignFile)); err == nil {
				l.Campaigns = append(l.Campaigns, d)
				continue
			}
			if _, err := os.Stat(filepath.Join(d.Path, HuntFile)); err == nil {
				l.Hunts = append(l.Hunts, d)
				continue
			}
			l.Runs = append(l.Runs, d)
		}
	}
	newestFirst := func(a, b StoredDir) int { return cmp.Or(b.Start.Compare(a.Start), strings.Compare(b.Dir, a.Dir)) }
	slices.SortStableFunc(l.Runs, newestFirst)
	slices.SortStableFunc(l.Campaigns, newestFirst)
	slices.SortStableFunc(l.Hunts, newestFirst)
	return l, nil
}

// stampTime is a directory's start from its name, or its modification
// time for a directory named otherwise.
func stampTime(e os.DirEntry) time.Time {
	if t, err := time.Parse(stampLayout, e.Name()); err == nil {
		return t
	}
	if fi, err := e.Info(); err == nil {
		return fi.ModTime().UTC()
	}
	return time.Time{}
}
