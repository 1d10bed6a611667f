package checker

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFaultClass: the class comes from the brokers each window killed and
// the storage settings that make a kill destroy data, never from a fault's
// name.
func TestFaultClass(t *testing.T) {
	lazy := Config{LoseUnsynced: true, Fsync: "never"}
	for _, c := range []struct {
		cfg  Config
		runs []FaultRun
		want string
	}{
		{Config{}, nil, FaultsNone},
		{Config{}, []FaultRun{{Kind: "none"}}, FaultsNone},
		{Config{}, []FaultRun{{Kind: "kill", KilledBrokers: 1}, {Kind: "pause", KilledBrokers: 0}, {Kind: "partition", KilledBrokers: 0}, {Kind: "slow-follower", KilledBrokers: 0}}, FaultsF1},
		// Names mean nothing to the model: only what a window killed.
		{lazy, []FaultRun{{Kind: "lose-unsynced-multi", KilledBrokers: 0}, {Kind: "something-new", KilledBrokers: 0}}, FaultsF1},
		// With brokers that keep unsynced writes in memory, every kill
		// loses them: one broker is F2, several at once F3.
		{lazy, []FaultRun{{Kind: "kill", KilledBrokers: 1}}, FaultsF2},
		{lazy, []FaultRun{{Kind: "kill-leader", KilledBrokers: 1}, {Kind: "pause", KilledBrokers: 0}}, FaultsF2},
		{lazy, []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}, FaultsF3},
		{lazy, []FaultRun{{Kind: "kill-minority", KilledBrokers: 2}}, FaultsF3},
		{lazy, []FaultRun{{Kind: "kill-controller", KilledBrokers: 0}, {Kind: "stop", KilledBrokers: 0}}, FaultsF1},
		{Config{Fsync: "interval:100ms", LoseUnsynced: true}, []FaultRun{{Kind: "slow-followers-kill-leader", KilledBrokers: 1}}, FaultsF2},
		// Nothing is unsynced under fsync always; without the storage
		// mode a kill leaves the page cache intact.
		{Config{Fsync: "always", LoseUnsynced: true}, []FaultRun{{Kind: "lose-unsynced", KilledBrokers: 1}}, FaultsF1},
		// A damaged disk loses data whatever the storage settings.
		{Config{Fsync: "always"}, []FaultRun{{Kind: "corrupt", KilledBrokers: 1, DamagedBrokers: 1}}, FaultsF2},
		{Config{}, []FaultRun{{Kind: "stale-disk", KilledBrokers: 1, DamagedBrokers: 1}, {Kind: "truncate-file", KilledBrokers: 1, DamagedBrokers: 1}}, FaultsF2},
		{Config{Fsync: " Always ", LoseUnsynced: true}, []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}, FaultsF1},
		{Config{Fsync: "never"}, []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}, FaultsF1},
	} {
		if got := FaultClass(c.cfg, c.runs); got != c.want {
			t.Errorf("FaultClass(%+v, %v) = %s, want %s", c.cfg, c.runs, got, c.want)
		}
	}
}

