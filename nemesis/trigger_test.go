package nemesis

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// TestTriggerParse: a leader-aimed kind takes a trigger, with the event's
// default role and no delay unless written; Lookup gives the kind's own
// fault, Kind strips the trigger; everything else is refused saying what
// is accepted.
func TestTriggerParse(t *testing.T) {
	for name, want := range map[string]Trigger{
		"kill-leader:leader-change":                    {Event: LeaderChange, Role: "new"},
		"kill-leader:leader-change/old~20ms":           {Event: LeaderChange, Role: "old", Delay: 20 * time.Millisecond, DelayMax: 20 * time.Millisecond},
		"partition-leader:isr-expand~0..30ms":          {Event: ISRExpand, Role: "joined", DelayMax: 30 * time.Millisecond},
		"pause-leader:isr-shrink/left":                 {Event: ISRShrink, Role: "left"},
		"slow-followers-kill-leader:isr-expand/leader": {Event: ISRExpand, Role: "leader"},
		"kill-leader:isr-shrink~0.5ms..1.5ms":          {Event: ISRShrink, Role: "leader", Delay: 500 * time.Microsecond, DelayMax: 1500 * time.Microsecond},
	} {
		got := TriggerOf(name)
		if got == nil || *got != want {
			t.Errorf("%s: trigger %+v (%v), want %+v", name, got, CheckTrigger(name), want)
			continue
		}
		f, ok := Lookup(name)
		if base, _ := Lookup(Kind(name)); !ok || f != base {
			t.Errorf("%s: Lookup gave %v, want the kind %s's fault", name, f, Kind(name))
		}
		if s, err := Parse(name + ",kill"); err != nil || len(s) != 2 || s[0] != name {
			t.Errorf("Parse(%s,kill) = %v, %v", name, s, err)
		}
		if back := TriggerOf(Kind(name) + triggerSep + got.String()); back == nil || *back != want {
			t.Errorf("%s: written out as %s, read back as %+v", name, got.String(), back)
		}
	}
	if Kind("kill-leader:leader-change~1ms") != "kill-leader" || Kind("kill") != "kill" || TriggerOf("kill-leader") != nil {
		t.Error("Kind or TriggerOf of a kind without trigger")
	}
	for name, why := range map[string]string{
		"kill:leader-change":                            "kill takes no trigger: it does not aim at a partition's leader; the kinds that do: kill-leader, partition-leader, pause-leader, slow-follower, slow-followers-kill-leader",
		"meteor:leader-change":                          `"meteor" is not a fault`,
		"kill-leader:election":                          `"election" is not an event; events: leader-change, isr-shrink, isr-expand`,
		"kill-leader:":                                  `"" is not an event`,
		"kill-leader:leader-change/joined":              `leader-change has no role "joined"; its roles: new (the default), old`,
		"kill-leader:isr-expand/left":                   "its roles: joined (the default), leader",
		"kill-leader:leader-change~soon":                "not a duration or a range A..B",
		"kill-leader:leader-change~-1ms":                "must be 0 or more",
		"kill-leader:leader-change~9ms..1ms":            "first end not above its second",
		"kill-leader:leader-change~1ms..":               "not a duration",
		"kill-leader+kill:leader-change":                `"kill:leader-change": kill takes no trigger`,
		"kill-leader+kill-leader":                       `"kill-leader" appears twice`,
		"kill-leader:isr-shrink+kill-leader:isr-shrink": "appears twice",
	} {
		err := CheckTrigger(name)
		if err == nil {
			err = Composite(name)
		}
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v; want %q", name, err, why)
		}
		if _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%s) found a fault", name)
		}
		if _, err := Parse(name); err == nil {
			t.Errorf("Parse(%s) accepted it", name)
		}
	}
	// A composite's part may be armed; the kind appears twice only so.
	for _, name := range []string{"kill-leader+kill-leader:leader-change~0ms", "partition-leader:isr-shrink+kill", "kill-leader+pause-leader:leader-change/old+kill"} {
		f, ok := Lookup(name)
		if !ok || f.Parts == nil || len(f.partNames) != len(strings.Split(name, "+")) || CheckTrigger(name) != nil || Composite(name) != nil {
			t.Errorf("%s: %+v %v %v %v", name, f, ok, CheckTrigger(name), Composite(name))
		}
	}
	if got := Kind("kill-leader+kill-leader:leader-change~0ms"); got != "kill-leader+kill-leader" {
		t.Errorf("Kind of a composite with an armed part: %s", got)
	}
	// A schedule carries triggers in its written form, exactly.
	text := "kill-leader@1s+2s,kill-leader:leader-change~0..30ms@4s+3s,pause-leader:isr-shrink/left@8s+1s"
	s, err := ParseSchedule(text)
	if err != nil || s.String() != text || len(s) != 3 || s[1].Fault != "kill-leader:leader-change~0..30ms" {
		t.Fatalf("schedule %q read as %v (%v)", text, s, err)
	}
	if _, err := ParseSchedule("kill:isr-shrink@1s+1s"); err == nil || !strings.Contains(err.Error(), "kill:isr-shrink@1s+1s: \"kill:isr-shrink\": kill takes no trigger") {
		t.Errorf("a schedule with a trigger on kill: %v", err)
	}
}

