package runner

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
	"github.com/spf13/pflag"
)

// TestSpecWindows: a spec's own windows replace the seeded schedule and
// name the faults; test.json records them as given, in the form the
// nemesis reads back; and a schedule the nemesis cannot carry out is
// refused before any run.
func TestSpecWindows(t *testing.T) {
	s := DefaultSpec()
	s.Store, s.Seed, s.TimeLimit = t.TempDir(), 9, 30*time.Second
	w, err := nemesis.ParseSchedule("pause@3s+2s,kill@10s+4.5s,pause@20s+1s")
	if err != nil {
		t.Fatal(err)
	}
	s.Windows, s.NemesisInterval = w, 0 // no interval: the windows are the schedule
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	n := s.Normalized()
	if !reflect.DeepEqual(n.Schedule(), w) || !reflect.DeepEqual(n.Faults, []string{"pause", "kill"}) || n.Name != "acksall_isr2_clean_pause+kill" {
		t.Errorf("normalized: schedule %v, faults %v, name %s", n.Schedule(), n.Faults, n.Name)
	}
	tc := n.TestConfig(time.Now(), "test", "id", "", n.WorkloadConfig(nil))
	if !tc.ScheduleGiven || tc.Schedule.String() != w.String() || !reflect.DeepEqual(tc.Nemesis, n.Faults) {
		t.Errorf("test.json: given %v, schedule %s, nemesis %v", tc.ScheduleGiven, tc.Schedule, tc.Nemesis)
	}
	seeded := s
	seeded.Windows, seeded.Faults, seeded.NemesisInterval = nil, []string{"kill"}, 5*time.Second
	if tc := seeded.Normalized().TestConfig(time.Now(), "test", "id", "", seeded.WorkloadConfig(nil)); tc.ScheduleGiven || len(tc.Schedule) == 0 {
		t.Errorf("a seeded schedule: given %v, %d windows", tc.ScheduleGiven, len(tc.Schedule))
	}

	for name, c := range map[string]struct {
		edit func(*Spec)
		want string
	}{
		"past the limit":     {func(s *Spec) { s.TimeLimit = 20500 * time.Millisecond }, "ends after the time limit 20.5s"},
		"other faults":       {func(s *Spec) { s.Faults = []string{"kill"} }, "but the windows run pause,kill"},
		"overlap":            {func(s *Spec) { s.Windows[1].Start = 4 * time.Second }, "starts before"},
		"unknown":            {func(s *Spec) { s.Windows[0].Fault = "nap" }, `"nap" is not a fault`},
		"faults as a set ok": {func(s *Spec) { s.Faults = []string{"kill", "pause"} }, ""},
	} {
		c2 := s
		c2.Windows = append(nemesis.Schedule(nil), w...)
		c.edit(&c2)
		err := c2.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
		}
	}
}

// TestStoredSpec: the spec read back from a run's test.json runs what the
// run ran: the same settings, workload and seed, and its planned windows
// as the schedule itself.
func TestStoredSpec(t *testing.T) {
	s := DefaultSpec()
	s.Store, s.Seed, s.Nodes, s.Name = "store", 77, 5, "mine"
	s.Settings.ReplicationFactor, s.Settings.MinInsyncReplicas, s.Settings.Election = 5, 3, "unclean"
	s.Settings.SessionTimeoutMs, s.Settings.ReplicaLagTimeMaxMs, s.Settings.ReplicaLagMaxMessages = 1500, 2500, 10
	s.Settings.Fsync, s.Settings.Partitions = "interval:100ms", 4
	s.Acks, s.Concurrency, s.Consumers, s.Rate = 1, 7, 2, 123.5
	s.TimeLimit, s.RequestTimeout, s.ConvergeTimeout = 45*time.Second, 3*time.Second, 20*time.Second
	s.Faults, s.NemesisInterval = []string{"kill", "lose-unsynced", "pause"}, 6*time.Second
	n := s.Normalized()
	tc := n.TestConfig(time.Now(), "test", "id", "", n.WorkloadConfig(nil))

	derived := tc
	derived.Name = s.DefaultName()
	if got := StoredSpec(derived).Name; got != "" {
		t.Errorf("a name derived from the configuration is kept as if chosen: %q", got)
	}
	got := StoredSpec(tc)
	want := n
	want.Store, want.Runtime, want.Command = "", "", nil
	want.Windows, want.Faults, want.NemesisInterval = n.Schedule(), nil, 0
	if len(want.Windows) < 3 || !want.Settings.LoseUnsynced {
		t.Fatalf("the spec to store: %v, lose unsynced %v", want.Windows, want.Settings.LoseUnsynced)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back as\n%+v\nwant\n%+v", got, want)
	}
	if g := got.Normalized(); !reflect.DeepEqual(g.Schedule(), n.Schedule()) || !sameSet(g.Faults, n.Schedule().Kinds()) {
		t.Errorf("runs %v with faults %v; the run ran %v", g.Schedule(), g.Faults, n.Schedule())
	}
}

