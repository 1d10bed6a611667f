package nemesis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// fakeRuntime records what the nemesis did (a unit test of pure logic: the
// real runtime is exercised by the run tests).
type fakeRuntime struct {
	mu   sync.Mutex
	log  []string
	down map[int]bool // killed and not restarted: no process to resume
}

func (f *fakeRuntime) do(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
	return nil
}
func (f *fakeRuntime) Kill(id int) error {
	f.mu.Lock()
	if f.down == nil {
		f.down = map[int]bool{}
	}
	f.down[id] = true
	f.mu.Unlock()
	return f.do(fmt.Sprint("kill ", id))
}
func (f *fakeRuntime) Stop(id int, _ time.Duration) error { return f.do(fmt.Sprint("stop ", id)) }
func (f *fakeRuntime) Restart(ctx context.Context, id int) error {
	if err := ctx.Err(); err != nil {
		return err // a restart waits for the node, which an ended context does not
	}
	f.mu.Lock()
	delete(f.down, id)
	f.mu.Unlock()
	return f.do(fmt.Sprint("restart ", id))
}
func (f *fakeRuntime) Pause(id int) error { return f.do(fmt.Sprint("pause ", id)) }
func (f *fakeRuntime) Resume(id int) error {
	f.mu.Lock()
	down := f.down[id]
	f.mu.Unlock()
	if down {
		return fmt.Errorf("broker %d is not running", id) // as the local runtime says
	}
	return f.do(fmt.Sprint("resume ", id))
}
func (f *fakeRuntime) Partition(a, b []string) error {
	return f.do(fmt.Sprintf("partition %v %v", a, b))
}
func (f *fakeRuntime) Slow(from, to string, d time.Duration) error {
	return f.do(fmt.Sprint("slow ", from, " ", to, " ", d))
}
func (f *fakeRuntime) HealAll() error { return f.do("heal-network") }
func (f *fakeRuntime) OneWay(from, to []string) error {
	return f.do(fmt.Sprintf("one-way %v %v", from, to))
}
func (f *fakeRuntime) DelayAll(d time.Duration) error { return f.do(fmt.Sprint("delay-all ", d)) }
func (f *fakeRuntime) DropAll(p float64, _ uint64) error {
	return f.do(fmt.Sprint("drop-all ", p))
}

type memRecorder struct {
	mu  sync.Mutex
	ops []history.Op
}

func (m *memRecorder) Record(op history.Op) (history.Op, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	op.Index = int64(len(m.ops))
	m.ops = append(m.ops, op)
	return op, nil
}

func TestParse(t *testing.T) {
	got, err := Parse("kill, pause,kill")
	if err != nil || !reflect.DeepEqual(got, []string{"kill", "pause"}) {
		t.Fatalf("Parse: %v %v", got, err)
	}
	if got, err := Parse("none"); err != nil || got != nil {
		t.Fatalf("none: %v %v", got, err)
	}
	if _, err := Parse("kill,meteor"); err == nil || !strings.Contains(err.Error(), "meteor") {
		t.Fatalf("unknown fault accepted: %v", err)
	}
	if !NeedsNetwork([]string{"kill", "slow-follower"}) || NeedsNetwork([]string{"kill", "pause"}) {
		t.Fatal("NeedsNetwork")
	}
}

// TestRecordedKillsAreJudged: the guarantee model reads the fault class
// from the windows the nemesis records, so what the nemesis writes for a
// kill must list every broker it took down (killed_brokers), and the
// registry's Kills must say the same.
func TestRecordedKillsAreJudged(t *testing.T) {
	for _, c := range []struct {
		fault      string
		lazy, want string // the class with brokers that lose unsynced writes, and without
	}{
		{"kill-all", checker.FaultsF3, checker.FaultsF1},
		{"kill-majority", checker.FaultsF3, checker.FaultsF1},
		{"kill", checker.FaultsF2, checker.FaultsF1},
		{"kill-leader", checker.FaultsF2, checker.FaultsF1},
		// lose-unsynced means nothing without the storage mode (a run
		// that uses it turns the mode on): the class follows the kill.
		{"lose-unsynced", checker.FaultsF2, checker.FaultsF1},
		{"pause", checker.FaultsF1, checker.FaultsF1},
	} {
		rt, rec := &fakeRuntime{}, &memRecorder{}
		leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 2}, nil }
		n := New(Config{Brokers: 3, Partitions: 1, Seed: 1}, rt, rt, leaders, rec)
		if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: c.fault, Start: 0, End: time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
		f, _ := Lookup(c.fault)
		var killed int
		for _, op := range rec.ops {
			if op.Type == history.Info && strings.HasPrefix(op.F, "start-") {
				killed = len(op.Value.KilledBrokers)
			}
		}
		if killed != f.Kills(3) {
			t.Errorf("%s killed %d brokers, the registry says %d", c.fault, killed, f.Kills(3))
		}
		for lose, want := range map[bool]string{true: c.lazy, false: c.want} {
			cfg := checker.Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 1,
				Faults: []string{c.fault}, FaultsRecorded: true, LoseUnsynced: lose, Fsync: "never"}
			if got := checker.Check(rec.ops, cfg, checker.Options{SkipLinearizability: true}).FaultClass; got != want {
				t.Errorf("%s, lose-unsynced %v: class %s, want %s (recorded %v)", c.fault, lose, got, want, rec.ops)
			}
		}
	}
}

