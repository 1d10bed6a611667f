package checker

import (
	"fmt"
	"strings"

	"github.com/chaos-isr/chaos/history"
)

// CrashName is the anomaly of a node that died on its own.
const CrashName = "crash"

// Crash finds the nodes of the cluster that died without the nemesis (or
// the tester) killing or stopping them: each crash operation the history
// records (history.Crash, by history.ClusterProcess) is an instance, whose
// detail names the node, when the runtime noticed it and how it ended (its
// exit status, its panic message). A crash is a bug of the system under
// test in every configuration (Jepsen reports crashes as findings): no
// fault, election or acks setting permits a node to die of itself.
//
// What a crash did to the data is judged by the other checkers, with the
// crash counted as the fault it physically is (a kill of that node: see
// faultLog), so that a record a crashed broker lost is not blamed twice;
// and a crash after the last heal, which no heal undid, leaves the
// liveness checks not applicable, as a kill that was never healed would:
// the cluster was not whole again.
//
// A history that records no crash operation is judged to have had none:
// the runtimes that start the cluster watch its processes (chaos run's
// local and docker runtimes, chaos sim). The external runtime does not,
// and says so (Config.Unsupported).
func Crash(h *History) Result {
	f := h.newFinding(CrashName)
	for _, pos := range h.crashes {
		op := h.ops.op(pos)
		f.add(Unexplained, crashDetail(op), op.Index)
	}
	return f.result()
}

// crashDetail describes a crash operation: "broker-2: exit status 2:
// panic: ... (crashed at 12.345s, op 812)". The text before " (crashed at"
// is what the verdict line shows (CrashHeadline).
func crashDetail(op *history.Op) string {
	return fmt.Sprintf("%s (crashed at %s, op %d)", crashWhat(op.Value), secs(op.Time), op.Index)
}

// crashNode names the node a crash operation's value names.
func crashNode(v *history.Value) string {
	switch c := v.Crashed(); {
	case c != nil && c.Node != "":
		return c.Node
	case v != nil && v.Broker != nil:
		return fmt.Sprintf("broker %d", *v.Broker)
	}
	return "a node"
}

// crashWhat is the node and how it died, as far as the operation says.
func crashWhat(v *history.Value) string {
	node := crashNode(v)
	var how []string
	if c := v.Crashed(); c != nil {
		if c.Exit != "" {
			how = append(how, c.Exit)
		}
		if c.Panic != "" {
			how = append(how, "panic: "+firstLine(c.Panic))
		}
	}
	if len(how) == 0 {
		how = append(how, "died on its own (no exit status or panic message recorded)")
	}
	return node + ": " + strings.Join(how, ": ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// CrashHeadline is what a crash result's first instance says of the node
// and how it died, for a verdict line ("broker-2: panic: runtime error:
// ..."), with the number of further crashes; "" if r found none.
func CrashHeadline(r Result) string {
	if r.Name != CrashName || r.Count == 0 || len(r.Details) == 0 {
		return ""
	}
	what, _, _ := strings.Cut(r.Details[0], " (crashed at ")
	if r.Count > 1 {
		what += fmt.Sprintf("; %d more", r.Count-1)
	}
	return what
}