// TestSpecBugs: planted bugs are checked by name, name the test, reach
// test.json, and come back from it (a stored run replayed in simulation
// keeps its bug).
func TestSpecBugs(t *testing.T) {
	s := DefaultSpec()
	s.Store, s.Seed = t.TempDir(), 4
	s.Settings.Bugs = []string{"hw-ignores-isr", "nope"}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `settings.bugs: not a known bug, got "nope"`) {
		t.Fatalf("unknown bug: %v", err)
	}
	s.Settings.Bugs = []string{"unclean-when-clean", "hw-ignores-isr"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	n := s.Normalized()
	if n.Name != "acksall_isr2_clean_none_bug-unclean-when-clean_bug-hw-ignores-isr" {
		t.Errorf("name %s", n.Name)
	}
	tc := n.TestConfig(time.Now(), "test", "id", "", n.WorkloadConfig(nil))
	if !reflect.DeepEqual(tc.Cluster.Bugs, s.Settings.Bugs) {
		t.Errorf("test.json bugs %v", tc.Cluster.Bugs)
	}
	if back := StoredSpec(tc); !reflect.DeepEqual(back.Settings.Bugs, s.Settings.Bugs) {
		t.Errorf("stored spec bugs %v", back.Settings.Bugs)
	}
	if none := DefaultSpec().Normalized(); strings.Contains(none.Name, "bug") {
		t.Errorf("no bug, name %s", none.Name)
	}
}

// TestDefaultNameOfEveryFault: a spec with every fault kind gets a name a
// file system takes, still saying how many kinds it runs.
func TestDefaultNameOfEveryFault(t *testing.T) {
	s := DefaultSpec()
	s.Faults = nemesis.Names()
	n := s.DefaultName()
	if len(n) > 150 || !strings.Contains(n, "-faults-") {
		t.Errorf("name %q (%d bytes)", n, len(n))
	}
	s.Faults = []string{"kill", "pause"}
	if n := s.DefaultName(); n != "acksall_isr2_clean_kill+pause" {
		t.Errorf("name %q", n)
	}
}

// TestSpecMaxInFlight: several requests in flight name the test, reach
// the workload, test.json and the guarantee model, and are refused above
// five with idempotence; one is the default whether said or not.
func TestSpecMaxInFlight(t *testing.T) {
	s := DefaultSpec()
	s.Store, s.Seed, s.Retries, s.Idempotent, s.MaxInFlight = t.TempDir(), 9, 5, true, 5
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	n := s.Normalized()
	if n.Name != "acksall_isr2_clean_none_retries5_idempotent_inflight5" {
		t.Errorf("name %s", n.Name)
	}
	w := n.WorkloadConfig(nil)
	tc := n.TestConfig(time.Now(), "test", "id", "", w)
	if w.MaxInFlight != 5 || tc.Workload.MaxInFlight != 5 || tc.CheckerConfig().MaxInFlight != 5 || n.checkerConfig().MaxInFlight != 5 {
		t.Errorf("workload %d, test.json %d, checker %d/%d", w.MaxInFlight, tc.Workload.MaxInFlight, tc.CheckerConfig().MaxInFlight, n.checkerConfig().MaxInFlight)
	}
	s.MaxInFlight = 6
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "max_in_flight: above 5 with idempotence, got 6") {
		t.Errorf("6 in flight with idempotence: %v", err)
	}
	s.Idempotent = false
	if err := s.Validate(); err != nil {
		t.Errorf("6 in flight without idempotence: %v", err)
	}
	for _, k := range []int{0, 1} {
		s.MaxInFlight = k
		if n := s.Normalized(); strings.Contains(n.Name, "inflight") || n.checkerConfig().MaxInFlight != 1 ||
			n.TestConfig(time.Now(), "test", "id", "", n.WorkloadConfig(nil)).Workload.MaxInFlight != 0 {
			t.Errorf("max in flight %d: name %s, checker %d", k, n.Name, n.checkerConfig().MaxInFlight)
		}
	}
}

