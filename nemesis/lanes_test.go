package nemesis

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// TestLanesCheck: a network window may hold while process windows come
// and go beside it; windows of one lane, and a kind that runs alone
// (both kinds of fault at once, or lost unsynced writes), may not overlap.
func TestLanesCheck(t *testing.T) {
	ok := "zombie-follower@1s+10s,kill-leader@2s+1s,pause@4s+1s,partition+latency@12s+1s,kill@12.5s+1s"
	s, err := ParseSchedule(ok)
	if err != nil {
		t.Fatalf("%s: %v", ok, err)
	}
	lanes := s.Lanes()
	if len(lanes) != 2 || lanes[0].String() != "kill-leader@2s+1s,pause@4s+1s,kill@12.5s+1s" ||
		lanes[1].String() != "zombie-follower@1s+10s,partition+latency@12s+1s" {
		t.Fatalf("lanes %v", lanes)
	}
	one := Schedule{{Fault: "kill", Start: time.Second, End: 2 * time.Second}, {Fault: "partition", Start: 3 * time.Second, End: 4 * time.Second}}
	if l := one.Lanes(); len(l) != 1 || !reflect.DeepEqual(l[0], one) {
		t.Fatalf("a schedule without overlaps is one lane, as always: %v", l)
	}
	for text, why := range map[string]string{
		"partition@1s+10s,one-way@2s+1s":                       "windows of network faults come one after another",
		"kill@1s+10s,pause@2s+1s":                              "windows of process faults come one after another",
		"partition@1s+10s,slow-followers-kill-leader@2s+5s":    "slow-followers-kill-leader runs alone",
		"partition@1s+10s,kill+latency@2s+1s":                  "kill+latency runs alone",
		"lose-unsynced@1s+10s,partition@2s+1s":                 "lose-unsynced runs alone",
		"zombie-follower@2s+10s,kill@1s+1s":                    "windows are written in the order they start",
		"partition@1s+10s,kill@2s+1s,one-way@3s+1s,kill@5s+1s": "one-way@3s+1s: starts before partition@1s+10s ends",
	} {
		if _, err := ParseSchedule(text); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v; want %q", text, err, why)
		}
	}
}

// TestLanesRun: each lane heals what it did and only that (the network
// lane's heal leaves the process lane's kill in place), and the two
// lanes' operations pair in the history.
func TestLanesRun(t *testing.T) {
	leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 2}, nil }
	rt, rec := &fakeRuntime{}, &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1}, rt, rt, leaders, rec)
	ms := time.Millisecond
	s := Schedule{{Fault: "zombie-follower", Start: 10 * ms, End: 200 * ms}, {Fault: "kill-leader", Start: 50 * ms, End: 100 * ms},
		{Fault: "pause-leader", Start: 150 * ms, End: 300 * ms}}
	if err := n.Run(context.Background(), time.Now(), s); err != nil {
		t.Fatal(err)
	}
	want := []string{"one-way [controller] [broker-", "kill 2", "restart 2", "pause 2", "heal-network", "resume 2"}
	if len(rt.log) != len(want) {
		t.Fatalf("actions %v, want %v", rt.log, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(rt.log[i], w) {
			t.Fatalf("actions %v, want %v", rt.log, want)
		}
	}
	if strings.Contains(rt.log[0], "broker-2") {
		t.Errorf("the zombie is a follower, not the leader: %s", rt.log[0])
	}
	if _, err := history.Pairs(rec.ops); err != nil {
		t.Fatalf("nemesis ops do not pair: %v", err)
	}
	var fs []string
	for _, op := range rec.ops {
		if op.Type == history.Info {
			fs = append(fs, op.F)
		}
	}
	if got := strings.Join(fs, " "); got != "start-zombie-follower start-kill-leader stop-kill-leader start-pause-leader stop-zombie-follower stop-pause-leader" {
		t.Fatalf("history %s", got)
	}
	if err := n.HealAll(context.Background()); err != nil || len(rec.ops) != 12 {
		t.Fatalf("HealAll after a healed schedule did something: %v %d ops", err, len(rec.ops))
	}
}

// TestFamily: each kind's family, as the report colours its windows: what
// destroys data on disk, what stops or kills a process (a network fault
// that also kills is a process fault), what only touches links.
func TestFamily(t *testing.T) {
	want := map[string]string{
		"lose-unsynced": FamilyDisk, "kill": FamilyProcess, "kill-controller": FamilyProcess, "stop": FamilyProcess,
		"pause-leader": FamilyProcess, "slow-followers-kill-leader": FamilyProcess, "partition": FamilyNetwork,
		"zombie-follower": FamilyNetwork, "latency": FamilyNetwork, "kill+partition": FamilyProcess,
		"partition+kill": FamilyNetwork, "kill-leader:leader-change/new~5ms": FamilyProcess,
	}
	for name, fam := range want {
		f, ok := Lookup(name)
		if !ok {
			t.Fatalf("no fault %s", name)
		}
		if got := f.Family(); got != fam {
			t.Errorf("%s: family %s, want %s", name, got, fam)
		}
	}
	fams := Families(Names())
	for _, k := range Names() {
		if fams[k] == "" {
			t.Errorf("%s has no family", k)
		}
	}
}
