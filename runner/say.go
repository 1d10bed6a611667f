package runner

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
)

// Say prints how a run ended, as chaos run and chaos sim do, and returns
// its exit code: on out its verdict and where its results and report are;
// on errOut, when it ended without a verdict (interrupted, or err, which
// it returns), where its report is or why there is none.
func (o Outcome) Say(out, errOut io.Writer, err error) (int, error) {
	switch {
	case o.Interrupted:
		o.sayReport(errOut)
		return ExitInterrupted, nil
	case err != nil:
		if o.Dir != "" && (o.Report != "" || o.ReportErr != "") {
			o.sayReport(errOut)
		}
		return 0, err
	}
	report.WriteVerdict(out, o.Results)
	fmt.Fprintf(out, "results: %s\n", filepath.Join(o.Dir, results.ResultsFile))
	o.sayReport(out)
	return o.ExitCode(), nil
}

// sayReport says where the run's report is, or why it is not there.
func (o Outcome) sayReport(w io.Writer) {
	if o.ReportErr != "" {
		fmt.Fprintf(w, "report: not written: %s\n", o.ReportErr)
		return
	}
	if o.Report != "" {
		fmt.Fprintf(w, "report: %s\n", o.Report)
	}
}

// SayBugs says which bugs a run plants, if any: its verdict is about the
// tester's power to catch them, not about the broker.
func SayBugs(out io.Writer, bugs []string) {
	if len(bugs) > 0 {
		fmt.Fprintf(out, "planted bugs: %s (on purpose; chaos bugs describes them)\n", strings.Join(bugs, ", "))
	}
}

// Progress calls show once a second with a line saying how the workload
// does: elapsed time, throughput, outcomes, and the fault window open (its
// description), if any; every fifth second it calls print instead, for a
// line worth keeping where lines are not rewritten (a log). The returned
// stop ends the calls and returns once the last has.
func (s *Status) Progress(show, print func(line string)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last Stats
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st := s.Stats()
			line := fmt.Sprintf("[%3ds/%ds] %5d ops/s  ok %d  fail %d  info %d",
				int(s.Since().Seconds()), int(s.Limit.Seconds()), st.OK+st.Fail+st.Info-last.OK-last.Fail-last.Info, st.OK, st.Fail, st.Info)
			if win, open := s.Fault(); open {
				line += "  | " + win.Status(time.Now())
			}
			last = st
			if n%5 == 0 {
				print(line)
			} else {
				show(line)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// JudgingLine is an Options.Judging that shows how far a run's judge has
// come on one rewritten line of w, where w is a terminal and not quiet;
// nil (nothing shown) elsewhere: a log gets the verdict, which follows.
func JudgingLine(w io.Writer, quiet bool) func(step string) {
	line := statusline.New(w)
	if quiet || !line.TTY {
		return nil
	}
	return line.Show
}