func TestScheduleIsSeededAndBounded(t *testing.T) {
	faults := []string{"kill", "pause", "partition"}
	a := NewSchedule(faults, 10*time.Second, 120*time.Second, 5)
	b := NewSchedule(faults, 10*time.Second, 120*time.Second, 5)
	c := NewSchedule(faults, 10*time.Second, 120*time.Second, 6)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different schedules")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same schedule")
	}
	if len(a) < 3 {
		t.Fatalf("only %d windows in 120 s at a 10 s interval", len(a))
	}
	var prev time.Duration
	for _, ev := range a {
		if ev.Start < prev || ev.End <= ev.Start || ev.End > 115*time.Second || !slices.Contains(faults, ev.Fault) {
			t.Fatalf("bad window %+v after %s", ev, prev)
		}
		prev = ev.End
	}
	if NewSchedule(nil, time.Second, time.Minute, 1) != nil {
		t.Fatal("no faults, yet a schedule")
	}
}

func TestFaultsAndHeal(t *testing.T) {
	leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 2, 1: 2}, nil }
	for _, tc := range []struct {
		fault string
		want  []string // actions in order, start then heal
	}{
		{"kill-leader", []string{"kill 2", "restart 2"}},
		{"kill-controller", []string{"kill 0", "restart 0"}},
		{"pause-leader", []string{"pause 2", "resume 2"}},
		{"partition-controller", []string{"partition [controller] [broker-1 broker-2 broker-3]", "heal-network"}},
		{"partition-leader", []string{"partition [broker-2] [controller broker-1 broker-3]", "heal-network"}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			rt, rec := &fakeRuntime{}, &memRecorder{}
			n := New(Config{Brokers: 3, Partitions: 2, LagTimeMax: time.Second, Seed: 1}, rt, rt, leaders, rec)
			s := Schedule{{Fault: tc.fault, Start: 0, End: time.Millisecond}}
			if err := n.Run(context.Background(), time.Now(), s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rt.log, tc.want) {
				t.Fatalf("actions %v, want %v", rt.log, tc.want)
			}
			if len(rec.ops) != 4 || rec.ops[0].F != "start-"+tc.fault || rec.ops[3].F != "stop-"+tc.fault {
				t.Fatalf("history %v", rec.ops)
			}
			if _, err := history.Pairs(rec.ops); err != nil {
				t.Fatalf("nemesis ops do not pair: %v", err)
			}
			if err := n.HealAll(context.Background()); err != nil || len(rec.ops) != 4 {
				t.Fatalf("HealAll after a healed schedule did something: %v %v", err, rec.ops)
			}
		})
	}
}

// cutShort runs an hour-long window of fault, cancels the run once the
// fault has started (recorded), and returns how long Run took to return.
func cutShort(t *testing.T, n *Nemesis, rec *memRecorder, fault string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- n.Run(ctx, time.Now(), Schedule{{Fault: fault, Start: 0, End: time.Hour}})
	}()
	for {
		rec.mu.Lock()
		k := len(rec.ops)
		rec.mu.Unlock()
		if k >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func TestHealAllUndoesAnInterruptedWindow(t *testing.T) {
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 3}, rt, rt, nil, rec)
	cutShort(t, n, rec, "kill-majority")
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kills, restarts int
	for _, a := range rt.log {
		kills += strings.Count(a, "kill ")
		restarts += strings.Count(a, "restart ")
	}
	if kills != 2 || restarts != 2 {
		t.Fatalf("a majority of 3 is 2 kills and 2 restarts; got %v", rt.log)
	}
	if last := rec.ops[len(rec.ops)-1]; last.F != "heal" {
		t.Fatalf("heal not recorded: %v", last)
	}
	// The window itself closed when it was cut short, saying who stayed
	// down for the heal to restart.
	stop := rec.ops[len(rec.ops)-3]
	if stop.F != "stop-kill-majority" || stop.Type != history.Info || strings.Count(strings.Join(stop.Value.Targets, ","), "left down") != 2 {
		t.Fatalf("the cut window's stop: %+v", stop)
	}
}

