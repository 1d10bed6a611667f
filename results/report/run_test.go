package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// hist builds small histories: each op gets the next index and the time
// given in seconds.
type hist struct{ ops []history.Op }

func (h *hist) add(sec float64, p int, typ history.Type, f string, v *history.Value, errText string) int64 {
	i := int64(len(h.ops))
	h.ops = append(h.ops, history.Op{Index: i, Time: int64(sec * 1e9), Process: p, Type: typ, F: f, Value: v, Error: errText})
	return i
}

// send records an ok send of val to part at off; it returns the ok's index.
func (h *hist) send(sec float64, p int, part int32, val string, off int64) int64 {
	h.add(sec, p, history.Invoke, history.Send, &history.Value{Topic: "t", Partition: part, Value: val}, "")
	return h.add(sec+0.001, p, history.OK, history.Send, &history.Value{Topic: "t", Partition: part, Value: val, Offset: history.Int64(off)}, "")
}

func (h *hist) final(sec float64, part int32, hw int64, recs []history.Record) int64 {
	h.add(sec, 99, history.Invoke, history.FinalRead, &history.Value{Topic: "t", Partition: part}, "")
	return h.add(sec+0.001, 99, history.OK, history.FinalRead, &history.Value{Topic: "t", Partition: part, Records: recs, HW: history.Int64(hw)}, "")
}

func (h *hist) nemesis(sec float64, f, fault string, targets ...string) {
	v := &history.Value{FaultInfo: &history.FaultInfo{Fault: fault, Targets: targets}}
	h.add(sec, history.NemesisProcess, history.Invoke, f, v, "")
	h.add(sec+0.0001, history.NemesisProcess, history.Info, f, v, "")
}

func (h *hist) monitor(sec float64, part int32, leader int32, epoch int32, isr []int32, hw int64) {
	h.add(sec, history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: "t", Partition: part}, "")
	v := &history.Value{Topic: "t", Partition: part, Sample: &history.Sample{Leader: history.Int32(leader), Epoch: history.Int32(epoch), ISR: isr, Replicas: []int32{1, 2, 3}}}
	if hw >= 0 {
		v.HW = history.Int64(hw)
	}
	h.add(sec+0.001, history.MonitorProcess, history.OK, history.Monitor, v, "")
}

func testConfig() *results.TestConfig {
	return &results.TestConfig{Name: "t", Seed: 7, Command: []string{"chaos", "run"},
		Cluster:  results.ClusterConfig{ReplicationFactor: 3, MinInsyncReplicas: 2, Election: "clean"},
		Workload: results.Workload{Acks: -1}}
}

func render(t testing.TB, d RunData) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderRun(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func check(ops []history.Op, tc *results.TestConfig) *checker.Results {
	return checker.Check(ops, tc.CheckerConfig(), checker.Options{SkipLinearizability: true})
}

// The x of time t (ns) on a history ending at end: the plot area spans
// plotLeft to plotW-plotRight.
func xAt(t, end int64) float64 {
	return r1(plotLeft + float64(t)/float64(end)*(plotW-plotRight-plotLeft))
}

func TestFaultBandsAtTheirTimes(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.nemesis(2, "start-kill", "kill", "broker-2")
	h.send(3, 0, 0, "b", 1)
	h.nemesis(4, "stop-kill", "kill", "broker-2")
	h.nemesis(6, "start-partition-leader", "partition-leader", "broker-1")
	h.nemesis(7, "heal", "all")
	h.final(9.999, 0, 2, []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}})
	end := h.ops[len(h.ops)-1].Time
	v := buildReport(RunData{Config: testConfig(), Ops: h.ops})
	for _, p := range v.Plots {
		if len(p.Bands) != 2 {
			t.Fatalf("%s: %d bands, want 2", p.ID, len(p.Bands))
		}
		kill, part := p.Bands[0], p.Bands[1]
		if kill.X != xAt(2e9, end) || math.Abs(kill.X+kill.W-xAt(4e9, end)) > 0.11 || kill.Label != "kill" || !strings.Contains(kill.Title, "broker-2") {
			t.Fatalf("%s: kill band %+v, want x %.1f to %.1f", p.ID, kill, xAt(2e9, end), xAt(4e9, end))
		}
		// A window the nemesis never stopped ends at the heal.
		if part.X != xAt(6e9, end) || math.Abs(part.X+part.W-xAt(7e9, end)) > 0.11 || part.Label != "partition-leader" {
			t.Fatalf("%s: partition-leader band %+v, want x %.1f to %.1f", p.ID, part, xAt(6e9, end), xAt(7e9, end))
		}
	}
	if len(v.Faults) != 2 || v.Faults[0].Targets != "broker-2" || v.Faults[0].Start != "2.000 s" || v.Faults[0].Duration != "2.00 s" {
		t.Fatalf("faults table %+v", v.Faults)
	}
	if s := v.Faults[0].Sends; s != "1 ok, 0 info, 0 fail" {
		t.Fatalf("sends in the kill window: %s", s)
	}
	page := render(t, RunData{Config: testConfig(), Ops: h.ops})
	if want := fmt.Sprintf(`<rect x="%g" y="%g" width="%g"`, v.Plots[0].Bands[0].X, plotTop, v.Plots[0].Bands[0].W); !strings.Contains(page, want) {
		t.Fatalf("page lacks the kill band %s", want)
	}
}

// TestTickLabelsAreRound: a short run's time axis steps by 0.1 s and a
// quiet partition's HW axis by 0.2; summing such steps in floating point
// gives labels like "0.30000000000000004 s".
func TestTickLabelsAreRound(t *testing.T) {
	h := &hist{}
	h.monitor(0, 0, 1, 0, []int32{1, 2, 3}, 0)
	h.monitor(0.9, 0, 1, 0, []int32{1, 2, 3}, 0)
	v := buildReport(RunData{Ops: h.ops})
	want := regexp.MustCompile(`^-?\d+(\.\d)? s$`)
	for _, tk := range v.Plots[0].XTicks {
		if !want.MatchString(tk.Label) {
			t.Errorf("time tick %q", tk.Label)
		}
	}
	if len(v.Plots[0].XTicks) != 11 || v.Plots[0].XTicks[10].Label != "1 s" {
		t.Errorf("time ticks %+v, want 0 s to 1 s by 0.1 s", v.Plots[0].XTicks)
	}
	hw := v.Plots[3]
	var labels []string
	for _, tk := range hw.YTicks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0 0.2 0.4 0.6 0.8 1" {
		t.Errorf("HW ticks %q", got)
	}
}