// TestPermittedMatrix walks the rows of the matrix of docs/guarantees.md
// and its invariants.
func TestPermittedMatrix(t *testing.T) {
	f1 := []string{"kill", "partition"}
	// F2 and F3: brokers that lose unsynced writes, killed one at a time
	// or several at once.
	f2 := func(c Config) Config {
		c.LoseUnsynced, c.Declared = true, []FaultRun{{Kind: "kill", KilledBrokers: 1}}
		return c
	}
	f3 := func(c Config) Config {
		c.LoseUnsynced, c.Declared = true, []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}
		return c
	}
	// Letters: the anomalies checked for each row, in this order.
	// ack-below-min-isr is forbidden wherever acks=-1 and
	// min.insync.replicas > 1, whatever the election and the faults.
	names := []string{LostWriteName, NonmonotonicSendName, InconsistentOffsetsName, ReplicaDivergenceName,
		StaleReadName, DuplicateName, UnseenName, PollSkipName, NonmonotonicPollName, NonlinearizableSendName,
		AbortedReadName, GarbageReadName, AckBelowMinISRName}
	// One letter per name: P every cause permitted, p some, - none.
	rows := []struct {
		name string
		cfg  Config
		want string
	}{
		{"acks=0 clean F1", Config{Acks: 0, Election: "clean", Faults: f1}, "pp--P-p--p--P"},
		{"acks=0 unclean", Config{Acks: 0, Election: "unclean", Faults: f1}, "PppPP-PPPp--P"},
		{"acks=1 clean F1", Config{Acks: 1, Election: "clean", Faults: f1}, "pp--P-p--p--P"},
		{"acks=1 clean no faults", Config{Acks: 1, Faults: nil}, "pp--P-p--p--P"},
		{"acks=1 clean F2", f2(Config{Acks: 1}), "PppPP-PPPp--P"},
		{"acks=-1 min.insync=1 clean F1", Config{Acks: -1, MinInsyncReplicas: 1, Faults: f1}, "----P-------P"},
		{"acks=-1 min.insync=1 clean F2", f2(Config{Acks: -1, MinInsyncReplicas: 1}), "PppPP-PPPp--P"},
		{"acks=-1 min.insync=2 clean F1", Config{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Faults: f1}, "----P--------"},
		{"acks=-1 min.insync=2 clean none", Config{Acks: -1, MinInsyncReplicas: 2}, "----P--------"},
		{"acks=-1 min.insync=2 clean F2", f2(Config{Acks: -1, MinInsyncReplicas: 2}), "PppPP-PPPp---"},
		{"acks=-1 min.insync=2 clean F3", f3(Config{Acks: -1, MinInsyncReplicas: 2}), "PppPP-PPPp---"},
		{"acks=-1 min.insync=2 unclean F1", Config{Acks: -1, MinInsyncReplicas: 2, Election: "unclean", Faults: f1}, "PppPP-PPPp---"},
		{"acks=1 unclean", Config{Acks: 1, Election: "UNCLEAN"}, "PppPP-PPPp--P"},
		{"client retries", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f1, ClientRetries: true}, "----PP-------"},
		{"two in flight", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f1, MaxInFlight: 2}, "-p--P--------"},
	}
	for _, r := range rows {
		p := Permitted(r.cfg)
		if len(p) != len(namesFor(r.cfg.Transactions)) {
			t.Fatalf("%s: %d permissions for %d anomalies", r.name, len(p), len(namesFor(r.cfg.Transactions)))
		}
		for i, name := range names {
			got := "-"
			switch {
			case p[name].All:
				got = "P"
			case p[name].Permitted:
				got = "p"
			}
			if got != r.want[i:i+1] {
				t.Errorf("%s: %s is %q, want %q (%s)", r.name, name, got, r.want[i:i+1], p[name].Why)
			}
			if p[name].Why == "" {
				t.Errorf("%s: %s has no reason", r.name, name)
			}
		}
	}
}

// lostWriteHistory: an acknowledged record was removed from the final read
// by hand.
func lostWriteHistory() *hb {
	b := &hb{}
	b.nemesis("start-kill", "kill")
	b.send(0, 0, "0-1", 0)
	b.send(1, 0, "1-1", 1)
	b.poll(10, 0, 0, 2, "0=0-1 1=1-1")
	b.send(0, 0, "0-2", 2)
	b.send(1, 0, "1-2", 3)
	b.nemesis("stop-kill", "kill")
	b.final(0, 4, "0=0-1 1=1-1 3=1-2")
	for br := int32(1); br <= 3; br++ {
		b.replica(0, br, 4, "0=0-1 1=1-1 3=1-2")
	}
	return b
}