// TestFailedRestartIsRetried: a window closed after its context ended
// (a real run's late window reaching the time limit) cannot restart what
// it killed: its stop says so, the node stays down in the nemesis's
// books, and HealAll restarts it and records the heal, so the history
// shows the cluster whole again (the liveness checks need it) instead of a
// node silently left down.
func TestFailedRestartIsRetried(t *testing.T) {
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 3}, rt, rt, nil, rec)
	ctx, cancel := context.WithCancel(context.Background())
	o := n.Open(Event{Fault: "kill", Start: 0, End: time.Second}, time.Now().Add(time.Second))
	for {
		_, over, err := o.Step(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if over {
			break
		}
	}
	cancel()
	if err := n.Close(ctx, "kill"); err != nil {
		t.Fatal(err)
	}
	stop := rec.ops[len(rec.ops)-1]
	if stop.F != "stop-kill" || stop.Error == "" || !strings.Contains(strings.Join(stop.Value.Targets, ","), "failed") {
		t.Fatalf("the stop of a window that could not restart its node: %+v", stop)
	}
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	heal := rec.ops[len(rec.ops)-1]
	if heal.F != "heal" || heal.Error != "" || !strings.HasPrefix(strings.Join(heal.Value.Targets, ","), "restart ") {
		t.Fatalf("HealAll after the failed restart: %+v (runtime did %v)", heal, rt.log)
	}
	if got := strings.Count(strings.Join(rt.log, ","), "restart "); got != 1 {
		t.Errorf("%d restarts, want 1: %v", got, rt.log)
	}
	// Run begins no window once its context has ended, even one whose
	// start the clock has long passed.
	before := len(rec.ops)
	if err := n.Run(ctx, time.Now().Add(-time.Hour), Schedule{{Fault: "kill", Start: 0, End: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if len(rec.ops) != before {
		t.Errorf("a window began after the context ended: %+v", rec.ops[before:])
	}
}

// TestPausedThenKilled: a composite that pauses brokers and kills some
// of the same heals without an error: a killed broker has no process to
// resume, and its restart is the heal (the local runtime refuses to
// resume a process that is gone, which left such runs unhealed).
func TestPausedThenKilled(t *testing.T) {
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 5}, rt, rt, nil, rec)
	if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: "pause-majority+kill-majority", Start: 0, End: 10 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	for _, op := range rec.ops {
		if op.Error != "" {
			t.Errorf("%s: %s (runtime did %v)", op.F, op.Error, rt.log)
		}
	}
	if len(rt.down) != 0 {
		t.Errorf("left down: %v", rt.down)
	}
}

// TestInterruptedWindowCloses: a window cut short (Ctrl-C while brokers
// are paused) is healed at once, without waiting for its end, and its stop
// is in the history: no fault without its end.
func TestInterruptedWindowCloses(t *testing.T) {
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 3}, rt, rt, nil, rec)
	if took := cutShort(t, n, rec, "pause-majority"); took > time.Second {
		t.Fatalf("closing the window took %s", took)
	}
	resumed := 0
	for _, a := range rt.log {
		if strings.HasPrefix(a, "resume ") {
			resumed++
		}
	}
	if resumed != 2 {
		t.Fatalf("actions %v: the 2 paused brokers were not resumed", rt.log)
	}
	if len(rec.ops) != 4 || rec.ops[3].F != "stop-pause-majority" {
		t.Fatalf("history %v: want the window's start and stop", rec.ops)
	}
	if _, err := history.Pairs(rec.ops); err != nil {
		t.Fatal(err)
	}
	if err := n.HealAll(context.Background()); err != nil || len(rec.ops) != 4 {
		t.Fatalf("HealAll after the window closed did something: %v %v", err, rec.ops)
	}
}