func TestFaultBandsFallBackToTheSchedule(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.send(9.999, 0, 0, "b", 1)
	tc := testConfig()
	tc.Schedule = results.Schedule{{Fault: "pause", Start: 5 * time.Second, End: 8 * time.Second}}
	v := buildReport(RunData{Config: tc, Ops: h.ops})
	end := h.ops[len(h.ops)-1].Time
	b := v.Plots[0].Bands
	if len(b) != 1 || b[0].X != xAt(5e9, end) || !strings.Contains(b[0].Title, "planned") {
		t.Fatalf("bands %+v", b)
	}
	if len(v.Faults) != 1 || !strings.Contains(v.Faults[0].Note, "planned") {
		t.Fatalf("faults %+v", v.Faults)
	}
}

func TestLostWritesAllListed(t *testing.T) {
	// 25 losses: more than the checker's ten examples.
	h := &hist{}
	var kept []history.Record
	for i := range 50 {
		h.send(float64(i)*0.1, 0, 0, fmt.Sprintf("v%d", i), int64(i))
		if i%2 == 0 {
			kept = append(kept, history.Record{Offset: int64(i), Value: fmt.Sprintf("v%d", i)})
		}
	}
	h.final(6, 0, 50, kept)
	tc := testConfig()
	res := check(h.ops, tc)
	page := render(t, RunData{Config: tc, Results: res, Ops: h.ops})
	lost := section(t, page, "lost-writes")
	for i := 1; i < 50; i += 2 {
		if !strings.Contains(lost, fmt.Sprintf(`<td class="mono">v%d</td>`, i)) {
			t.Fatalf("lost write v%d not listed", i)
		}
	}
	if strings.Contains(lost, `<td class="mono">v2</td>`) {
		t.Fatal("a kept value is listed as lost")
	}
	if !strings.Contains(section(t, page, "verdict"), "INVALID") || !strings.Contains(page, "25 acknowledged writes were lost") {
		t.Fatal("the verdict does not say the run lost writes")
	}
	// Each ack time is a ▼ on the latency plot.
	if n := strings.Count(section(t, page, "plot-latency"), `class="lost"`); n == 0 {
		t.Fatal("no lost write on the latency plot")
	}
}

func TestLostWritesCapped(t *testing.T) {
	h := &hist{}
	n := maxLostRows + 10
	for i := range n {
		h.send(float64(i)*0.001, 0, 0, fmt.Sprintf("v%d", i), int64(i))
	}
	h.final(float64(n)*0.001+1, 0, int64(n), nil)
	v := buildReport(RunData{Ops: h.ops})
	if v.LostCount != n || len(v.Lost) != maxLostRows || !strings.Contains(v.LostNote, fmt.Sprintf("%d of %d", maxLostRows, n)) {
		t.Fatalf("lost %d, rows %d, note %q", v.LostCount, len(v.Lost), v.LostNote)
	}
}

func TestDownsampleScatterKeepsExtremesAndBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := newXScale(100e9)
	var ps []pt
	for i := range 200_000 {
		ps = append(ps, pt{t: int64(i) * 500_000, v: rng.ExpFloat64(), pos: int32(i)})
	}
	ps[123_456].v = 1e9 // one outlier
	ps[7].v = -1
	out := downsampleScatter(ps, xs, xBuckets)
	if len(out) > len(scatterQuantiles)*xBuckets {
		t.Fatalf("%d points, bound %d", len(out), len(scatterQuantiles)*xBuckets)
	}
	// Every bucket keeps its lowest and highest point.
	lo, hi := map[int]float64{}, map[int]float64{}
	for _, p := range ps {
		b := xs.bucket(p.t, xBuckets)
		if v, ok := lo[b]; !ok || p.v < v {
			lo[b] = p.v
		}
		if v, ok := hi[b]; !ok || p.v > v {
			hi[b] = p.v
		}
	}
	gotLo, gotHi := map[int]float64{}, map[int]float64{}
	for i, p := range out {
		if i > 0 && p.pos <= out[i-1].pos {
			t.Fatal("the points are not in input order")
		}
		b := xs.bucket(p.t, xBuckets)
		if v, ok := gotLo[b]; !ok || p.v < v {
			gotLo[b] = p.v
		}
		if v, ok := gotHi[b]; !ok || p.v > v {
			gotHi[b] = p.v
		}
	}
	for b := range lo {
		if gotLo[b] != lo[b] || gotHi[b] != hi[b] {
			t.Fatalf("bucket %d: kept [%g, %g], want [%g, %g]", b, gotLo[b], gotHi[b], lo[b], hi[b])
		}
	}
	// Few points are kept as they are.
	if few := ps[:100]; len(downsampleScatter(few, xs, xBuckets)) != 100 {
		t.Fatal("a short series was thinned")
	}
	// Read a few buckets' points at a time (the default holds all of
	// these at once), the same points are kept; ties in value too.
	for i := range ps {
		if i%3 == 0 {
			ps[i].v = float64(i % 5)
		}
	}
	all := downsampleScatter(ps, xs, xBuckets)
	defer func(held int) { scatterHeld = held }(scatterHeld)
	for _, held := range []int{1, 999, 5000} {
		scatterHeld = held
		if got := downsampleScatter(ps, xs, xBuckets); !slices.Equal(got, all) {
			t.Fatalf("holding %d points at a time: %d points kept, not the same as the %d holding them all", held, len(got), len(all))
		}
	}
}

func TestDownsampleStepsKeepsExtremesAndLastLevel(t *testing.T) {
	xs := newXScale(10e9)
	var ps []pt
	for i := range 100_000 {
		v := float64(i % 7)
		if i == 50_000 {
			v = 100
		}
		ps = append(ps, pt{t: int64(i) * 100_000, v: v})
	}
	out := downsampleSteps(ps, xs, xBuckets)
	if len(out) > 3*xBuckets {
		t.Fatalf("%d points", len(out))
	}
	found := false
	for _, p := range out {
		found = found || p.v == 100
	}
	if !found || out[len(out)-1] != ps[len(ps)-1] {
		t.Fatal("the peak or the last point was dropped")
	}
}

// hostile strings, as another tool's history might carry them.
const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