func TestCheckLostWriteInvalidUnderAcksAll(t *testing.T) {
	b := lostWriteHistory()
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Election: "clean", ReplicationFactor: 3, Faults: []string{"kill"}}
	res := Check(b.ops, cfg, Options{})
	if res.Valid != Invalid || res.ExitCode() != 1 {
		t.Fatalf("verdict %s exit %d: %+v", res.Valid, res.ExitCode(), res.Results)
	}
	lw, _ := res.Get(LostWriteName)
	if lw.Valid != Invalid || lw.Expected || lw.Count != 1 || !strings.Contains(lw.Details[0], `"0-2"`) {
		t.Fatalf("lost-write %+v", lw)
	}
	if strings.Join(res.Unexpected, ",") != "lost-write,unseen" {
		t.Fatalf("unexpected %v", res.Unexpected)
	}
	for i, r := range res.Results {
		if r.Name != Names()[i] {
			t.Fatalf("result %d is %s, want %s", i, r.Name, Names()[i])
		}
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"valid":"false"`) || !strings.Contains(string(data), `"fault_class":"F1"`) {
		t.Fatalf("json %s", data)
	}
}

func TestCheckLostWriteExpectedUnderAcksOne(t *testing.T) {
	b := lostWriteHistory()
	cfg := Config{Acks: 1, Election: "clean", ReplicationFactor: 3, Faults: []string{"kill"}}
	res := Check(b.ops, cfg, Options{})
	if res.Valid != Valid || res.ExitCode() != 0 {
		t.Fatalf("verdict %s: %+v", res.Valid, res.Results)
	}
	lw, _ := res.Get(LostWriteName)
	if lw.Valid != Invalid || !lw.Expected || lw.Count != 1 || lw.Why == "" {
		t.Fatalf("lost-write %+v", lw)
	}
	if strings.Join(res.Expected, ",") != "lost-write,unseen" || len(res.Unexpected) != 0 {
		t.Fatalf("expected %v unexpected %v", res.Expected, res.Unexpected)
	}
}

func TestCheckVerdicts(t *testing.T) {
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	// A clean history is valid.
	b := concurrentHistory()
	b.healthy(0)
	if res := Check(b.ops, cfg, Options{}); res.Valid != Valid || res.ExitCode() != 0 {
		t.Fatalf("clean: %s %+v", res.Valid, res.Results)
	}
	// Without a final read lost-write cannot be judged: unknown.
	b = &hb{}
	b.send(0, 0, "a", 0)
	b.poll(10, 0, 0, 1, "0=a")
	if res := Check(b.ops, cfg, Options{}); res.Valid != Unknown || res.ExitCode() != 2 {
		t.Fatalf("no final read: %s %+v", res.Valid, res.Results)
	}
	// Under acks=1 a lost record that was read by a consumer is
	// forbidden, so a polled value the history cannot judge leaves
	// lost-write open...
	if lw, _ := Check(b.ops, Config{Acks: 1}, Options{}).Get(LostWriteName); lw.Valid != Unknown || lw.Expected || lw.Undecided != 1 {
		t.Fatalf("no final read, acks=1, polled: %+v", lw)
	}
	// ... while one acknowledged and never read would be permitted lost.
	b = &hb{}
	b.send(0, 0, "a", 0)
	if lw, _ := Check(b.ops, Config{Acks: 1}, Options{}).Get(LostWriteName); lw.Valid != Unknown || !lw.Expected || lw.Undecided != 0 {
		t.Fatalf("no final read, acks=1, not polled: %+v", lw)
	}
	// A stale read is permitted everywhere: listed, expected, valid.
	b = &hb{}
	b.send(0, 0, "a", 0)
	b.endOffset(10, 0, 0)
	b.send(0, 0, "b", 1)
	b.poll(11, 0, 0, 2, "0=a 1=b")
	b.final(0, 2, "0=a 1=b")
	for br := int32(1); br <= 3; br++ {
		b.replica(0, br, 2, "0=a 1=b")
	}
	b.healthy(0)
	res := Check(b.ops, cfg, Options{})
	if sr, _ := res.Get(StaleReadName); res.Valid != Valid || sr.Valid != Invalid || !sr.Expected {
		t.Fatalf("stale read: %s %+v", res.Valid, sr)
	}
	// Skipping linearizability leaves its results unknown.
	if res := Check(concurrentHistory().ops, cfg, Options{SkipLinearizability: true}); res.Valid != Unknown {
		t.Fatalf("skipped: %s", res.Valid)
	}
	if ExitCode("maybe") != 3 {
		t.Fatal("a non-verdict must not map to 0, 1 or 2")
	}
}

// TestELROneAtATime: under ELR, data lost on one node and then another
// before the cluster could have recovered counts as lost on several at
// once (F3), where windows far apart stay F2; clean election is not
// concerned (F2 permits its loss either way).
func TestELROneAtATime(t *testing.T) {
	sec := int64(1e9)
	cfg := Config{Election: "elr", LoseUnsynced: true, LivenessBoundMs: 10000}
	far := []FaultRun{{Kind: "lose-unsynced", KilledBrokers: 1, StartNs: 1 * sec, EndNs: 2 * sec}, {Kind: "lose-unsynced", KilledBrokers: 1, StartNs: 9 * sec, EndNs: 10 * sec}}
	near := []FaultRun{{Kind: "lose-unsynced", KilledBrokers: 1, StartNs: 1 * sec, EndNs: 2 * sec}, {Kind: "kill", KilledBrokers: 1, StartNs: 2*sec + sec/10, EndNs: 3 * sec}}
	if got := FaultClass(cfg, far); got != FaultsF2 {
		t.Errorf("windows 7 s apart: %s, want F2", got)
	}
	if got := FaultClass(cfg, near); got != FaultsF3 {
		t.Errorf("windows 100 ms apart: %s, want F3", got)
	}
	cfg.Election = "clean"
	if got := FaultClass(cfg, near); got != FaultsF2 {
		t.Errorf("clean election, windows 100 ms apart: %s, want F2", got)
	}
}
