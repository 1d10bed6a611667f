package report

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/chaos-isr/chaos/results"
)

// ErrNotRunDir marks a directory that is neither a run nor a campaign.
var ErrNotRunDir = errors.New("not a run or campaign directory")

// WritePage renders the page of a store directory and returns its path:
// report.html for a run (a directory with test.json), index.html for a
// campaign (one with campaign.json). Any other directory is ErrNotRunDir.
func WritePage(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, results.TestFile)); err == nil {
		return filepath.Join(dir, results.ReportFile), WriteRun(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, results.CampaignFile)); err == nil {
		return filepath.Join(dir, results.CampaignIndexFile), WriteCampaign(dir)
	}
	return "", ErrNotRunDir
}