func TestHostileValuesAreEscaped(t *testing.T) {
	h := &hist{}
	h.add(0, 0, history.Invoke, history.Send, &history.Value{Topic: hostile, Partition: 0, Value: hostile}, "")
	h.add(0.1, 0, history.Info, history.Send, &history.Value{Topic: hostile, Partition: 0, Value: hostile}, hostile)
	h.nemesis(0.2, "start-"+hostile, hostile, hostile)
	h.send(0.3, 1, 0, "ok-"+hostile, 0)
	h.add(0.4, history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: hostile}, "")
	h.add(0.5, history.MonitorProcess, history.Fail, history.Monitor, &history.Value{Topic: hostile}, hostile)
	h.final(1, 0, 5, nil) // loses the ok send: it is listed
	tc := testConfig()
	tc.Name, tc.Command = hostile, []string{"chaos", "run", "--name", hostile}
	tc.Versions = map[string]string{hostile: hostile}
	res := check(h.ops, tc)
	res.Problems = append(res.Problems, hostile)
	res.Results[0].Details = append(res.Results[0].Details, hostile+" (op 1)")
	page := render(t, RunData{Dir: hostile, Config: tc, Results: res, Ops: h.ops, Notes: []string{hostile}, Linearizability: `javascript:alert(3)`})
	for _, bad := range []string{"<script", "<img", "onerror=alert(2)>", `href="javascript:`} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Fatalf("unescaped %q in the page: …%s…", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the hostile value is not shown escaped")
	}
	// The store page shows test names and notes from the directories.
	var buf bytes.Buffer
	v := StoreView{Root: hostile, Problems: []string{hostile}, Runs: []StoreRun{{Test: hostile, Dir: hostile + "/" + hostile, Summary: hostile, Note: hostile, Report: true}}}
	if err := RenderStore(&buf, v); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img", `href="javascript:`} {
		if strings.Contains(buf.String(), bad) {
			t.Fatalf("unescaped %q in the store page", bad)
		}
	}
}

// section returns the element with the given id, up to its closing tag
// at the same depth as far as a flat search can tell (the next opening
// of a sibling section or figure is good enough for these tests).
func section(t testing.TB, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no element with id %q", id)
	}
	rest := page[i:]
	end := len(rest)
	for _, closing := range []string{"</section>", "</figure>"} {
		if j := strings.Index(rest, closing); j >= 0 && j < end {
			end = j
		}
	}
	return rest[:end]
}

var (
	idAttr   = regexp.MustCompile(` id="([^"]+)"`)
	hrefAttr = regexp.MustCompile(` href="#([^"]+)"`)
)

// checkPage checks what every page must be: ids unique, every in-page
// link pointing at an element, nothing fetched from elsewhere.
func checkPage(t testing.TB, page string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range idAttr.FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Fatalf("id %q twice", m[1])
		}
		ids[m[1]] = true
	}
	for _, m := range hrefAttr.FindAllStringSubmatch(page, -1) {
		if !ids[m[1]] {
			t.Fatalf("link to #%s, which the page does not have", m[1])
		}
	}
	// The only link is an empty inline icon, which spares the browser
	// a request for /favicon.ico.
	page = strings.Replace(page, `<link rel="icon" href="data:,">`, "", 1)
	for _, ext := range []string{"<script", "<link", "@import", "url(", `src="`, `href="http`, `href="//`} {
		if strings.Contains(page, ext) {
			t.Fatalf("the page is not self-contained: it has %q", ext)
		}
	}
	return ids
}

// reportIDs are the elements every run report has, whatever it lacks.
var reportIDs = []string{"verdict", "guarantees", "config", "plot-latency", "plot-throughput", "plot-isr", "plot-hw",
	"plot-unavailability", "faults", "anomalies", "lost-writes", "history"}

func TestReportElementsAndLinks(t *testing.T) {
	d := synthReport(20_000, 3)
	page := render(t, d)
	ids := checkPage(t, page)
	for _, id := range append(reportIDs, "anomaly-lost-write") {
		if !ids[id] {
			t.Errorf("no element with id %q", id)
		}
	}
	// Every plot has its drawing, not an "empty" message.
	for _, id := range []string{"plot-latency", "plot-throughput", "plot-isr", "plot-hw", "plot-unavailability"} {
		if s := section(t, page, id); !strings.Contains(s, "<svg") || strings.Contains(s, `class="empty"`) {
			t.Errorf("%s has no plot", id)
		}
	}
	if !strings.Contains(section(t, page, "config"), "--seed 3") {
		t.Error("the replay command lacks the seed")
	}
	// The examples of every anomaly are in the history view.
	for _, r := range d.Results.Results {
		for _, e := range r.Examples {
			if !ids[fmt.Sprintf("op-%d", e)] {
				t.Errorf("%s example op %d is not in the history view", r.Name, e)
			}
		}
	}
}

func TestNoMonitorFallsBackToConsumersHW(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.add(1, 5, history.Invoke, history.Poll, &history.Value{Topic: "t", From: history.Int64(0)}, "")
	h.add(1.1, 5, history.OK, history.Poll, &history.Value{Topic: "t", From: history.Int64(0), Records: []history.Record{{Offset: 0, Value: "a"}}, HW: history.Int64(1)}, "")
	v := buildReport(RunData{Ops: h.ops})
	isr, hw := v.Plots[2], v.Plots[3]
	if isr.ID != "plot-isr" || !strings.Contains(isr.Empty, "No monitor samples") {
		t.Fatalf("isr plot: %+v", isr)
	}
	if hw.ID != "plot-hw" || hw.Empty != "" || len(hw.Lines) != 1 || !strings.Contains(hw.Caption, "consumers") {
		t.Fatalf("hw plot: empty %q, %d lines", hw.Empty, len(hw.Lines))
	}
}

