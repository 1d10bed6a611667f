package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// TestCrashShown: a run in which a broker crashed shows it where a reader
// looks first: the verdict line names the node and its panic, and the
// crash anomaly of the page lists the node, the time, how it died and the
// end of its log.
func TestCrashShown(t *testing.T) {
	h := &hist{}
	h.send(1, 0, 0, "a", 0)
	v := &history.Value{Broker: history.Int32(2), CrashInfo: &history.CrashInfo{Node: "broker-2", Exit: "exit status 2",
		Panic: "runtime error: index out of range [1] with length 1",
		Log:   "panic: runtime error: index out of range [1] with length 1\n\ngoroutine 41 [running]:\ncore.droppedEpochs(...)"}}
	h.add(2.5, history.ClusterProcess, history.Invoke, history.Crash, v, "")
	h.add(2.5, history.ClusterProcess, history.Info, history.Crash, v, "")
	h.nemesis(3, "heal", "all", "restart broker-2 (crashed)")
	h.final(4, 0, 1, []history.Record{{Offset: 0, Value: "a"}})
	tc := testConfig()
	res := check(h.ops, tc)
	if res.Valid != checker.Invalid {
		t.Fatalf("verdict %s", res.Valid)
	}

	var out bytes.Buffer
	WriteVerdict(&out, res)
	if !strings.Contains(out.String(), "verdict: INVALID: crash (broker-2: exit status 2: panic: runtime error: index out of range [1] with length 1)\n") {
		t.Errorf("the verdict:\n%s", out.String())
	}

	page := html.UnescapeString(section(t, render(t, RunData{Dir: t.TempDir(), Config: tc, Results: res, Ops: h.ops}), "anomaly-crash"))
	for _, want := range []string{"broker-2 crashed at 2.500 s: exit status 2: panic: runtime error: index out of range", "the last lines of its log", "goroutine 41 [running]:"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in the crash anomaly:\n%s", want, page)
		}
	}
}
