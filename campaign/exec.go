package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/runner"
)

// Executor runs one spec for a campaign and reports how it ended.
//
// Exec runs spec with its output in the file logPath (which it creates),
// until it ends. The end of ctx asks the run to stop in order (heal, stop
// the cluster, keep what was recorded), the way an interrupted chaos run
// does; kill closing asks it to stop now. It returns the run's outcome and
// its exit code as chaos run's (0 valid, 1 invalid, 2 unknown, 3 no
// verdict, 130 interrupted; -1 when it has none), and an error when the
// run could not be carried out or its outcome not learnt (the outcome
// then holds what is known: a run directory, say).
type Executor interface {
	Exec(ctx context.Context, spec runner.Spec, logPath string, kill <-chan struct{}) (runner.Outcome, int, error)
}

// killGrace is how long a run has to end once it was killed.
const killGrace = 30 * time.Second

// InProcess runs each spec in this process: no process to start, but a
// real run that crashes or hangs takes the campaign with it, and its
// brokers are the campaign's children.
//
// It is also how a campaign runs in simulation: with Run set to sim.Run
// (which chaos campaign --runtime sim does; this package cannot import
// the simulation, which alone may hold the in-memory cluster), every run
// is a simulated one. A child process would buy a simulated run nothing:
// it starts no process, opens no socket and takes no signal, and its
// result depends on its seed alone, not on what else the process does; so
// runs can go in parallel (Options.Parallel), and the one failure a child
// would contain, a panic, is recovered here for real and simulated runs
// alike: it ends that run as an error, with the stack in its log.
type InProcess struct {
	// Version is the version of chaos test.json records.
	Version string
	// Run runs one spec; nil: runner.Run. Of the options it is given,
	// a simulation uses Version, Started and Log.
	Run func(context.Context, runner.Spec, runner.Options) (runner.Outcome, error)
}

// Exec implements Executor. The log gets what chaos run would print of
// the run's start and progress, and its end. kill closing kills a real
// run's cluster and ends the context of either kind of run.
func (e InProcess) Exec(ctx context.Context, spec runner.Spec, logPath string, kill <-chan struct{}) (runner.Outcome, int, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return runner.Outcome{}, -1, err
	}
	defer f.Close()
	run := e.Run
	if run == nil {
		run = runner.Run
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := &lockedWriter{w: f}
	var mu sync.Mutex
	var abort func()
	// started is what the run said of itself when it started: after a
	// panic, the run directory still holds what it recorded.
	var started runner.Outcome
	type result struct {
		o   runner.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(log, "panic: %v\n\n%s\n", p, debug.Stack())
				mu.Lock()
				o := started
				mu.Unlock()
				done <- result{o, fmt.Errorf("the run panicked: %v", p)}
			}
		}()
		o, err := run(ctx, spec, runner.Options{
			Version: e.Version,
			Started: func(dir string, seed uint64, clusterID string) {
				mu.Lock()
				started = runner.Outcome{Dir: dir, Seed: seed, ClusterID: clusterID}
				mu.Unlock()
				fmt.Fprintf(log, "run %s\nseed %d\ncluster id %s\n", dir, seed, clusterID)
			},
			ClusterUp: func(a func()) {
				mu.Lock()
				abort = a
				mu.Unlock()
			},
			Log: func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) },
		})
		done <- result{o, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-kill:
		mu.Lock()
		a := abort
		mu.Unlock()
		if a != nil {
			fmt.Fprintln(log, "killed: killing the cluster now")
			a()
		}
		cancel()
		select {
		case r = <-done:
		case <-time.After(killGrace):
			// Nothing more can be done in this process: the nodes are
			// dead, the run's goroutines are left to end on their own.
			return runner.Outcome{}, -1, fmt.Errorf("the run did not end within %s of being killed; abandoned", killGrace)
		}
	}
	if r.err != nil && r.o.Error == "" {
		r.o.Error = r.err.Error()
	}
	writeEnd(log, r.o)
	return r.o, r.o.ExitCode(), nil
}

// writeEnd ends an in-process run's log with how the run ended.
func writeEnd(w io.Writer, o runner.Outcome) {
	switch {
	case o.Interrupted:
		fmt.Fprintln(w, "interrupted")
	case o.Error != "":
		fmt.Fprintf(w, "chaos: %s\n", o.Error)
	default:
		fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(verdictOfCode(o.ExitCode())))
	}
	switch {
	case o.ReportErr != "":
		fmt.Fprintf(w, "report: not written: %s\n", o.ReportErr)
	case o.Report != "":
		fmt.Fprintf(w, "report: %s\n", o.Report)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Child runs each spec as a child process, "chaos run --spec-file F
// --outcome-file O --quiet", which gets the spec as JSON and writes its
// outcome as JSON (when it starts, and again when it ends, also when it
// fails or is interrupted). A run owns a whole cluster, its signal
// handling and its exit code; a child that crashes or hangs takes only its
// own run with it. The spec and outcome files stay beside the log
// (NAME.spec.json, NAME.outcome.json for NAME.log).
type Child struct {
	// Exe is the chaos binary.
	Exe string
}

// Exec implements Executor. The child runs in its own process group, so
// that a Ctrl-C at the terminal reaches only the campaign, which stops the
// run in order instead of the terminal killing both at once; it dies with
// the campaign (PR_SET_PDEATHSIG), and its brokers with it. The end of
// ctx sends it SIGTERM, kill SIGKILL.
func (e Child) Exec(ctx context.Context, spec runner.Spec, logPath string, kill <-chan struct{}) (runner.Outcome, int, error) {
	base := strings.TrimSuffix(logPath, ".log")
	specFile, outcomeFile := base+".spec.json", base+".outcome.json"
	if err := spec.WriteFile(specFile); err != nil {
		return runner.Outcome{}, -1, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return runner.Outcome{}, -1, err
	}
	defer logf.Close()
	cmd := exec.Command(e.Exe, "run", "--spec-file", specFile, "--outcome-file", outcomeFile, "--quiet")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cluster.Spawn(cmd); err != nil {
		return runner.Outcome{}, -1, fmt.Errorf("start chaos run: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	stop := ctx.Done()
	var werr error
wait:
	for {
		select {
		case werr = <-waited:
			break wait
		case <-stop:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			stop = nil
		case <-kill:
			_ = cmd.Process.Kill()
			kill = nil
		}
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	case errors.As(werr, &ee):
		code, werr = -1, fmt.Errorf("chaos run died: %s", ee.ProcessState)
	default:
		code = -1
	}
	o, oerr := runner.ReadOutcomeFile(outcomeFile)
	switch {
	case code < 0:
		return o, code, werr
	case oerr != nil:
		return o, code, fmt.Errorf("chaos run exited %d without an outcome: %w", code, oerr)
	}
	return o, code, nil
}
