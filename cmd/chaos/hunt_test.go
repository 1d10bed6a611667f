package main

import (
	"bytes"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
)

// huntDirs are the hunt directory and page chaos hunt printed.
func huntDirs(t *testing.T, out string) (dir, page string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(l, "hunt directory: "); ok {
			dir = d
		}
		if p, ok := strings.CutPrefix(l, "hunt page: "); ok {
			page = p
		}
	}
	if dir == "" || page == "" {
		t.Fatalf("chaos hunt printed no hunt directory or no page:\n%s", out)
	}
	if filepath.Join(dir, results.HuntPageFile) != page {
		t.Fatalf("the page %s is not in the hunt directory %s", page, dir)
	}
	return dir, page
}

// readHunt reads a hunt's record and checks what every record holds: the
// directory is STORE/hunts/<time> with hunts/latest at it, the counts add
// up, the growth is a step line ending at the last run, and every run
// directory it names is in the store.
func readHunt(t *testing.T, store, dir string) results.Hunt {
	t.Helper()
	h, err := results.ReadHunt(filepath.Join(dir, results.HuntFile))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != filepath.Join(store, results.HuntsDir) {
		t.Errorf("hunt directory %s is not in %s/hunts", dir, store)
	}
	latest, err := filepath.EvalSymlinks(filepath.Join(store, results.HuntsDir, "latest"))
	if real, _ := filepath.EvalSymlinks(dir); err != nil || latest != real {
		t.Errorf("hunts/latest is %s (%v); want %s", latest, err, real)
	}
	if h.Format != results.HuntFormat || h.Status != "complete" || h.End == nil || h.ExitCode == nil {
		t.Errorf("format %d, status %q, end %v, exit code %v: want a complete record", h.Format, h.Status, h.End, h.ExitCode)
	}
	if h.Valid+h.Invalid+h.Unknown+h.Errors != h.Runs || h.Invalid != len(h.Findings) || h.Unknown+h.Errors != len(h.Unjudged) {
		t.Errorf("counts do not add up: %d runs, %d valid, %d invalid (%d findings), %d unknown, %d errors (%d unjudged)",
			h.Runs, h.Valid, h.Invalid, len(h.Findings), h.Unknown, h.Errors, len(h.Unjudged))
	}
	if n := len(h.Growth); n == 0 || h.Growth[n-1].Coverage != h.Coverage || h.Growth[n-1].Run != h.Runs {
		t.Errorf("growth %v does not end at run %d with the coverage %d", h.Growth, h.Runs, h.Coverage)
	}
	for i := 1; i < len(h.Growth); i++ {
		if a, b := h.Growth[i-1], h.Growth[i]; b.Run <= a.Run || b.Coverage < a.Coverage {
			t.Errorf("growth goes back: %v then %v", a, b)
		}
	}
	exists := func(what, rel string) {
		if _, err := os.Stat(filepath.Join(store, filepath.FromSlash(rel), results.TestFile)); err != nil {
			t.Errorf("%s: %q is no run directory of the store: %v", what, rel, err)
		}
	}
	for _, f := range h.Findings {
		exists("finding", f.Dir)
		if f.Shrunk != nil && f.Shrunk.Dir != "" {
			exists("shrunk run", f.Shrunk.Dir)
		}
	}
	for _, u := range h.Unjudged {
		exists("unjudged run", u.Dir)
		if u.Reason == "" {
			t.Errorf("unjudged run %d (%s) says not why", u.Run, u.Verdict)
		}
	}
	return h
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// checkLinks checks that every link of a page to a file resolves to one
// that exists, and returns them.
func checkLinks(t *testing.T, page string) []string {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, m := range hrefRE.FindAllStringSubmatch(string(data), -1) {
		ref := html.UnescapeString(m[1])
		if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "data:") {
			continue
		}
		u, err := url.Parse(ref)
		if err != nil || u.Scheme != "" {
			t.Errorf("%s links to %q: not a relative link", page, ref)
			continue
		}
		target := filepath.Join(filepath.Dir(page), filepath.FromSlash(u.Path))
		if _, err := os.Stat(target); err != nil {
			t.Errorf("%s links to %q, which is not there: %v", page, ref, err)
		}
		links = append(links, u.Path)
	}
	return links
}