func TestMonitorSamplesDrawISRAndLeaderlessness(t *testing.T) {
	h := &hist{}
	h.monitor(0, 0, 1, 0, []int32{1, 2, 3}, 0)
	h.monitor(1, 0, 1, 0, []int32{1}, 5)
	h.monitor(2, 0, -1, 0, []int32{1}, -1)
	h.monitor(3, 0, 2, 1, []int32{2, 3}, 7)
	h.add(4, history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: "t"}, "")
	h.add(4.001, history.MonitorProcess, history.Fail, history.Monitor, &history.Value{Topic: "t"}, "no broker answered")
	h.monitor(9.998, 0, 2, 1, []int32{2, 3, 1}, 9)
	v := buildReport(RunData{Config: testConfig(), Ops: h.ops})
	isr := v.Plots[2]
	var noLeader, blind, epochs int
	for _, r := range isr.Rects {
		switch r.Class {
		case "noleader":
			noLeader++
			if want := xAt(2e9+1e6, h.ops[len(h.ops)-1].Time); r.X != want {
				t.Errorf("no-leader rect at %g, want %g", r.X, want)
			}
		case "blind":
			blind++
		}
	}
	for _, m := range isr.Marks {
		if m.Class == "epoch" {
			epochs++
			if !strings.Contains(m.Title, "leader 1 → 2, epoch 0 → 1") {
				t.Errorf("epoch mark %q", m.Title)
			}
		}
	}
	if noLeader != 1 || blind != 1 || epochs != 1 {
		t.Fatalf("%d no-leader, %d blind, %d epoch marks; want 1 each", noLeader, blind, epochs)
	}
	if len(v.Plots[3].Lines) != 1 {
		t.Fatal("no HW line from the monitor")
	}
	if len(v.Plots[4].Rects) == 0 {
		t.Fatal("the unavailability plot does not show the leaderless partition")
	}
}

// TestMonitorSamplesFromAFile: a history on disk keeps its monitor
// samples in a file of their own (a day's run samples each partition a
// million times or so), and they draw the same plots and make the same
// recovery table as samples held in memory: more than a block of them
// each, thinned as they are drawn, with windows that move the leader and
// shrink the ISR.
func TestMonitorSamplesFromAFile(t *testing.T) {
	h := &hist{}
	rng := rand.New(rand.NewPCG(3, 4))
	sec, epoch := 0.0, int32(0)
	for i := range 40_000 {
		sec += 0.01
		if i%5000 == 2500 {
			h.nemesis(sec, "start-kill", "kill", "b1")
		}
		if i%5000 == 4000 {
			h.nemesis(sec, "stop-kill", "kill", "b1")
		}
		leader := int32(1 + rng.IntN(3))
		if rng.IntN(40) == 0 {
			leader, epoch = -1, epoch+1
		}
		isr := []int32{1, 2, 3}[:1+rng.IntN(3)]
		h.monitor(sec, int32(i%2), leader, epoch, isr, int64(i)-int64(rng.IntN(100)))
	}
	dir := t.TempDir()
	writeRun(t, dir, testConfig(), historyBytes(t, h.ops), nil)
	d := LoadRun(dir)
	if d.tl.sampleArena.Mapped() == 0 {
		t.Fatal("no sample was kept in the samples' file")
	}
	fromFile := buildReport(d)
	held := buildReport(RunData{Config: testConfig(), Ops: h.ops})
	if len(held.Recovery) < 8 {
		t.Fatalf("%d recovery rows, want 8", len(held.Recovery))
	}
	for _, v := range []any{held.Plots, held.Recovery} {
		if b, _ := json.Marshal(v); len(b) < 1000 {
			t.Fatalf("too little to compare: %s", b)
		}
	}
	for i, pair := range [][2]any{{fromFile.Plots, held.Plots}, {fromFile.Recovery, held.Recovery}} {
		f, _ := json.Marshal(pair[0])
		m, _ := json.Marshal(pair[1])
		if !bytes.Equal(f, m) {
			t.Fatalf("%d: from the file %.2000s\nheld %.2000s", i, f, m)
		}
	}
}

// writeRun writes a run directory's files.
func writeRun(t testing.TB, dir string, tc *results.TestConfig, hist []byte, res *checker.Results) {
	t.Helper()
	if tc != nil {
		b, _ := json.Marshal(tc)
		os.WriteFile(filepath.Join(dir, results.TestFile), b, 0o644)
	}
	if hist != nil {
		os.WriteFile(filepath.Join(dir, results.HistoryFile), hist, 0o644)
	}
	if res != nil {
		b, _ := json.Marshal(res)
		os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o644)
	}
}

func historyBytes(t testing.TB, ops []history.Op) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if _, err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	b, _ := os.ReadFile(path)
	return b
}

