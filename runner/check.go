package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/internal/offheap"
	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
)

// Check is chaos check: a stored history judged again, under the
// configuration its run's test.json records (the strictest promise when
// there is none) with the flags that were given in its place.
type Check struct {
	// Path is a run directory or a history file (results.FindHistory).
	Path string
	// Given says whether the flag of that name was given: only those
	// override test.json.
	Given func(flag string) bool

	Acks, Election, Fsync                   string
	MinInsyncReplicas, ReplicationFactor    int
	MaxInFlight                             int
	Faults                                  []string
	LoseUnsynced, ClientRetries, Idempotent bool
	LinearizableTimeout                     time.Duration
	LivenessBound                           time.Duration
	SkipLinearizability                     bool
	// Out, when set, is where the results are written as JSON too.
	Out string
}

// Run judges the history, printing on out what it notes of the history
// and the verdict, and returns the results; an error (the path, a flag,
// test.json, the history) leaves no verdict.
func (c Check) Run(out io.Writer) (*checker.Results, error) {
	path, dir, err := results.FindHistory(c.Path)
	if err != nil {
		return nil, err
	}
	cfg := checker.Strictest()
	var pe *fs.PathError
	stored := false
	if tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile)); err == nil {
		cfg, stored = tc.CheckerConfig(), true
	} else if !errors.As(err, &pe) {
		return nil, err
	}
	if err := c.override(&cfg); err != nil {
		return nil, err
	}
	// The rules chaos run applies to its flags: a configuration no run
	// could have is refused, not judged.
	if err := CheckConfigFlags(cfg); err != nil {
		if !c.given("acks", "min-insync-replicas", "election", "replication-factor", "max-in-flight") {
			err = fmt.Errorf("%s: %w", filepath.Join(dir, results.TestFile), cfg.Validate())
		}
		return nil, err
	}
	// The history is judged as it is read, never held whole: what the
	// checkers keep is their index, and the recovery table what it needs
	// of each fault window.
	b := checker.NewBuilder(cfg)
	b.InFile(filepath.Dir(path)) // in the heap if no file can be made
	var rec results.RecoveryReader
	if c.Out != "" {
		defer samplesInFile(&rec, filepath.Dir(path))()
	}
	n, err := ScanHistory(out, path, b, func(op *history.Op) {
		if c.Out != "" {
			rec.Add(op)
		}
	})
	if err != nil {
		return nil, err
	}
	// The recovery table is made now: what it is made of is then no
	// longer referenced through the checks.
	var recovery []results.WindowRecovery
	if c.Out != "" {
		if recovery, err = results.RecoveriesFile(path, &rec); err != nil {
			return nil, err
		}
	}
	h := b.History()
	readDone(h)
	if !stored && !h.Recorded(history.Crash) {
		// Nothing says whoever recorded it watched the nodes: no crash
		// recorded is not no crash.
		h.NotSupported(checker.CrashName, "the history comes without its run's test.json: nothing says the tool that recorded it watched the nodes for crashes")
	}
	opts := checker.Options{LinearizableTimeout: c.LinearizableTimeout, SkipLinearizability: c.SkipLinearizability}
	if dir != "" {
		opts.VisualizationPath = filepath.Join(dir, results.LinearizabilityFile)
	}
	if n == 0 {
		fmt.Fprintf(out, "%s holds no operations: there is nothing to judge\n", path)
	}
	status := statusline.New(out)
	judging := fmt.Sprintf("judging %d operations", n)
	status.Show(judging)
	if status.TTY {
		// A day's history is judged for minutes after it is read.
		opts.Progress = func(step string) { status.Show(judging + ": " + step) }
	}
	res := checker.CheckHistory(h, opts)
	status.Show("")
	if err := h.InFileErr(); err != nil {
		fmt.Fprintf(out, "note: the index was held in memory, not in a file (%v)\n", err)
	}
	h.Close()
	report.WriteVerdict(out, res)
	if c.Out != "" {
		// What a run would have stored: the windows' recovery too.
		data, _ := json.MarshalIndent(results.StoredResults{Results: res, Recovery: recovery}, "", "  ")
		if err := results.WriteFileAtomic(c.Out, append(data, '\n')); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// given says whether one of the named flags was given.
func (c Check) given(names ...string) bool {
	for _, n := range names {
		if c.Given(n) {
			return true
		}
	}
	return false
}

// override puts the flags given into cfg.
func (c Check) override(cfg *checker.Config) error {
	if c.Given("acks") {
		a, err := ParseAcks(c.Acks)
		if err != nil {
			return err
		}
		cfg.Acks = int(a)
	}
	if c.Given("min-insync-replicas") {
		cfg.MinInsyncReplicas = c.MinInsyncReplicas
	}
	if c.Given("election") {
		if err := node.CheckElection(c.Election); err != nil {
			return err
		}
		cfg.Election = c.Election
	}
	if c.Given("replication-factor") {
		cfg.ReplicationFactor = c.ReplicationFactor
	}
	if c.Given("faults") {
		list := strings.Join(c.Faults, ",")
		parsed, err := nemesis.Parse(list)
		if err != nil {
			return cli.Error("faults", list, "not a fault list", "use a comma list of: "+strings.Join(nemesis.Names(), ", "))
		}
		cfg.Faults = parsed
		// A history that records no windows is judged by these, as the
		// registry says each acts; one that needs brokers losing
		// unsynced writes implies them.
		cfg.Declared = DeclaredFaults(parsed, cfg.ReplicationFactor)
		if nemesis.LosesUnsynced(parsed) && !c.Given("lose-unsynced") {
			cfg.LoseUnsynced = true
		}
	}
	if c.Given("lose-unsynced") {
		cfg.LoseUnsynced = c.LoseUnsynced
	}
	if c.Given("fsync") {
		p, ms, err := node.ParseFsync(c.Fsync)
		if err != nil {
			return err
		}
		cfg.Fsync = storage.FormatFsync(p, ms)
	}
	if c.Given("client-retries") {
		cfg.ClientRetries = c.ClientRetries
	}
	if c.Given("max-in-flight") {
		cfg.MaxInFlight = c.MaxInFlight
	}
	if c.Given("idempotent") {
		cfg.Idempotent = c.Idempotent
	}
	if c.Given("liveness-bound") {
		if c.LivenessBound < 0 {
			return cli.Error("liveness-bound", c.LivenessBound, "negative", "a duration such as 30s, or 0 to leave the liveness checks out")
		}
		cfg.LivenessBoundMs = c.LivenessBound.Milliseconds()
	}
	return nil
}

// ScanHistory reads the history at path for judging into b, and gives fn
// each operation as it is read, after b (a long read's records only to b,
// as they are decoded: history.ScanReads), and returns how many there
// were. A torn last
// line (the tester was killed while writing it) is noted on out and left
// out; a file of which not one line is an operation is refused, saying
// what to pass instead (results.NotHistory).
//
// On a terminal it shows how far it has read, a long history taking
// minutes.
func ScanHistory(out io.Writer, path string, b *checker.Builder, fn func(*history.Op)) (int, error) {
	line := statusline.New(out)
	var show func(string)
	showing := false
	if line.TTY {
		show = func(s string) { showing = true; line.Show(s) }
	}
	n, err := scanShowing(path, b, fn, show)
	if showing {
		line.Show("") // the verdict takes the line
	}
	var pe *fs.PathError
	if err != nil && n == 0 && !errors.Is(err, history.ErrTornTail) && !errors.As(err, &pe) {
		return 0, results.NotHistory(path, err)
	}
	if errors.Is(err, history.ErrTornTail) {
		fmt.Fprintf(out, "note: %s ends in a torn line (the tester was killed while writing); judging the %d operations before it\n", path, n)
		err = nil
	}
	return n, err
}

// scanShowing reads the history at path into b and then fn, telling
// show, if not nil, how far it has read (history.ScanReadsFileShowing),
// and returns how many operations there were.
func scanShowing(path string, b *checker.Builder, fn func(*history.Op), show func(string)) (int, error) {
	n := 0
	err := history.ScanReadsFileShowing(path, func(op *history.Op) error {
		n++
		b.Add(op)
		fn(op)
		return nil
	}, recordsTo(b), show)
	return n, err
}

// samplesInFile has rec keep the monitor's samples in a file in dir, as
// the index is (a day's run's are tens of MB), until the func it returns
// closes it; in the heap where no file can be made.
func samplesInFile(rec *results.RecoveryReader, dir string) (close func()) {
	a, err := offheap.Open(dir)
	if err != nil {
		return func() {}
	}
	rec.In(a)
	return func() { a.Close() }
}

// recordsTo streams a long read's records to b (history.ScanReads).
func recordsTo(b *checker.Builder) func(history.Key, bool, []history.Record) error {
	return func(k history.Key, hinted bool, rs []history.Record) error {
		b.AddRecords(k, hinted, rs)
		return nil
	}
}

// CheckConfigFlags refuses, naming the flag, a configuration no run could
// have; checker.Config.Validate is the same rules without flag names.
func CheckConfigFlags(cfg checker.Config) error {
	switch {
	case cfg.ReplicationFactor < 1:
		return cli.Error("replication-factor", cfg.ReplicationFactor, "below 1", "a topic has at least one replica")
	case cfg.MinInsyncReplicas < 1:
		return cli.Error("min-insync-replicas", cfg.MinInsyncReplicas, "below 1", "use 1 up to --replication-factor")
	case cfg.MinInsyncReplicas > cfg.ReplicationFactor:
		return cli.Error("min-insync-replicas", cfg.MinInsyncReplicas, fmt.Sprintf("above the replication factor %d (no acks=-1 write could succeed)", cfg.ReplicationFactor), "use 1 up to --replication-factor")
	case cfg.MaxInFlight < 1:
		return cli.Error("max-in-flight", cfg.MaxInFlight, "below 1", "a producer has at least one request in flight")
	}
	return cfg.Validate()
}
