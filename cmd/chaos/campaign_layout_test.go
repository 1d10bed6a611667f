package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chaos-isr/chaos/results"
)

// layoutWidth is the viewport the pages must fit without a horizontal
// scroll bar: a laptop's browser window.
const layoutWidth = 1280

// overflowJS lists the elements that reach past the viewport's right
// edge, with the section they are in: what a failure must name.
const overflowJS = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1 && !e.closest('.scroll')) {
      const s = e.closest('section');
      out.push((s ? '#' + s.id : 'page') + ' ' + e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' to ' + Math.round(r.right) + 'px: ' + (e.innerText || '').slice(0, 50).replace(/\s+/g, ' '));
    }
  }
  return out.slice(0, 8).join('\n');
})()`

// TestPagesFitAt1280: the seed preset's index page, the report of a run
// with many fault windows and a long name, the report of a run on an
// external cluster (fault commands and their output in the faults
// table), and the page of a hunt that found and shrank a planted bug (its
// long scenario and replay commands) fit a 1280 px wide window in Chromium: the document is no wider
// than the viewport. A screenshot of each is kept (CHAOS_ARTIFACTS).
func TestPagesFitAt1280(t *testing.T) {
	requireCampaign(t)
	browser := newBrowserAt(t, layoutWidth, 900)
	store := t.TempDir()

	// The seed preset, every cell, in simulation; shorter runs, the same
	// page.
	out, code := runChaos(t, "campaign", "--preset", "seed", "--runtime", "sim", "--store", store, "--seed", "3",
		"--time-limit", "12s", "--nemesis-interval", "4s")
	if code != exitValid {
		t.Fatalf("the seed preset exited %d:\n%s", code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 120 && !strings.HasPrefix(l, "[") {
			// The run lines as they go may be long; the summary may not.
			t.Errorf("a summary line of %d columns: %s", len(l), l)
		}
	}
	index := filepath.Join(campaignDir(t, out), results.CampaignIndexFile)

	// Every fault kind the simulation models that composes with the
	// others, windows every 2 s for a minute, under a long name.
	many := "--nemesis=kill,kill-leader,partition,partition-leader,pause,slow-follower,slow-followers-kill-leader,one-way,latency,partition-controller"
	name := "a-run-whose-name-is-far-longer-than-the-cluster-table-gives-room-for_" + strings.Repeat("x", 40)
	out, code = runChaos(t, "sim", "--store", store, "--name", name, many, "--nemesis-interval", "2s", "--time-limit", "60s",
		"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000", "--seed", "5", "--quiet")
	if code == exitErrorCode {
		t.Fatalf("the run of many faults: exit %d:\n%s", code, out)
	}
	manyDir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}

	out, code = runChaos(t, "hunt", "--bug", "read-past-hw", "--seed", "1", "--shrink-runs", "5", "--store", store, "--quiet")
	if code != exitInvalid {
		t.Fatalf("the hunt exited %d; want a finding:\n%s", code, out)
	}
	_, huntPage := huntDirs(t, out)

	pages := map[string]string{
		"index-seed-preset":  index,
		"report-many-faults": filepath.Join(manyDir, results.ReportFile),
		"report-external":    filepath.Join(externalRunDir(t), results.ReportFile),
		"hunt-planted-bug":   huntPage,
	}
	dir := artifactDir(t)
	for _, name := range []string{"index-seed-preset", "report-many-faults", "report-external", "hunt-planted-bug"} {
		t.Run(name, func(t *testing.T) {
			width, wide, shot, err := measure(browser, "file://"+pages[name])
			if err != nil {
				t.Fatal(err)
			}
			png := filepath.Join(dir, name+"-1280.png")
			if err := os.WriteFile(png, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d px wide; screenshot %s", name, width, png)
			if width > layoutWidth {
				t.Errorf("%s is %d px wide in a %d px window; past the edge:\n%s", pages[name], width, layoutWidth, wide)
			}
		})
	}
}

// measure loads url in a new tab and returns the document's width, the
// elements past the window's edge, and a full-page screenshot.
func measure(browser context.Context, url string) (int, string, []byte, error) {
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("body")); err != nil {
		return 0, "", nil, fmt.Errorf("loading %s: %w", url, err)
	}
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		return 0, "", nil, err
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[string](overflowJS))
	if err != nil {
		return 0, "", nil, err
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	return width, wide, shot, err
}

// externalRunDir runs a short test against a cluster chaos did not start
// for it (a chaos cluster up of its own, killed and partitioned only
// through fault commands) and returns the run's directory.
func externalRunDir(t *testing.T) string {
	t.Helper()
	base := freeBase(t, 3)
	data := t.TempDir()
	up := startChaos(t, nil, "cluster", "up", "--network-faults", "--data", data, "--base-port", strconv.Itoa(base),
		"--session-timeout-ms", "1500", "--replica-lag-time-max-ms", "1500")
	up.waitFor("ready", 30*time.Second)
	bin := chaosBin(t)
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	store := t.TempDir()
	out, code := runChaos(t, "run", "--store", store, "--runtime", "external", "--bootstrap", addr(base), "--quiet", "--seed", "5",
		"--node", "broker-1="+addr(base), "--node", "broker-2="+addr(base+1), "--node", "broker-3="+addr(base+2),
		"--controller-node", "controller="+addr(base-1),
		"--kill-cmd", bin+" cluster kill {name} --data "+data,
		"--start-cmd", bin+" cluster start {name} --data "+data,
		"--partition-cmd", bin+" cluster partition {name} {peers} --data "+data,
		"--heal-cmd", bin+" cluster heal --data "+data,
		"--acks", "1", "--nemesis", "kill-leader,partition-leader", "--nemesis-interval", "2s", "--time-limit", "14s")
	if code == exitErrorCode {
		t.Fatalf("the external run: exit %d:\n%s", code, out)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