func TestInterruptedRunStillRenders(t *testing.T) {
	h := &hist{}
	for i := range 20 {
		h.send(float64(i)*0.1, 0, 0, fmt.Sprintf("v%d", i), int64(i))
	}
	h.nemesis(0.5, "start-kill", "kill", "broker-1")
	data := historyBytes(t, h.ops)
	torn := append(data, []byte(`{"index":41,"time":2200000000,"process":0,"ty`)...)
	dir := t.TempDir()
	writeRun(t, dir, testConfig(), torn, nil)
	var steps []string
	if err := WriteRun(dir, func(s string) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	// A history this short is read before a line is shown.
	if len(steps) != 1 || steps[0] != "drawing the page" {
		t.Errorf("shown %q, want the page being drawn once the history is read", steps)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	checkPage(t, page)
	for _, want := range []string{"NO VERDICT", "torn line", fmt.Sprintf("the %d operations before it", len(h.ops)), "results.json could not be read", "not checked", "never stopped", "--out", "chaos report"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	// An empty directory: a report that says everything is missing.
	empty := t.TempDir()
	if err := WriteRun(empty, nil); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(empty, results.ReportFile))
	for _, want := range []string{"NO VERDICT", "test.json could not be read", "history.jsonl could not be read"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the empty run's report does not say %q", want)
		}
	}
	// The page keeps its shape: every element a browser test looks for.
	ids := checkPage(t, string(b))
	for _, id := range reportIDs {
		if !ids[id] {
			t.Errorf("the empty run's report has no %q", id)
		}
	}
	// A history damaged in the middle shows its prefix.
	bad := strings.Replace(string(data), `"type":"ok"`, `"type":"maybe"`, 3)
	writeRun(t, dir, nil, []byte(bad), nil)
	d := LoadRun(dir)
	if n := d.tl.len(); n == 0 || n >= len(h.ops) || !strings.Contains(strings.Join(d.Notes, " "), "damaged") {
		t.Fatalf("damaged history: %d ops, notes %q", n, d.Notes)
	}
}

func TestLinearizabilityLink(t *testing.T) {
	dir := t.TempDir()
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	tc := testConfig()
	res := check(h.ops, tc)
	for i := range res.Results {
		if res.Results[i].Name == checker.NonlinearizableSendName {
			res.Results[i].Valid, res.Results[i].Count, res.Results[i].Details = checker.Invalid, 1, []string{"t-0: send (op 1) …"}
		}
	}
	writeRun(t, dir, tc, historyBytes(t, h.ops), res)
	os.WriteFile(filepath.Join(dir, results.LinearizabilityFile), []byte("<html></html>"), 0o644)
	if err := WriteRun(dir, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if s := section(t, string(b), "anomaly-nonlinearizable-send"); !strings.Contains(s, `href="linearizability.html"`) || !strings.Contains(s, `href="#op-1"`) {
		t.Fatalf("the anomaly does not link to the visualization or its op: %s", s)
	}
}

// TestReport100kSize renders the benchmark's history: the page must stay
// within the 10 MB budget (its size, unlike its time, is deterministic).
func TestReport100kSize(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 100,000 operations")
	}
	d := synthReport(100_000, 1)
	if n := len(d.Ops); n < 100_000 || n > 105_000 {
		t.Fatalf("the synthetic history has %d operations", n)
	}
	page := render(t, d)
	if len(page) > 10<<20 {
		t.Fatalf("%d bytes, over the 10 MB budget", len(page))
	}
	lw, _ := d.Results.Get(checker.LostWriteName)
	if lw.Count < 100 || lw.Count > 2000 || !strings.Contains(page, fmt.Sprintf("%d acknowledged writes were lost", lw.Count)) {
		t.Fatalf("%d lost writes", lw.Count)
	}
	checkPage(t, page)
	t.Logf("%d operations, %d lost writes: %d bytes", len(d.Ops), lw.Count, len(page))
}

// TestLongRunStaysSmall: ten hours with a fault every ten seconds and a
// leader that flaps at every monitor sample. Every plot stays bounded:
// bands, rectangles and points are capped or merged per time column.
func TestLongRunStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a long history")
	}
	h := &hist{}
	const hours = 10
	for s := 0.0; s < hours*3600; s += 1 {
		h.send(s, 0, int32(int(s)%3), fmt.Sprintf("v%d", int(s)), int64(s)/3)
		if int(s)%5 == 0 {
			leader := int32(1)
			if int(s)%10 == 0 {
				leader = -1
			}
			for p := range int32(3) {
				h.monitor(s+0.1, p, leader, int32(s), []int32{1, 2}, int64(s)/3)
			}
		}
		if int(s)%20 == 0 {
			h.nemesis(s+0.2, "start-kill", "kill", "broker-1")
			h.nemesis(s+10, "stop-kill", "kill", "broker-1")
		}
	}
	v := buildReport(RunData{Config: testConfig(), Ops: h.ops})
	for _, p := range v.Plots {
		if len(p.Bands) > maxBands || len(p.Rects) > 3*(xBuckets+1)+maxLanes*maxSegments || len(p.Marks) > 6*len(scatterQuantiles)*xBuckets+maxLanes*maxSegments {
			t.Errorf("%s: %d bands, %d rects, %d marks", p.ID, len(p.Bands), len(p.Rects), len(p.Marks))
		}
		if !strings.Contains(p.Note, "shaded as one band") {
			t.Errorf("%s does not say it merges fault windows", p.ID)
		}
		// The bands cover the whole run, not just its start.
		if last := p.Bands[len(p.Bands)-1]; last.X+last.W < p.X1-5 {
			t.Errorf("%s: the last band ends at %g of %g", p.ID, last.X+last.W, p.X1)
		}
	}
	if len(v.Faults) != maxFaultRows || v.FaultsNote == "" || len(v.History) > maxHistoryRows+maxHistoryRows/2 {
		t.Errorf("%d fault rows (%q), %d history rows", len(v.Faults), v.FaultsNote, len(v.History))
	}
	page := render(t, RunData{Config: testConfig(), Ops: h.ops})
	checkPage(t, page)
	if len(page) > 10<<20 {
		t.Fatalf("%d bytes for %d operations", len(page), len(h.ops))
	}
	t.Logf("%d operations: %d bytes", len(h.ops), len(page))
	if out := os.Getenv("CHAOS_SAMPLE_LONG"); out != "" {
		os.WriteFile(out, []byte(page), 0o644)
	}
}

func TestManyPartitionsCapLanes(t *testing.T) {
	h := &hist{}
	for p := range int32(40) {
		h.send(float64(p)*0.01, 0, p, fmt.Sprintf("v%d", p), 0)
		h.monitor(float64(p)*0.01, p, 1, 0, []int32{1, 2, 3}, 1)
	}
	v := buildReport(RunData{Ops: h.ops})
	isr := v.Plots[2]
	if !strings.Contains(isr.Note, "first 24 of 40 partitions") || isr.H > plotTop+plotBottom+54*maxLanes+1 {
		t.Fatalf("isr plot: note %q, height %g", isr.Note, isr.H)
	}
}

// TestArbitraryHistoriesRender feeds the report histories no tool would
// write (unpaired completions, odd indexes and times, missing values):
// it must render them, never panic.
func TestArbitraryHistoriesRender(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info}
	fs := []string{history.Send, history.Poll, history.EndOffset, history.FinalRead, history.ReplicaRead, history.Monitor, "start-kill", "stop-kill", "heal", "start", "x"}
	for iter := range 200 {
		var ops []history.Op
		for i := range rng.IntN(400) {
			op := history.Op{Index: int64(i), Time: rng.Int64N(20e9) - 1e9, Process: rng.IntN(6) - 2, Type: types[rng.IntN(4)], F: fs[rng.IntN(len(fs))]}
			if iter%3 == 0 {
				op.Index = rng.Int64N(1000) - 10
			}
			if rng.IntN(5) > 0 {
				v := &history.Value{Topic: []string{"", "t", "u"}[rng.IntN(3)], Partition: int32(rng.IntN(4) - 1)}
				if rng.IntN(2) == 0 {
					v.Sample, v.FaultInfo = &history.Sample{}, &history.FaultInfo{}
					v.Offset, v.HW, v.Leader, v.Epoch = history.Int64(rng.Int64N(10)-1), history.Int64(rng.Int64N(10)-1), history.Int32(int32(rng.IntN(4)-1)), history.Int32(int32(rng.IntN(3)))
					v.ISR = []int32{1, 2}[:rng.IntN(3)%3%2+1]
					v.Records = []history.Record{{Offset: rng.Int64N(5), Value: "a"}}
					v.Value, v.Fault, v.Targets = "a", "kill", []string{"broker-1"}
				}
				op.Value = v
			}
			ops = append(ops, op)
		}
		var res *checker.Results
		if iter%2 == 0 {
			res = checker.Check(ops, checker.Config{Acks: -1}, checker.Options{SkipLinearizability: true})
		}
		tc := testConfig()
		tc.Schedule = results.Schedule{{Fault: "pause", Start: time.Second, End: 2 * time.Second}}
		page := render(t, RunData{Config: tc, Results: res, Ops: ops})
		checkPage(t, page)
	}
}

