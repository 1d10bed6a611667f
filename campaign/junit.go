package campaign

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
)

// JUnit XML, in the shape Jenkins, GitLab and GitHub's test reporters
// read: one testsuite per cell, one testcase per run. An invalid run is a
// <failure> (the system broke a promise); an error and an unknown verdict
// are <error>s (no verdict was reached: JUnit's meaning of error, and not
// <skipped>, which dashboards show as green); an interrupted run, and one
// never started, is <skipped>. In a cell that plants bugs the roles turn
// round: a run that caught them passes, and one that did not (valid or
// unknown) is the <failure>.
type junitTestsuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []junitTestsuite `xml:"testsuite"`
}

type junitTestsuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitTestcase `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	// Properties hold the command that replays the run (as the test
	// reporters that read a testcase's properties show it); system-out
	// says it too, for those that show only that.
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitProblem   `xml:"failure,omitempty"`
	Error      *junitProblem   `xml:"error,omitempty"`
	Skipped    *junitProblem   `xml:"skipped,omitempty"`
	SystemOut  *junitText      `xml:"system-out,omitempty"`
}

// Texts are CDATA so that their lines stay lines for a human reading the
// file (chardata would write every newline as &#xA;).
type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

func junitReport(rec *results.Campaign) junitTestsuites {
	ts := junitTestsuites{Name: "chaos campaign seed " + strconv.FormatUint(rec.Seed, 10)}
	var total float64
	for _, c := range rec.Cells {
		s := junitTestsuite{Name: c.Name, Properties: []junitProperty{
			{"label", c.Label}, {"acks", strconv.Itoa(c.Acks)}, {"min.insync.replicas", strconv.Itoa(c.MinInsyncReplicas)},
			{"election", c.Election}, {"nemesis", c.Nemesis}, {"prediction", c.Prediction},
		}}
		var secs float64
		for _, r := range c.Runs {
			tc := junitTestcase{Name: fmt.Sprintf("run %d", r.Run), Classname: c.Name, Time: fmt.Sprintf("%.3f", r.Seconds)}
			if s.Timestamp == "" {
				s.Timestamp = r.Start.Format("2006-01-02T15:04:05")
			}
			out := fmt.Sprintf("seed %d\n", r.Seed)
			if replay := ReplayCommand(c, r); replay != "" {
				// The name stays "run N", which dashboards track a test
				// by; the seed and the command are the run's.
				tc.Properties = []junitProperty{{"seed", strconv.FormatUint(r.Seed, 10)}, {"replay", replay}}
				out += "replay: " + replay + "\n"
			}
			if r.Dir != "" {
				out += "run directory " + filepath.Join(rec.Store, r.Dir) + "\n"
			}
			if len(r.Expected) > 0 {
				out += "permitted anomalies seen: " + strings.Join(r.Expected, ", ") + "\n"
			}
			if len(r.NotChecked) > 0 {
				// A passing testcase must not read as a pass on every
				// check; said here, not in its name, which dashboards
				// track a test by.
				out += "not checked (the cluster cannot support it): " + strings.Join(r.NotChecked, ", ") + "\n"
			}
			tc.SystemOut = &junitText{out}
			planted := len(c.Bugs) > 0
			switch {
			case planted && r.Verdict == VerdictInvalid:
				tc.SystemOut.Text += "caught " + strings.Join(c.Bugs, ", ") + " by: " + strings.Join(r.Unexpected, ", ") + "\n"
			case planted && (r.Verdict == VerdictValid || r.Verdict == VerdictUnknown):
				tc.Failure = &junitProblem{Type: "not-caught", Message: "planted bug not caught: " + strings.Join(c.Bugs, ", ") + " (verdict " + r.Verdict + ")"}
				s.Failures++
			case r.Verdict == VerdictInvalid:
				tc.Failure = &junitProblem{Type: "invalid", Message: "unexpected anomalies: " + strings.Join(r.Unexpected, ", "),
					Text: anomalyWhy(c, r.Unexpected)}
				s.Failures++
			case r.Verdict == VerdictUnknown:
				tc.Error = &junitProblem{Type: "unknown", Message: "no verdict: checkers could not judge " + strings.Join(r.Unknown, ", ")}
				s.Errors++
			case r.Verdict == VerdictError:
				tc.Error = &junitProblem{Type: "error", Message: r.Error}
				s.Errors++
			case r.Verdict == VerdictInterrupted:
				tc.Skipped = &junitProblem{Message: "interrupted"}
				s.Skipped++
			}
			secs += r.Seconds
			s.Cases = append(s.Cases, tc)
		}
		for r := len(c.Runs) + 1; r <= c.Summary.Planned; r++ {
			why := "not run: the campaign was interrupted"
			if c.Refused != "" {
				why = "not run: chaos run refused the cell"
			}
			s.Cases = append(s.Cases, junitTestcase{Name: fmt.Sprintf("run %d", r), Classname: c.Name, Time: "0", Skipped: &junitProblem{Message: why}})
			s.Skipped++
		}
		s.Tests = len(s.Cases)
		s.Time = fmt.Sprintf("%.3f", secs)
		total += secs
		ts.Tests += s.Tests
		ts.Failures += s.Failures
		ts.Errors += s.Errors
		ts.Skipped += s.Skipped
		ts.Suites = append(ts.Suites, s)
	}
	ts.Time = fmt.Sprintf("%.3f", total)
	return ts
}

func anomalyWhy(c *results.CampaignCell, names []string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s is forbidden here: %s\n", n, c.Permitted[n].Why)
	}
	return b.String()
}

// WriteJUnit writes the campaign as JUnit XML to path, atomically.
func WriteJUnit(path string, rec *results.Campaign) error {
	data, err := xml.MarshalIndent(junitReport(rec), "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append([]byte(xml.Header), append(data, '\n')...))
}

// ReplayCommand is the command that replays a run of a cell, as its
// test.json records it but for the program's path: chaos, the cell's
// args (chaos run's, or chaos sim's for a simulated run) and the run's
// seed. Empty for a record without the cell's args.
func ReplayCommand(c *results.CampaignCell, r results.CampaignRun) string {
	if len(c.Args) == 0 {
		return ""
	}
	return report.ShellJoin(append(append([]string{"chaos"}, c.Args...), "--seed", strconv.FormatUint(r.Seed, 10)))
}