// shell runs a command line as a user pastes it, chaos on the PATH.
func shell(t *testing.T, line string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(chaosBin(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return out.String(), 0
}

// TestHuntRecord: a hunt for a planted bug (read-past-hw, which seed 1
// finds within a few dozen runs) stops at the finding, shrinks it, and
// leaves its record in the store: the finding with its anomalies, its run
// directory and a replay command that gives the same history byte for
// byte, the shrunk run smaller and still failing, and a page whose links
// all lead to files there, which chaos report renders again.
func TestHuntRecord(t *testing.T) {
	store := t.TempDir()
	out, code := runChaos(t, "hunt", "--bug", "read-past-hw", "--seed", "1", "--runs", "300", "--shrink-runs", "15", "--store", store, "--quiet")
	if code != exitInvalid {
		t.Fatalf("the hunt exited %d; want %d (a finding):\n%s", code, exitInvalid, out)
	}
	dir, page := huntDirs(t, out)
	h := readHunt(t, store, dir)
	if *h.ExitCode != exitInvalid || h.Seed != 1 || len(h.Findings) != 1 {
		t.Fatalf("exit code %d, seed %d, %d findings; want 1, 1 and one finding (the hunt stops there)", *h.ExitCode, h.Seed, len(h.Findings))
	}
	if want := []string{"hunt", "--bug", "read-past-hw", "--seed", "1"}; !containsInOrder(h.Command, want) {
		t.Errorf("the command that repeats the hunt is %q; want it to hold %q", h.Command, want)
	}
	if o := h.Options; o.Runs != 300 || o.ShrinkRuns != 15 || !o.Feedback || o.KeepGoing || !slices.Equal(o.Bugs, []string{"read-past-hw"}) ||
		o.Config.Acks != -1 || o.Config.MinInsyncReplicas != 2 || len(o.Kinds) == 0 {
		t.Errorf("options %+v are not the hunt's", o)
	}
	f := h.Findings[0]
	if f.Run != h.Runs || f.Verdict != "invalid" || len(f.Anomalies) == 0 || f.Scenario == "" || f.Seed == 0 {
		t.Errorf("the finding %+v: want the hunt's last run (%d), invalid, with its anomalies, scenario and seed", f.HuntRun, h.Runs)
	}
	stored, err := results.ReadStoredResults(filepath.Join(store, f.Dir, results.ResultsFile))
	if err != nil || !slices.Equal(stored.Results.Unexpected, f.Anomalies) {
		t.Errorf("the finding's results.json says %v (%v); the record %v", stored.Results.Unexpected, err, f.Anomalies)
	}
	if !strings.HasPrefix(f.Replay, "chaos sim ") || !strings.Contains(f.Replay, "--bug read-past-hw") || !strings.Contains(f.Replay, "--seed "+strconv.FormatUint(f.Seed, 10)) {
		t.Errorf("replay %q: want chaos sim with the bug and the run's seed", f.Replay)
	}
	if !strings.Contains(out, "replay:   "+f.Replay) {
		t.Errorf("the console did not print the recorded replay command %q:\n%s", f.Replay, out)
	}

	// The replay command, pasted into a shell, runs the same history.
	replayStore := t.TempDir()
	rout, rcode := shell(t, strings.Replace(f.Replay, "--store "+store, "--store "+replayStore, 1)+" --quiet")
	if rcode != exitInvalid {
		t.Fatalf("the replay exited %d; want %d:\n%s", rcode, exitInvalid, rout)
	}
	same(t, filepath.Join(store, f.Dir, results.HistoryFile), filepath.Join(replayStore, "latest", results.HistoryFile))

	s := f.Shrunk
	if s == nil || s.Error != "" || s.Dir == "" || s.Replay == "" || s.Runs == 0 || s.Runs > 15 {
		t.Fatalf("the shrunk run %+v: want one, in at most 15 runs", s)
	}
	for _, a := range f.Anomalies {
		if !slices.Contains(s.Anomalies, a) {
			t.Errorf("the shrunk run shows %v, not the finding's %s", s.Anomalies, a)
		}
	}
	b, a := s.Before, s.After
	if a.Windows > b.Windows || a.WindowTime > b.WindowTime || a.TimeLimit > b.TimeLimit || a.Producers > b.Producers ||
		a.Consumers > b.Consumers || a.Partitions > b.Partitions || a.RatePerSec > b.RatePerSec || a == b {
		t.Errorf("the shrunk run %+v is not smaller than the finding %+v", a, b)
	}
	if _, code := shell(t, strings.Replace(s.Replay, "--store "+store, "--store "+replayStore, 1)+" --quiet"); code != exitInvalid {
		t.Errorf("the shrunk run's replay exited %d; want %d: it still fails", code, exitInvalid)
	}

	links := checkLinks(t, page)
	for _, want := range []string{f.Dir + "/" + results.ReportFile, s.Dir + "/" + results.ReportFile} {
		if !slices.ContainsFunc(links, func(l string) bool { return strings.HasSuffix(l, want) }) {
			t.Errorf("hunt.html does not link to %s; its links: %v", want, links)
		}
	}
	body, _ := os.ReadFile(page)
	for _, want := range []string{`id="outcome" class="verdict invalid"`, ">FOUND<", `id="coverage-plot"`, f.Replay, s.Replay} {
		if !strings.Contains(html.UnescapeString(string(body)), want) {
			t.Errorf("hunt.html lacks %q", want)
		}
	}

	// chaos report renders the page again from hunt.json alone.
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}
	rout, rcode = runChaos(t, "report", store)
	if rcode != 0 || !strings.Contains(rout, page) {
		t.Fatalf("chaos report %s exited %d without rendering %s:\n%s", store, rcode, page, rout)
	}
	if again, err := os.ReadFile(page); err != nil || !bytes.Equal(again, body) {
		t.Errorf("chaos report rendered another page than the hunt's (%v)", err)
	}
}

// TestHuntRecordControl: a hunt on the correct broker records no
// finding: every run counted, the unjudged ones (if any) with why, exit
// code as the console's.
func TestHuntRecordControl(t *testing.T) {
	store := t.TempDir()
	out, code := runChaos(t, "hunt", "--seed", "7", "--runs", "4", "--store", store, "--quiet")
	if code == exitInvalid || code < 0 {
		t.Fatalf("a hunt on the correct broker exited %d:\n%s", code, out)
	}
	dir, page := huntDirs(t, out)
	h := readHunt(t, store, dir)
	if h.Runs != 4 || len(h.Findings) != 0 || *h.ExitCode != code {
		t.Errorf("%d runs, %d findings, exit code %d; want 4, none, %d", h.Runs, len(h.Findings), *h.ExitCode, code)
	}
	checkLinks(t, page)
	body, _ := os.ReadFile(page)
	if !strings.Contains(string(body), ">NOT FOUND<") {
		t.Errorf("hunt.html does not say NOT FOUND")
	}
}

func containsInOrder(have, want []string) bool {
	i := 0
	for _, a := range have {
		if i < len(want) && a == want[i] {
			i++
		}
	}
	return i == len(want)
}

// same fails t unless two files hold the same bytes.
func same(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Errorf("%s and %s differ (%d and %d bytes)", a, b, len(x), len(y))
	}
}