func TestReplayCommandPastesIntoAShell(t *testing.T) {
	tc := testConfig()
	tc.Command, tc.Seed = []string{`C:\build\chaos.exe`, "run", "--name", "it's a test", "--nemesis", ""}, 9
	if got, want := replayCommand(tc), `chaos.exe run --name 'it'\''s a test' --nemesis '' --seed 9`; got != want {
		t.Errorf("replay command %s, want %s", got, want)
	}
	tc.Command = []string{"/usr/bin/chaos", "run", "--seed=3"}
	if got, want := replayCommand(tc), "chaos run --seed=3"; got != want {
		t.Errorf("replay command %s, want %s (the recorded seed)", got, want)
	}
}

// TestFaultSendsCountedPerWindow: each fault window counts the sends that
// completed inside it, its ends included, by outcome, whatever the other
// windows (which may overlap in a foreign history).
func TestFaultSendsCountedPerWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []history.Type{history.OK, history.Info, history.Fail}
	h := &hist{}
	for i := range 300 {
		at := float64(i) * 0.01
		h.add(at, 0, history.Invoke, history.Send, &history.Value{Topic: "t", Value: fmt.Sprint(i)}, "")
		h.add(at+0.005, 0, types[rng.IntN(3)], history.Send, &history.Value{Topic: "t", Value: fmt.Sprint(i)}, "")
	}
	tl := newTimeline(h.ops, nil)
	for range 50 {
		a, b := rng.Int64N(3.2e9), rng.Int64N(3.2e9)
		tl.faults = append(tl.faults, faultWindow{Start: min(a, b), End: max(a, b)})
	}
	// Windows that end exactly on a completion, and one that is empty.
	tl.faults = append(tl.faults, faultWindow{Start: h.ops[1].Time, End: h.ops[5].Time}, faultWindow{Start: 5e9, End: 4e9})
	tl.countFaultSends()
	for _, f := range tl.faults {
		var want [3]int
		for _, op := range h.ops {
			if op.Type != history.Invoke && op.Time >= f.Start && op.Time <= f.End {
				want[typeSlot(op.Type)]++
			}
		}
		if f.sends != want {
			t.Fatalf("window %d to %d: %v, want %v", f.Start, f.End, f.sends, want)
		}
	}
}

// TestJudgedReportIsTheStoredOne: the report chaos run writes from what it
// just judged (the history in memory) is the page chaos report renders
// later from the stored files, byte for byte: read as a stream, with the
// operations shown in full read again. So is the page of a results.json
// written before it listed the lost writes (the report then finds them
// itself). The long history's page is an excerpt with downsampled plots.
func TestJudgedReportIsTheStoredOne(t *testing.T) {
	for _, n := range []int{2000, 30_000} {
		d := synthReport(n, 5)
		if lost, _ := d.Results.Get(checker.LostWriteName); (n > 2000 && lost.Count == 0) || len(d.Results.LostWrites) != lost.Count {
			t.Fatalf("%d ops: %d lost writes listed of %d", n, len(d.Results.LostWrites), lost.Count)
		}
		dir := t.TempDir()
		writeRun(t, dir, d.Config, historyBytes(t, d.Ops), d.Results)
		// What the judge holds is what it stored: the history as written.
		ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteJudgedRun(dir, *d.Config, d.Results, ops, nil); err != nil {
			t.Fatal(err)
		}
		judged, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
		stored := func() []byte {
			if err := WriteRun(dir, nil); err != nil {
				t.Fatal(err)
			}
			page, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
			return page
		}
		if page := stored(); len(judged) == 0 || !bytes.Equal(judged, page) {
			t.Fatalf("%d ops: the judged report (%d bytes) differs from the one rendered from the store (%d bytes)", n, len(judged), len(page))
		}
		old := *d.Results
		old.LostWrites = nil
		writeRun(t, dir, d.Config, historyBytes(t, d.Ops), &old)
		if page := stored(); !bytes.Equal(judged, page) {
			t.Fatalf("%d ops: the report of a results.json without its lost writes (%d bytes) differs (%d bytes)", n, len(page), len(judged))
		}
	}
}

// TestReportSaysWhatWasNotTested: a run whose faults never started, and a
// checker with no evidence, read as such in the report, never as a plain
// VALID or "not found".
func TestReportSaysWhatWasNotTested(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.send(1, 0, 0, "b", 1)
	h.final(2, 0, 2, []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}})
	tc := testConfig()
	tc.Nemesis = []string{"kill"}
	res := check(h.ops, tc)
	if res.Valid != checker.Unknown {
		t.Fatalf("verdict %s, want unknown", res.Valid)
	}
	page := render(t, RunData{Config: tc, Results: res, Ops: h.ops})
	for _, want := range []string{
		"No fault started, though kill was asked for",
		"fault kinds that ran", "never started",
		"not checked", // replica-divergence and the polls had no evidence
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	if strings.Contains(page, ">VALID<") {
		t.Error("the report reads VALID")
	}
}