// TestMoreFaults checks how many nodes each fault touches and that each
// heals, whatever the seed picks.
func TestMoreFaults(t *testing.T) {
	for _, tc := range []struct {
		fault         string
		prefix        string // of the start actions
		starts, heals int
	}{
		{"kill-minority", "kill ", 1, 1},
		{"kill-all", "kill ", 3, 3},
		{"pause-majority", "pause ", 2, 2},
		{"isolate", "partition ", 1, 1},
		{"majority-ring", "partition ", 2, 1}, // 4 nodes in a ring: the two opposite pairs are cut
		{"one-way", "one-way ", 1, 1},
		{"latency", "delay-all ", 1, 1},
		{"drop", "drop-all ", 1, 1},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				rt, rec := &fakeRuntime{}, &memRecorder{}
				n := New(Config{Brokers: 3, Partitions: 1, Seed: seed}, rt, rt, nil, rec)
				if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: tc.fault, End: time.Millisecond}}); err != nil {
					t.Fatal(err)
				}
				starts := 0
				for _, a := range rt.log {
					if strings.HasPrefix(a, tc.prefix) {
						starts++
					}
				}
				if starts != tc.starts || len(rt.log) != tc.starts+tc.heals {
					t.Fatalf("seed %d: actions %v, want %d starting with %q and %d heals", seed, rt.log, tc.starts, tc.prefix, tc.heals)
				}
				if _, err := history.Pairs(rec.ops); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestLeaderFaultWaitsForALeader: right after an election a partition may
// have no leader for a moment; a fault aimed at the leader waits for one
// (up to LeaderWait) rather than giving up, and says why when none comes.
func TestLeaderFaultWaitsForALeader(t *testing.T) {
	calls := 0
	late := func(context.Context) (map[int32]int32, error) {
		calls++
		if calls < 3 {
			return map[int32]int32{0: -1}, nil
		}
		return map[int32]int32{0: 3}, nil
	}
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1, LeaderWait: 5 * time.Second}, rt, rt, late, rec)
	if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: "kill-leader", Start: 0, End: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kill 3", "restart 3"}; !reflect.DeepEqual(rt.log, want) || rec.ops[1].Error != "" {
		t.Fatalf("actions %v (start: %v), want %v after waiting for the leader", rt.log, rec.ops[1], want)
	}

	never := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: -1}, nil }
	rt, rec = &fakeRuntime{}, &memRecorder{}
	n = New(Config{Brokers: 3, Partitions: 1, Seed: 1, LeaderWait: 300 * time.Millisecond}, rt, rt, never, rec)
	start := time.Now()
	if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: "kill-leader", Start: 0, End: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if len(rt.log) != 0 || !strings.Contains(rec.ops[1].Error, "no leader") || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("with no leader ever: actions %v, start op %v after %s", rt.log, rec.ops[1], time.Since(start))
	}
}

// TestCurrentWindow: Current names the window open now, with its targets
// and end, and nothing between windows.
func TestCurrentWindow(t *testing.T) {
	rt, rec := &fakeRuntime{}, &memRecorder{}
	leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 3}, nil }
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1}, rt, rt, leaders, rec)
	if _, ok := n.Current(); ok {
		t.Fatal("a window before the schedule started")
	}
	start := time.Now()
	done := make(chan error)
	go func() {
		done <- n.Run(context.Background(), start, Schedule{{Fault: "partition-leader", Start: 0, End: 300 * time.Millisecond}})
	}()
	var w Window
	for ok := false; !ok || !w.Started; w, ok = n.Current() {
		time.Sleep(time.Millisecond)
	}
	if w.Fault != "partition-leader" || w.Targets[0] != "broker-3" || !w.End.Equal(start.Add(300*time.Millisecond)) {
		t.Fatalf("open window %+v", w)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w, ok := n.Current(); ok {
		t.Fatalf("a window after the schedule ended: %+v", w)
	}
}

// TestScheduleHasAWindowFromMinTimeLimit: from MinTimeLimit on every seed
// gets at least one window, inside the limit with time to heal; below it,
// none (chaos run refuses such a run rather than claim faults it never
// injected).
func TestScheduleHasAWindowFromMinTimeLimit(t *testing.T) {
	const interval = 2 * time.Second
	for seed := uint64(0); seed < 500; seed++ {
		for _, limit := range []time.Duration{MinTimeLimit(interval), 5 * time.Second, 6 * time.Second} {
			s := NewSchedule([]string{"kill", "pause"}, interval, limit, seed)
			if len(s) == 0 {
				t.Fatalf("seed %d, limit %s: no window", seed, limit)
			}
			if last := s[len(s)-1]; last.End > limit-interval/2 || s[0].Start <= 0 {
				t.Fatalf("seed %d, limit %s: windows %v leave no time to heal", seed, limit, s)
			}
		}
		if s := NewSchedule([]string{"kill"}, interval, MinTimeLimit(interval)-time.Millisecond, seed); len(s) != 0 {
			t.Fatalf("seed %d: a window below MinTimeLimit: %v", seed, s)
		}
	}
}

