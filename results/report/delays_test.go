package report

import (
	"strings"
	"testing"
)

// The report says how delays were made: a latency window on netem or a
// delay line is latency, on an HTB rate a starved link.
func TestReportNamesTheDelayMechanism(t *testing.T) {
	for mech, want := range map[string]string{
		"userspace": "userspace delay line",
		"netem":     "netem",
		"proxy":     "userspace delay line",
		"htb-rate":  "starved",
		"":          "no network faults",
	} {
		d := synthReport(200, 1)
		d.Config.Cluster.DelayMechanism = mech
		if s := section(t, render(t, d), "config"); !strings.Contains(s, "network delays") || !strings.Contains(s, want) {
			t.Errorf("delay mechanism %q: the config section does not say %q", mech, want)
		}
	}
}
