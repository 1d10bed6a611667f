package checker

import (
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

// violation writes a breach of the ISR invariant as the simulator records
// it (an invoke and its info completion at once).
func (b *hb) violation(partition, broker int32, what string) {
	v := &history.Value{Topic: "t", Partition: partition, Broker: history.Int32(broker), Value: what}
	b.add(history.ClusterProcess, history.Invoke, history.Invariant, v, "")
	b.t -= 10
	b.add(history.ClusterProcess, history.Info, history.Invariant, v, "")
}

// TestISRInvariant: a recorded breach is one instance, forbidden under
// clean election and F1 and permitted where committed truncation is
// (unclean election, lost unsynced writes); a history from a run that did
// not watch the replicas gives the check no evidence.
func TestISRInvariant(t *testing.T) {
	clean := func(b *hb) {
		b.healthy(0)
		b.send(0, 0, "a", 0)
		b.final(0, 1, "0=a")
		for br := int32(1); br <= 3; br++ {
			b.replica(0, br, 1, "0=a")
		}
	}
	b := &hb{}
	clean(b)
	b.violation(0, 3, "broker 3 is in the ISR with its log ending at offset 0, below the committed offset 1")

	watched := strict
	watched.Invariants = true
	res := Check(b.ops, watched, Options{SkipLinearizability: true})
	r, _ := res.Get(ISRInvariantName)
	if res.Valid != Invalid || r.Count != 1 || r.Forbidden != 1 || !strings.Contains(r.Details[0], "partition 0: broker 3 is in the ISR") {
		t.Fatalf("clean F1: verdict %s, %+v", res.Valid, r)
	}
	unclean := watched
	unclean.Election = "unclean"
	if r, _ := Check(b.ops, unclean, Options{SkipLinearizability: true}).Get(ISRInvariantName); r.Forbidden != 0 || !r.Expected {
		t.Errorf("unclean: %+v, want the breach permitted", r)
	}
	for _, class := range []string{FaultsF2, FaultsF3} {
		if p := PermittedUnder(watched, class)[ISRInvariantName]; !p.Permitted {
			t.Errorf("%s: isr-invariant forbidden (%s), want permitted as committed truncation is", class, p.Why)
		}
	}
	if p := PermittedUnder(watched, FaultsF1)[ISRInvariantName]; p.Permitted || !strings.Contains(p.Why, "KAFKA-7128") {
		t.Errorf("F1: %+v", p)
	}

	// No breach recorded: valid only where the replicas were watched.
	b = &hb{}
	clean(b)
	if r, _ := Check(b.ops, watched, Options{SkipLinearizability: true}).Get(ISRInvariantName); r.Valid != Valid || r.NotApplicable {
		t.Errorf("watched, no breach: %+v, want valid", r)
	}
	r, _ = Check(b.ops, strict, Options{SkipLinearizability: true}).Get(ISRInvariantName)
	if !r.NotApplicable || !strings.Contains(r.NotChecked, "only the simulation") {
		t.Errorf("unwatched: %+v, want not applicable", r)
	}
}
