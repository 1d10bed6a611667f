package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chaos-isr/chaos/results"
)

// TestSampleStore writes a sample store with CHAOS_SAMPLE_STORE=DIR: two
// synthetic runs with their reports (CHAOS_SAMPLE_OPS operations each,
// default 30,000), a campaign whose index links to them, and the store
// page as DIR/index.html, for looking at the pages in a browser.
func TestSampleStore(t *testing.T) {
	store := os.Getenv("CHAOS_SAMPLE_STORE")
	if store == "" {
		t.Skip("set CHAOS_SAMPLE_STORE=DIR to write a sample store")
	}
	n, _ := strconv.Atoi(os.Getenv("CHAOS_SAMPLE_OPS"))
	if n <= 0 {
		n = 30_000
	}
	var v CampaignView
	if err := json.Unmarshal([]byte(campaignJSON), &v); err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cells {
		for _, r := range c.Runs {
			if r.Dir == "" {
				continue
			}
			dir := filepath.Join(store, filepath.FromSlash(r.Dir))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			d := synthReport(n, r.Seed)
			d.Config.Name = c.Name
			writeRun(t, dir, d.Config, historyBytes(t, d.Ops), d.Results)
			if err := WriteRun(dir, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	camp := filepath.Join(store, "campaigns", "20261129T170000.000Z")
	os.MkdirAll(camp, 0o755)
	os.WriteFile(filepath.Join(camp, results.CampaignFile), []byte(campaignJSON), 0o644)
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, v); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(camp, results.CampaignIndexFile), buf.Bytes(), 0o644)
	sv, err := ScanStore(store)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := RenderStore(&buf, sv); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(store, "index.html"), buf.Bytes(), 0o644)
}