// TestTriggerDocumented: docs/faults.md names every event and role.
func TestTriggerDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range TriggerEvents() {
		if !strings.Contains(string(data), "`"+e.Name+"`") {
			t.Errorf("docs/faults.md does not document the event %s", e.Name)
		}
		for _, r := range e.Roles {
			if !strings.Contains(string(data), "`"+r.Name+"`") {
				t.Errorf("docs/faults.md does not document %s's role %s", e.Name, r.Name)
			}
		}
	}
}

// views is a scripted cluster: each Observe answers the next view (the
// last one once they run out).
type views struct {
	seq   []map[int32]PartitionView
	calls int
}

func (v *views) observe(context.Context) ([]Answer, error) {
	i := min(v.calls, len(v.seq)-1)
	v.calls++
	return []Answer{{From: "broker-1", Partitions: v.seq[i]}}, nil
}

func pv(leader, epoch int32, isr ...int32) PartitionView {
	return PartitionView{Leader: leader, Epoch: epoch, ISR: isr}
}

// stepUntil drives o on a virtual clock from start, as a simulation does,
// and returns when the start was recorded.
func stepUntil(t *testing.T, o *Opening, start time.Duration) time.Duration {
	t.Helper()
	now := start
	for i := 0; i < 100000; i++ {
		wait, over, err := o.Step(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if over {
			return now
		}
		now += wait
	}
	t.Fatal("the opening never ended")
	return 0
}

// TestTriggerFires: an armed fault does nothing until a poll shows its
// event against the poll before, then hits the broker its role names, in
// the lowest partition showing the event, its delay after; the history
// records the kind's own start with what fired it. A window whose event
// never comes records a start that failed, saying so.
func TestTriggerFires(t *testing.T) {
	base := map[int32]PartitionView{0: pv(1, 3, 1, 2, 3), 1: pv(2, 5, 2, 3, 1), 2: pv(3, 1, 3, 1, 2)}
	change := map[int32]PartitionView{0: pv(1, 3, 1, 2, 3), 1: pv(2, 5, 2, 3), 2: pv(1, 2, 1, 2)}
	back := map[int32]PartitionView{0: pv(1, 3, 1, 2, 3), 1: pv(2, 5, 2, 3, 1), 2: pv(1, 2, 1, 2, 3)}
	for _, c := range []struct {
		fault   string
		seq     []map[int32]PartitionView
		want    string // the runtime's first action
		fired   string
		atLeast time.Duration // the delay
	}{
		{"kill-leader:leader-change~5ms", []map[int32]PartitionView{base, base, change}, "kill 1", "partition 2 epoch 1 -> 2, leader broker-3 -> broker-1", 5 * time.Millisecond},
		{"kill-leader:leader-change/old", []map[int32]PartitionView{base, base, change}, "kill 3", "aimed at broker-3 (old)", 0},
		{"pause-leader:isr-shrink", []map[int32]PartitionView{base, change}, "pause 2", "partition 1 isr [2 3 1] -> [2 3]", 0},
		{"pause-leader:isr-shrink/left", []map[int32]PartitionView{base, change}, "pause 1", "aimed at broker-1 (left)", 0},
		{"kill-leader:isr-expand", []map[int32]PartitionView{base, change, change, back}, "kill 1", "partition 1 isr [2 3] -> [2 3 1]", 0},
		{"kill-leader:isr-expand/leader~2ms..4ms", []map[int32]PartitionView{base, change, back}, "kill 2", "aimed at broker-2 (leader)", 2 * time.Millisecond},
	} {
		rt, rec := &fakeRuntime{}, &memRecorder{}
		v := &views{seq: c.seq}
		n := New(Config{Brokers: 3, Partitions: 3, Seed: 1, Observe: v.observe}, rt, rt, nil, rec)
		ev := Event{Fault: c.fault, Start: time.Second, End: 3 * time.Second}
		at := stepUntil(t, n.Open(ev, time.Time{}), ev.Start)
		if len(rt.log) == 0 || rt.log[0] != c.want {
			t.Errorf("%s: the runtime did %v, want %s", c.fault, rt.log, c.want)
		}
		polls := time.Duration(v.calls-1) * defaultTriggerPoll
		if d := at - ev.Start - polls; d < c.atLeast || d > max(c.atLeast, 4*time.Millisecond) {
			t.Errorf("%s: started %s after the event's poll, want %s", c.fault, d, c.atLeast)
		}
		op := rec.ops[len(rec.ops)-1]
		kind := Kind(c.fault)
		if op.F != "start-"+kind || op.Value.FaultName() != kind || op.Error != "" {
			t.Errorf("%s: recorded %s of %s (%s)", c.fault, op.F, op.Value.FaultName(), op.Error)
		}
		targets := strings.Join(op.Value.Targets, "; ")
		if !strings.Contains(targets, "armed on "+TriggerOf(c.fault).Event) || !strings.Contains(targets, c.fired) || !strings.Contains(targets, "seen at ") {
			t.Errorf("%s: targets %q, want what fired it: %q", c.fault, targets, c.fired)
		}
		if err := n.Close(context.Background(), c.fault); err != nil {
			t.Fatal(err)
		}
		if last := rec.ops[len(rec.ops)-1]; last.F != "stop-"+kind {
			t.Errorf("%s: the window closed with %s", c.fault, last.F)
		}
	}

	// Never seen: the window ends armed, and its start says why.
	rt, rec := &fakeRuntime{}, &memRecorder{}
	v := &views{seq: []map[int32]PartitionView{base}}
	n := New(Config{Brokers: 3, Partitions: 3, Seed: 1, Observe: v.observe, TriggerPoll: 50 * time.Millisecond}, rt, rt, nil, rec)
	ev := Event{Fault: "kill-leader:leader-change", Start: time.Second, End: 2 * time.Second}
	if at := stepUntil(t, n.Open(ev, time.Time{}), ev.Start); at != ev.End {
		t.Errorf("gave up at %s, want the window's end %s", at, ev.End)
	}
	if v.calls != 21 {
		t.Errorf("%d polls in a second at 50ms, want 21", v.calls)
	}
	op := rec.ops[len(rec.ops)-1]
	if len(rt.log) != 0 || op.F != "start-kill-leader" || !strings.Contains(op.Error, "leader-change not seen in the window") {
		t.Errorf("runtime %v, start %s error %q", rt.log, op.F, op.Error)
	}
	// No watch at all: refused at once.
	rec = &memRecorder{}
	n = New(Config{Brokers: 3, Partitions: 3, Seed: 1}, rt, rt, nil, rec)
	stepUntil(t, n.Open(ev, time.Time{}), ev.Start)
	if op := rec.ops[len(rec.ops)-1]; !strings.Contains(op.Error, "cannot watch") {
		t.Errorf("without Observe: %q", op.Error)
	}
}

// TestTriggeredPart: a composite's armed part watches from the moment the
// part before it started, not from its share of the window, and fires on
// its event; one that waits out the window leaves the parts after it
// unstarted.
func TestTriggeredPart(t *testing.T) {
	base := map[int32]PartitionView{0: pv(3, 1, 3, 1, 2)}
	change := map[int32]PartitionView{0: pv(1, 2, 1, 2)}
	leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 3}, nil }
	rt, rec := &fakeRuntime{}, &memRecorder{}
	v := &views{seq: []map[int32]PartitionView{base, base, change}}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1, Observe: v.observe}, rt, rt, leaders, rec)
	ev := Event{Fault: "kill-leader+kill-leader:leader-change~1ms", Start: time.Second, End: 4 * time.Second}
	at := stepUntil(t, n.Open(ev, time.Time{}), ev.Start)
	if want := ev.Start + 2*defaultTriggerPoll + time.Millisecond; at != want || strings.Join(rt.log, ",") != "kill 3,kill 1" {
		t.Errorf("started at %s (want %s, not a third into the window): %v", at, want, rt.log)
	}
	if err := n.Close(context.Background(), ev.Fault); err != nil {
		t.Fatal(err)
	}
	var fs []string
	for _, op := range rec.ops {
		if op.Type == history.Info {
			fs = append(fs, op.F)
		}
	}
	if strings.Join(fs, ",") != "start-kill-leader,start-kill-leader,stop-kill-leader,stop-kill-leader" {
		t.Errorf("recorded %v", fs)
	}

	rt, rec = &fakeRuntime{}, &memRecorder{}
	v = &views{seq: []map[int32]PartitionView{base}}
	n = New(Config{Brokers: 3, Partitions: 1, Seed: 1, Observe: v.observe}, rt, rt, leaders, rec)
	ev.Fault = "kill-leader+pause-leader:isr-shrink+kill"
	stepUntil(t, n.Open(ev, time.Time{}), ev.Start)
	if strings.Join(rt.log, ",") != "kill 3" || len(rec.ops) != 4 || !strings.Contains(rec.ops[3].Error, "isr-shrink not seen") {
		t.Errorf("an armed part that never fired: runtime %v, ops %v", rt.log, rec.ops)
	}
}