// TestSpecTriggers: a triggered kind is a fault of --nemesis and of a
// spec, its trigger refused with what is accepted where it cannot run,
// and the guarantee model is told of its plain kind, which is what the
// history records.
func TestSpecTriggers(t *testing.T) {
	faults, err := ParseFaults("kill-leader,kill-leader:leader-change~5ms,partition-leader:isr-expand/joined~0..30ms,kill-leader+kill-leader:leader-change")
	if err != nil || len(faults) != 4 {
		t.Fatalf("ParseFaults: %v, %v", faults, err)
	}
	s := DefaultSpec()
	s.Faults = faults
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.checkerConfig().Faults; !reflect.DeepEqual(got, []string{"kill-leader", "partition-leader"}) {
		t.Errorf("the guarantee model is told of %v", got)
	}
	var kinds []string
	for _, d := range s.Model().Declared {
		kinds = append(kinds, d.Kind)
	}
	if !reflect.DeepEqual(kinds, []string{"kill-leader", "kill-leader", "partition-leader", "kill-leader", "kill-leader"}) {
		t.Errorf("declared %v", kinds)
	}
	for list, want := range map[string]string{
		"kill:leader-change":             `--nemesis: "kill:leader-change": kill takes no trigger: it does not aim at a partition's leader; the kinds that do: kill-leader, partition-leader`,
		"kill-leader:election":           `"election" is not an event; events: leader-change, isr-shrink, isr-expand`,
		"kill-leader:isr-shrink/joined":  "isr-shrink has no role \"joined\"; its roles: leader (the default), left",
		"kill-leader:leader-change~fast": "not a duration or a range A..B",
		"kill-leader+kill:isr-shrink":    "kill takes no trigger",
	} {
		_, err := ParseFaults(list)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "KIND:EVENT[/ROLE][~DELAY]") {
			t.Errorf("--nemesis %s: %v; want %q and the form", list, err, want)
		}
		bad := DefaultSpec()
		bad.Faults = []string{list}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "faults: ") {
			t.Errorf("Validate of %s: %v", list, err)
		}
	}
}

// TestFieldsNameFlags: every field Validate names is a flag chaos run
// takes, under its JSON name in a stored spec; a refusal says the one
// in the spec's words and, through CheckFlags, the other in the flags'.
func TestFieldsNameFlags(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.Register(fs)
	for _, fd := range fields {
		if fs.Lookup(fd.Flag) == nil {
			t.Errorf("field %s: chaos run has no --%s", fd.JSON, fd.Flag)
		}
	}
	for _, c := range []struct {
		edit       func(*Spec)
		json, flag string
	}{
		{func(s *Spec) { s.Settings.ReplicaLagTimeMaxMs = 0 }, "settings.replica_lag_time_max_ms: not positive, got 0", "--replica-lag-time-max-ms: not positive, got 0"},
		{func(s *Spec) { s.Concurrency = 0 }, "concurrency: fewer than 1, got 0", "--concurrency: fewer than 1, got 0"},
		{func(s *Spec) { s.Retries = -1 }, "retries: negative, got -1", "--retries: negative, got -1"},
		{func(s *Spec) { s.BasePort = 65535 }, "base_port: out of range, got 65535", "--base-port: out of range, got 65535"},
		{func(s *Spec) { s.Settings.Election = "fair" }, `settings.election: not an election policy, got "fair"`, `--election: not an election policy, got "fair"`},
	} {
		s := DefaultSpec()
		c.edit(&s)
		err := s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Error(), c.json) {
			t.Errorf("Validate: %v, want %q", err, c.json)
		}
		r, tp := NodeFlags(s.Settings)
		if err := s.CheckFlags(r, tp, nil); err == nil || !strings.HasPrefix(err.Error(), c.flag) {
			t.Errorf("CheckFlags: %v, want %q", err, c.flag)
		}
	}
}