// TestWindowStatus: how the progress line names the open fault window.
func TestWindowStatus(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		w    Window
		want string
	}{
		{Window{Fault: "partition-leader", Started: true, End: now.Add(3200 * time.Millisecond),
			Targets: []string{"broker-3", "|", "controller+broker-1+broker-2", "leader of partition 1"}},
			"partition-leader broker-3, 4s left"},
		{Window{Fault: "kill-majority", Started: true, End: now.Add(time.Second), Targets: []string{"broker-1", "broker-3"}},
			"kill-majority broker-1 broker-3, 1s left"},
		{Window{Fault: "latency", Started: true, End: now.Add(time.Second), Targets: []string{"all links", "50ms each way", "via netem"}},
			"latency all links 50ms each way, 1s left"},
		{Window{Fault: "slow-followers-kill-leader", End: now.Add(5 * time.Second)},
			"starting slow-followers-kill-leader, 5s left"},
		{Window{Fault: "kill-leader", Started: true, Err: "partition 0 has no leader", End: now.Add(5 * time.Second)},
			"kill-leader (failed: partition 0 has no leader), 5s left"},
		{Window{Fault: "kill", Started: true, Targets: []string{"broker-2"}, End: now.Add(-time.Second)},
			"kill broker-2, healing"},
	} {
		if got := tc.w.Status(now); got != tc.want {
			t.Errorf("%+v.Status() = %q, want %q", tc.w, got, tc.want)
		}
	}
}

// cmdErr is a fault command's failure, as the external runtime reports
// one (cluster/external.CommandError).
type cmdErr string

func (e cmdErr) Error() string        { return string(e) }
func (e cmdErr) FaultCommand() string { return "false" }

// failingKill is a runtime whose kill fails with err.
type failingKill struct {
	fakeRuntime
	err error
}

func (f *failingKill) Kill(id int) error {
	_ = f.do(fmt.Sprint("kill ", id))
	return f.err
}

// TestStopsAtFailingCommand: a fault command that fails ends the schedule
// at that window, healed and recorded first (its kill undone by a
// restart), with a Stopped that names the command's failure; any other
// failure to start a fault leaves the schedule to go on.
func TestStopsAtFailingCommand(t *testing.T) {
	s := Schedule{{Fault: "kill", Start: 0, End: time.Millisecond}, {Fault: "kill", Start: 2 * time.Millisecond, End: 3 * time.Millisecond},
		{Fault: "kill", Start: 4 * time.Millisecond, End: 5 * time.Millisecond}}
	rt, rec := &failingKill{err: fmt.Errorf("broker-2: %w", cmdErr("kill command for broker-2 exited 1: false"))}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1}, rt, rt, nil, rec)
	err := n.Run(context.Background(), time.Now(), s)
	var stopped *Stopped
	if !errors.As(err, &stopped) || stopped.Fault != "kill" || !strings.Contains(err.Error(), "kill command for broker-2 exited 1: false") {
		t.Fatalf("Run: %v, want it stopped at the failing kill command", err)
	}
	var fs []string
	for _, op := range rec.ops {
		if op.Type == history.Info {
			fs = append(fs, op.F)
		}
	}
	if strings.Join(fs, ",") != "start-kill,stop-kill" {
		t.Errorf("recorded %v, want the one window's start and stop", fs)
	}
	if len(rt.log) != 2 || !strings.HasPrefix(rt.log[1], "restart ") {
		t.Errorf("runtime did %v, want the kill and the restart that undoes it", rt.log)
	}

	rt, rec = &failingKill{err: errors.New("no broker is up")}, &memRecorder{}
	if err := New(Config{Brokers: 3, Partitions: 1, Seed: 1}, rt, rt, nil, rec).Run(context.Background(), time.Now(), s); err != nil {
		t.Fatalf("Run stopped at a failure that is no command's: %v", err)
	}
	if starts := len(slices.DeleteFunc(slices.Clone(rec.ops), func(op history.Op) bool { return op.Type != history.Info || op.F != "start-kill" })); starts != 3 {
		t.Errorf("%d windows started, want all 3", starts)
	}
}