// TestTriggerStaleViews: a view of an older epoch (a broker that has not
// heard of the election) is no event, nor is a partition first seen late;
// an ISR's change counts only between two answers of one broker in one
// epoch (another broker, or one just restarted, may answer with an ISR
// long gone), while an election counts whoever answered.
func TestTriggerStaleViews(t *testing.T) {
	known := func(int32) bool { return true }
	nm := func(int32) string { return "b" }
	at := func(from string, parts map[int32]PartitionView) []Answer {
		return []Answer{{From: from, Partitions: parts}}
	}
	w := &watch{views: map[int32]PartitionView{}, leaders: map[int32]int32{}}
	tr := &Trigger{Event: LeaderChange, Role: "new"}
	w.see(tr, at("a", map[int32]PartitionView{0: pv(1, 5, 1, 2)}), known, nm)
	if _, ok := w.see(tr, at("a", map[int32]PartitionView{0: pv(2, 4, 2), 1: pv(3, 9, 3)}), known, nm); ok {
		t.Error("an older epoch, or a new partition, fired")
	}
	if f, ok := w.see(tr, at("b", map[int32]PartitionView{0: pv(2, 6, 2), 1: pv(3, 9, 3)}), known, nm); !ok || f.partition != 0 || f.broker != 2 {
		t.Errorf("epoch 5 -> 6 from another broker: %+v %v", f, ok)
	}

	// Several brokers in one poll: the first to know of an election
	// tells it; within an epoch the broker a partition was heard from
	// keeps it while it answers.
	w = &watch{views: map[int32]PartitionView{}, leaders: map[int32]int32{}}
	two := func(a, b PartitionView) []Answer {
		return []Answer{{From: "a", Partitions: map[int32]PartitionView{0: a}}, {From: "b", Partitions: map[int32]PartitionView{0: b}}}
	}
	tr = &Trigger{Event: ISRShrink, Role: "left"}
	w.see(tr, two(pv(1, 5, 1, 2, 3), pv(1, 5, 1, 2, 3)), known, nm)
	if _, ok := w.see(tr, two(pv(1, 5, 1, 2, 3), pv(1, 5, 1, 3)), known, nm); ok || w.views[0].from != "a" {
		t.Errorf("another broker's ISR in the same epoch was taken: %+v", w.views[0])
	}
	if f, ok := w.see(tr, two(pv(1, 5, 1, 3), pv(1, 5, 1, 3)), known, nm); !ok || f.broker != 2 {
		t.Errorf("the ISR shrink of the broker it keeps to: %+v %v", f, ok)
	}
	tr = &Trigger{Event: LeaderChange, Role: "old"}
	if f, ok := w.see(tr, two(pv(1, 5, 1, 3), pv(3, 6, 3)), known, nm); !ok || f.broker != 1 || w.views[0].from != "b" {
		t.Errorf("an election only b knows of: %+v %v, %+v", f, ok, w.views[0])
	}

	for _, ev := range []string{ISRExpand, ISRShrink} {
		w = &watch{views: map[int32]PartitionView{}, leaders: map[int32]int32{}}
		tr = &Trigger{Event: ev, Role: "leader"}
		small, big := pv(1, 5, 1), pv(1, 5, 1, 2, 3)
		if ev == ISRShrink {
			small, big = big, small
		}
		w.see(tr, at("a", map[int32]PartitionView{0: small}), known, nm)
		if _, ok := w.see(tr, at("b", map[int32]PartitionView{0: big}), known, nm); ok {
			t.Errorf("%s between two brokers' answers fired", ev)
		}
		w.see(tr, at("b", map[int32]PartitionView{0: small}), known, nm)
		if _, ok := w.see(tr, at("b", map[int32]PartitionView{0: pv(2, 6, big.ISR...)}), known, nm); ok {
			t.Errorf("%s across an election fired", ev)
		}
		w.see(tr, at("b", map[int32]PartitionView{0: pv(2, 6, small.ISR...)}), known, nm)
		if f, ok := w.see(tr, at("b", map[int32]PartitionView{0: pv(2, 6, big.ISR...)}), known, nm); !ok || f.broker != 2 {
			t.Errorf("%s in one broker's answers, one epoch: %+v %v", ev, f, ok)
		}
	}
}
