package report

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/chaos-isr/chaos/results"
)

// ErrNotRunDir marks a directory that is neither a run, a campaign nor a
// hunt.
var ErrNotRunDir = errors.New("not a run, campaign or hunt directory")

// WritePage renders the page of a store directory and returns its path:
// report.html for a run (a directory with test.json), index.html for a
// campaign (one with campaign.json), hunt.html for a hunt (one with
// hunt.json). Any other directory is ErrNotRunDir. show, if not nil, is
// told how far a run's history has been read (WriteRun).
func WritePage(dir string, show func(string)) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, results.TestFile)); err == nil {
		return filepath.Join(dir, results.ReportFile), WriteRun(dir, show)
	}
	if _, err := os.Stat(filepath.Join(dir, results.CampaignFile)); err == nil {
		return filepath.Join(dir, results.CampaignIndexFile), WriteCampaign(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, results.HuntFile)); err == nil {
		return filepath.Join(dir, results.HuntPageFile), WriteHunt(dir)
	}
	return "", ErrNotRunDir
}