// TestReportCountsWindowsPerKind: the fault table says how many windows
// of each kind ran, so that a kind run once does not read like one run
// throughout.
func TestReportCountsWindowsPerKind(t *testing.T) {
	res := &checker.Results{Valid: checker.Valid, Faults: []string{"kill", "pause"}, FaultWindows: map[string]int{"kill": 3, "pause": 1}}
	page := render(t, RunData{Config: &results.TestConfig{Nemesis: []string{"kill", "pause"}}, Results: res})
	for _, want := range []string{"kill (3 windows)", "pause (1 window)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
}

// TestOverlappingFaultsShareABand: faults that held at once (a composite
// window) are one band named by their kinds in order, not windows "too
// close together to draw apart".
func TestOverlappingFaultsShareABand(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.nemesis(2, "start-slow-follower", "slow-follower", "broker-2")
	h.nemesis(3, "start-kill-leader", "kill-leader", "broker-1")
	h.nemesis(5, "stop-kill-leader", "kill-leader", "broker-1")
	h.nemesis(5, "stop-slow-follower", "slow-follower", "broker-2")
	h.final(9.999, 0, 1, []history.Record{{Offset: 0, Value: "a"}})
	v := buildReport(RunData{Config: testConfig(), Ops: h.ops})
	p := v.Plots[0]
	if len(p.Bands) != 1 || p.Bands[0].Label != "slow-follower+kill-leader" || !strings.HasPrefix(p.Bands[0].Title, "overlapping: ") || p.Note != "" {
		t.Fatalf("bands %+v, note %q; want one band slow-follower+kill-leader", p.Bands, p.Note)
	}
}

// TestGuaranteesGiveEachReasonOnce: the guarantees table gives each of
// the model's reasons once (a later row that permits for the same
// reasons names the row that gave them), the anomalies below link to it
// rather than repeat it, and a check the configuration gives nothing to
// judge reads "not applicable", without a count, in the table and in
// the checks line.
func TestGuaranteesGiveEachReasonOnce(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	h.send(1, 0, 0, "b", 1)
	h.final(2, 0, 2, []history.Record{{Offset: 0, Value: "a"}})
	tc := testConfig()
	tc.Workload.Acks, tc.Cluster.MinInsyncReplicas = 1, 1
	res := check(h.ops, tc)
	if r, _ := res.Get(checker.LostWriteName); r.Count != 1 || !r.Expected {
		t.Fatalf("lost-write %+v, want one permitted loss", r)
	}
	if r, _ := res.Get(checker.AckBelowMinISRName); !r.NotApplicable {
		t.Fatalf("ack-below-min-isr under acks=1: %+v, want not applicable", r)
	}
	page := render(t, RunData{Config: tc, Results: res, Ops: h.ops})
	checkPage(t, page)
	// acks=1's reason for losing an acknowledged write.
	reason := "the leader acknowledges before followers fetch"
	if n := strings.Count(page, reason); n != 1 {
		t.Errorf("the page gives the reason %q %d times, want once", reason, n)
	}
	g := section(t, page, "guarantees")
	for _, want := range []string{
		`id="g-lost-write"`, `<span class="rk">permitted:</span> as for <a href="#g-lost-write">lost-write</a>.`,
		`the reason given for <a href="#g-lost-write">lost-write</a>`,
	} {
		if !strings.Contains(g, want) {
			t.Errorf("the guarantees table lacks %s", want)
		}
	}
	na := g[strings.Index(g, `id="g-ack-below-min-isr"`):]
	na = na[:strings.Index(na, "</tr>")]
	for _, want := range []string{`<span class="pill na">not applicable</span>`, `<span class="pill na">n/a</span>`, `&ndash;`} {
		if !strings.Contains(na, want) {
			t.Errorf("the ack-below-min-isr row lacks %s:\n%s", want, na)
		}
	}
	if !strings.Contains(g, `<tr class="row-na" id="g-ack-below-min-isr">`) {
		t.Error("the not applicable row is not marked")
	}
	v := section(t, page, "verdict")
	if !strings.Contains(v, `<span class="pill na">n/a</span> Not applicable to this configuration`) || !strings.Contains(v, "ack-below-min-isr (acks=1") {
		t.Errorf("the checks line does not say what is not applicable:\n%s", v)
	}
	if a := section(t, page, "anomaly-lost-write"); !strings.Contains(a, `<a href="#g-lost-write">the guarantees table</a>`) {
		t.Errorf("the lost-write anomaly does not link to its reasons:\n%s", a)
	}
}

// TestUnackedRunSaysWhatWasObserved: a run under acks=0 says that
// nothing was acknowledged and what became of the records read, never
// that a promise was kept.
func TestUnackedRunSaysWhatWasObserved(t *testing.T) {
	h := &hist{}
	kill := &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill", Targets: []string{"b1"}, KilledBrokers: []int32{1}}}
	h.add(0.5, history.NemesisProcess, history.Invoke, "start-kill", kill, "")
	h.add(0.6, history.NemesisProcess, history.Info, "start-kill", kill, "")
	h.add(0.9, history.NemesisProcess, history.Invoke, "stop-kill", kill, "")
	h.add(0.95, history.NemesisProcess, history.Info, "stop-kill", kill, "")
	h.add(1, 0, history.Invoke, history.Send, &history.Value{Topic: "t", Value: "a"}, "")
	h.add(1.001, 0, history.Info, history.Send, &history.Value{Topic: "t", Value: "a"}, "")
	h.add(1.5, 1, history.Invoke, history.Poll, &history.Value{Topic: "t"}, "")
	h.add(1.501, 1, history.OK, history.Poll, &history.Value{Topic: "t", Records: []history.Record{{Offset: 0, Value: "a"}}}, "")
	h.final(2, 0, 1, []history.Record{{Offset: 0, Value: "a"}})
	tc := testConfig()
	tc.Workload.Acks, tc.Nemesis = 0, []string{"kill"}
	res := check(h.ops, tc)
	page := render(t, RunData{Config: tc, Results: res, Ops: h.ops})
	v := section(t, page, "verdict")
	for _, want := range []string{`<span class="pill obs-unacked">`, "Nothing was acknowledged (acks=0)", "no record a consumer read was lost afterwards"} {
		if !strings.Contains(v, want) {
			t.Errorf("the verdict lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "obs-kept") {
		t.Errorf("an acks=0 run reads as a promise kept:\n%s", v)
	}
}

// TestEveryAnomalyHasAMeaning: the guarantees table explains every
// anomaly the checkers report.
func TestEveryAnomalyHasAMeaning(t *testing.T) {
	for _, name := range checker.Names() {
		if checker.Meaning(name) == "" {
			t.Errorf("%s has no meaning in the guarantees table", name)
		}
	}
}

// TestLivenessShown: the report shows the liveness bound, the heal it runs
// from and each partition's time to converge, a partition that took
// longer than the bound (or never converged) marked; a run judged without
// a bound shows no such table.
func TestLivenessShown(t *testing.T) {
	h := &hist{}
	h.nemesis(1, "start-kill", "kill", "broker-1")
	h.nemesis(2, "stop-kill", "kill", "restart broker-1")
	h.monitor(2.5, 0, 1, 1, []int32{1, 2, 3}, 0)
	h.monitor(2.5, 1, 1, 1, []int32{1, 2}, 0)
	h.monitor(20, 1, 1, 1, []int32{1, 2}, 0)
	tc := testConfig()
	tc.LivenessBound = 10 * time.Second
	page := render(t, RunData{Config: tc, Results: check(h.ops, tc), Ops: h.ops})
	checkPage(t, page)
	s := section(t, page, "liveness")
	for _, want := range []string{"10s", "2.000 s", "<td>t-0</td><td class=\"num\">49", "<td>t-1</td><td class=\"num bad\">never seen converged</td>"} {
		if !strings.Contains(s, want) {
			t.Errorf("the liveness section lacks %q:\n%s", want, s)
		}
	}
	tc.LivenessBound = 0
	if page := render(t, RunData{Config: tc, Results: check(h.ops, tc), Ops: h.ops}); strings.Contains(page, `id="liveness"`) {
		t.Error("a liveness section without a bound")
	}
}

// TestTimelineManyFunctions: a history of more function names than the
// timeline's ids hold names its first ones, and the rest as what they
// are, never as another function.
func TestTimelineManyFunctions(t *testing.T) {
	const n = 70_000
	ops := make([]history.Op, n)
	for i := range ops {
		ops[i] = history.Op{Index: int64(i), Time: int64(i), Process: history.ClusterProcess, Type: history.Info, F: fmt.Sprintf("f%d", i)}
	}
	tl := newTimeline(ops, nil)
	for _, i := range []int{0, 1000, 65_533} {
		if f := tl.f(tl.op(i)); f != ops[i].F {
			t.Fatalf("op %d is named %q, want %q", i, f, ops[i].F)
		}
	}
	for _, i := range []int{65_534, 65_535, n - 1} {
		if f := tl.f(tl.op(i)); strings.HasPrefix(f, "f") {
			t.Fatalf("op %d (%s) is named %q", i, ops[i].F, f)
		}
	}
}

// TestTimelineForeignIndexes: a history whose ops are numbered otherwise
// than by their place (a filtered or foreign one) keeps each op's own
// index, which the page shows and links by, and finds each op by it.
func TestTimelineForeignIndexes(t *testing.T) {
	ops := make([]history.Op, 200)
	for i := range ops {
		ops[i] = history.Op{Index: int64(i), Time: int64(i), Process: i % 3, Type: history.Invoke, F: history.Send}
		if i%2 == 1 {
			ops[i].Type = history.OK
		}
		if i >= 50 {
			ops[i].Index = 1000 + 3*int64(i)
		}
	}
	tl := newTimeline(ops, nil)
	for i := range ops {
		if got := tl.index(i); got != ops[i].Index {
			t.Fatalf("op at %d: index %d, want %d", i, got, ops[i].Index)
		}
		if p := tl.pos(ops[i].Index); p != i {
			t.Fatalf("index %d: at %d, want %d", ops[i].Index, p, i)
		}
	}
	if page := render(t, RunData{Config: testConfig(), Ops: ops, Results: check(ops, testConfig())}); !strings.Contains(page, ">1597<") {
		t.Fatalf("the page does not show the last op's index 1597")
	}
}

// TestLongFinalReadSummarised: a final read longer than the reader's
// chunk (its records streamed as they are decoded) is summarised in the
// page read from the store as in the one rendered from the operations
// held, by its count and first and last offsets, and the write it lost
// is found from the store too (results.json without its lost writes).
func TestLongFinalReadSummarised(t *testing.T) {
	h := &hist{}
	const n = 60_000 // a final read of about 2 MB
	var recs []history.Record
	for i := range n {
		v := fmt.Sprintf("v%d", i)
		h.send(float64(i)*0.001, 0, 0, v, int64(i))
		if i != 777 {
			recs = append(recs, history.Record{Offset: int64(i), Value: v})
		}
	}
	h.final(n*0.001+1, 0, n, recs)
	tc := testConfig()
	res := check(h.ops, tc)
	if lost, _ := res.Get(checker.LostWriteName); lost.Count != 1 {
		t.Fatalf("%d lost writes", lost.Count)
	}
	dir := t.TempDir()
	old := *res
	old.LostWrites = nil
	writeRun(t, dir, tc, historyBytes(t, h.ops), &old)
	ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJudgedRun(dir, *tc, res, ops, nil); err != nil {
		t.Fatal(err)
	}
	judged, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err := WriteRun(dir, nil); err != nil {
		t.Fatal(err)
	}
	stored, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
	want := fmt.Sprintf("%d records, offsets 0–%d", n-1, n-1)
	if !bytes.Contains(judged, []byte(want)) {
		t.Fatalf("the page does not summarise the final read as %q", want)
	}
	if !bytes.Equal(judged, stored) {
		t.Fatalf("the page from the store (%d bytes) differs from the judged one (%d bytes)", len(stored), len(judged))
	}
}

// TestRecoveryOfAHistoryOutOfOrder: a history whose times do not run with
// its ops (a foreign one: a send acknowledged before the window it counts
// for is recorded) gets, from its file and held in memory, the table made
// from every acknowledgement held, which reading it once cannot make.
func TestRecoveryOfAHistoryOutOfOrder(t *testing.T) {
	h := &hist{}
	h.monitor(0, 0, 1, 1, []int32{1, 2, 3}, -1)
	h.send(0.5, 0, 0, "a", 0)
	// Invoked at 2 s and acknowledged at 2.001 s, recorded before the
	// kill that started at 1 s.
	h.send(2, 1, 0, "b", 1)
	h.nemesis(1, "start-kill", "kill", "n1")
	h.monitor(1.5, 0, 2, 2, []int32{2, 3}, -1)
	h.nemesis(3, "stop-kill", "kill")
	h.monitor(3.5, 0, 2, 2, []int32{1, 2, 3}, -1)
	want := results.Recoveries(h.ops)
	if len(want) != 1 || want[0].FirstAck == nil || time.Duration(*want[0].FirstAck) != 1001*time.Millisecond {
		t.Fatalf("the table held whole: %+v", want)
	}
	dir := t.TempDir()
	writeRun(t, dir, testConfig(), historyBytes(t, h.ops), nil)
	for name, tl := range map[string]*timeline{"from the file": LoadRun(dir).tl, "held": newTimeline(h.ops, nil)} {
		if !reflect.DeepEqual(tl.recovery, want) {
			t.Errorf("%s: %+v, want %+v", name, tl.recovery, want)
		}
	}
}
