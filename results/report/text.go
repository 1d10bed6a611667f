package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/chaos-isr/chaos/checker"
)

// WriteVerdict writes the results as chaos run and chaos check print them:
// the configuration judged and the faults that ran, one line per anomaly
// (RESULT, COUNT with the forbidden ones, PERMITTED yes/no/partly, example
// operations), the first details of each anomaly found or not judged, the
// history's problems and the notes, and the verdict line.
func WriteVerdict(out io.Writer, res *checker.Results) {
	cfg := res.Config
	ran := ""
	switch {
	case len(res.Faults) > 0 && len(res.FaultsNotStarted) > 0:
		ran = fmt.Sprintf(" (ran: %s; never started: %s)", strings.Join(res.Faults, ", "), strings.Join(res.FaultsNotStarted, ", "))
	case len(res.FaultsNotStarted) > 0:
		ran = fmt.Sprintf(" (never started: %s)", strings.Join(res.FaultsNotStarted, ", "))
	case len(res.Faults) > 0:
		ran = fmt.Sprintf(" (%s)", strings.Join(res.Faults, ", "))
	}
	fmt.Fprintf(out, "\nguarantees judged for acks=%d min.insync.replicas=%d %s election, faults %s%s\n",
		cfg.Acks, cfg.MinInsyncReplicas, cmp.Or(cfg.Election, "clean"), res.FaultClass, ran)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ANOMALY\tRESULT\tCOUNT\tPERMITTED\tEXAMPLE OPS")
	for _, r := range res.Results {
		result := map[checker.Validity]string{checker.Valid: "none", checker.Invalid: "FOUND", checker.Unknown: "unknown"}[r.Valid]
		switch {
		case r.NotApplicable:
			result = "n/a"
		case r.NotChecked != "" && r.Valid == checker.Unknown:
			result = "not checked"
		}
		count := fmt.Sprint(r.Count)
		if r.Forbidden > 0 && r.Forbidden < r.Count {
			count = fmt.Sprintf("%d (%d forbidden)", r.Count, r.Forbidden)
		}
		var ex []string
		for _, e := range r.Examples {
			ex = append(ex, fmt.Sprint(e))
		}
		stance := r.Stance()
		if r.NotApplicable {
			stance = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, result, count, stance, strings.Join(ex, " "))
	}
	tw.Flush()
	for _, r := range res.Results {
		if r.Valid == checker.Valid || len(r.Details) == 0 {
			continue
		}
		tag := "unexpected"
		switch {
		case r.NotApplicable:
			tag = "not applicable to this configuration"
		case r.Unsupported:
			tag = "not checked: the cluster cannot support it"
		case r.NotChecked != "" && r.Valid == checker.Unknown:
			tag = "not checked: evidence missing"
		case r.Valid == checker.Unknown:
			tag = "unknown"
		case r.Forbidden == 0 && r.Expected:
			tag = "expected"
		case r.Forbidden == 0:
			tag = "cause undecided"
		}
		fmt.Fprintf(out, "%s (%s):\n", r.Name, tag)
		for _, d := range r.Details[:min(3, len(r.Details))] {
			fmt.Fprintf(out, "  %s\n", d)
		}
		for _, a := range r.Artifacts {
			fmt.Fprintf(out, "  see %s\n", a)
		}
	}
	for _, p := range res.Problems[:min(3, len(res.Problems))] {
		fmt.Fprintf(out, "history problem: %s\n", p)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	switch res.Valid {
	case checker.Valid:
		fmt.Fprintf(out, "verdict: VALID")
	case checker.Invalid:
		fmt.Fprintf(out, "verdict: INVALID: %s", strings.Join(unexpectedNamed(res), ", "))
	default:
		var open []string
		for _, r := range res.Results {
			if r.Valid != checker.Valid && !r.Expected && r.Forbidden == 0 && !r.Unsupported && !r.NotApplicable {
				open = append(open, r.Name)
			}
		}
		notes := verdictNotes(res)
		fmt.Fprintf(out, "verdict: UNKNOWN")
		switch {
		case res.Config.Stopped != "":
			fmt.Fprintf(out, ": %s", res.Config.Stopped)
		case len(res.Faults) == 0 && len(res.FaultsNotStarted) > 0:
			fmt.Fprintf(out, ": no fault started (%s was asked for)", strings.Join(res.FaultsNotStarted, ", "))
		case len(open) > 0:
			fmt.Fprintf(out, ": could not judge %s", strings.Join(open, ", "))
		case len(notes) > 0:
			fmt.Fprintf(out, ": %s", notes[0])
		}
	}
	// A verdict read alone must not pass for one on every check.
	if un := unsupported(res); len(un) > 0 {
		names := make([]string, len(un))
		for i, r := range un {
			names[i] = r.Name
		}
		fmt.Fprintf(out, " (not checked: %s: the cluster cannot support %s)", strings.Join(names, ", "), map[bool]string{true: "it", false: "them"}[len(un) == 1])
	}
	if w := weakened(res); len(w) > 0 {
		fmt.Fprintf(out, " (weakened: %s)", strings.Join(w, "; "))
	}
	if len(res.Expected) > 0 {
		fmt.Fprintf(out, " (permitted anomalies seen: %s)", strings.Join(res.Expected, ", "))
	}
	fmt.Fprintln(out)
}

// weakened names the fault kinds that ran weaker than documented, each
// with what it lacked: a verdict read alone must not pass for one of the
// faults as documented.
func weakened(res *checker.Results) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(res.Weakened)) {
		out = append(out, k+" "+res.Weakened[k])
	}
	return out
}

// unexpectedNamed are the unexpected anomalies as the verdict line names
// them: a crash with the node and how it died, "crash (broker-2: panic:
// ...)", which is the finding itself.
func unexpectedNamed(res *checker.Results) []string {
	out := slices.Clone(res.Unexpected)
	for i, name := range out {
		if r, ok := res.Get(name); ok {
			if h := checker.CrashHeadline(r); h != "" {
				out[i] = fmt.Sprintf("%s (%s)", name, h)
			}
		}
	}
	return out
}
