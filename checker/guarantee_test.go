package checker

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFaultClass(t *testing.T) {
	for _, c := range []struct {
		faults []string
		want   string
	}{
		{nil, FaultsNone},
		{[]string{"none"}, FaultsNone},
		{[]string{"kill", "pause", "partition", "slow-follower"}, FaultsF1},
		{[]string{"isolate-leader", "delay"}, FaultsF1},
		{[]string{"kill", "lose-unsynced"}, FaultsF2},
		{[]string{"lose-unsynced-multi", "kill"}, FaultsF3},
		{[]string{"lose-unsynced", "lose-unsynced-majority"}, FaultsF3},
		{[]string{"something-new"}, FaultsF1},
	} {
		if got := FaultClass(c.faults); got != c.want {
			t.Errorf("FaultClass(%v) = %s, want %s", c.faults, got, c.want)
		}
	}
}

// TestPermittedMatrix walks the rows of GUARANTEES.md's matrix and its
// invariants.
func TestPermittedMatrix(t *testing.T) {
	f1 := []string{"kill", "partition"}
	f2 := []string{"kill", "lose-unsynced"}
	f3 := []string{"lose-unsynced-multi"}
	// Letters: the anomalies checked for each row, in this order.
	names := []string{LostWriteName, NonmonotonicSendName, InconsistentOffsetsName, ReplicaDivergenceName,
		StaleReadName, DuplicateName, UnseenName, PollSkipName, NonmonotonicPollName, NonlinearizableSendName,
		AbortedReadName, GarbageReadName}
	// One letter per name: P permitted, - promised absent.
	rows := []struct {
		name string
		cfg  Config
		want string
	}{
		{"acks=0 clean F1", Config{Acks: 0, Election: "clean", Faults: f1}, "PP--P-P--P--"},
		{"acks=0 unclean", Config{Acks: 0, Election: "unclean", Faults: f1}, "PPPPP-PPPP--"},
		{"acks=1 clean F1", Config{Acks: 1, Election: "clean", Faults: f1}, "PP--P-P--P--"},
		{"acks=1 clean no faults", Config{Acks: 1, Faults: nil}, "PP--P-P--P--"},
		{"acks=1 clean F2", Config{Acks: 1, Faults: f2}, "PPPPP-PPPP--"},
		{"acks=-1 min.insync=1 clean F1", Config{Acks: -1, MinInsyncReplicas: 1, Faults: f1}, "----P-------"},
		{"acks=-1 min.insync=1 clean F2", Config{Acks: -1, MinInsyncReplicas: 1, Faults: f2}, "PPPPP-PPPP--"},
		{"acks=-1 min.insync=2 clean F1", Config{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Faults: f1}, "----P-------"},
		{"acks=-1 min.insync=2 clean none", Config{Acks: -1, MinInsyncReplicas: 2}, "----P-------"},
		{"acks=-1 min.insync=2 clean F2", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f2}, "PPPPP-PPPP--"},
		{"acks=-1 min.insync=2 clean F3", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f3}, "PPPPP-PPPP--"},
		{"acks=-1 min.insync=2 unclean F1", Config{Acks: -1, MinInsyncReplicas: 2, Election: "unclean", Faults: f1}, "PPPPP-PPPP--"},
		{"acks=1 unclean", Config{Acks: 1, Election: "UNCLEAN"}, "PPPPP-PPPP--"},
		{"client retries", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f1, ClientRetries: true}, "----PP------"},
		{"two in flight", Config{Acks: -1, MinInsyncReplicas: 2, Faults: f1, MaxInFlight: 2}, "-P--P-------"},
	}
	for _, r := range rows {
		p := Permitted(r.cfg)
		if len(p) != len(Names()) {
			t.Fatalf("%s: %d permissions for %d anomalies", r.name, len(p), len(Names()))
		}
		for i, name := range names {
			want := r.want[i] == 'P'
			if p[name].Permitted != want {
				t.Errorf("%s: %s permitted=%v, want %v (%s)", r.name, name, p[name].Permitted, want, p[name].Why)
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
	// ... unless lost-write is permitted anyway.
	if res := Check(b.ops, Config{Acks: 1}, Options{}); res.Valid != Valid {
		t.Fatalf("no final read, acks=1: %s %+v", res.Valid, res.Results)
	}
	// A stale read is permitted everywhere: listed, expected, valid.
	b = &hb{}
	b.send(0, 0, "a", 0)
	b.endOffset(10, 0, 0)
	b.final(0, 1, "0=a")
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
