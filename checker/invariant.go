package checker

import (
	"fmt"

	"github.com/chaos-isr/chaos/history"
)

// ISRInvariantName is the anomaly of an in-sync replica that did not hold
// the committed log.
const ISRInvariantName = "isr-invariant"

// ISRInvariant finds the breaches of the invariant ISR replication rests
// on, every in-sync replica holds every committed record (each the same
// as where it was committed), that the history records (history.Invariant,
// by history.ClusterProcess): only a simulation records them, since it
// reads every replica at every instant. A replica admitted to the ISR
// before it caught up breaks it at once; a lost write needs a second
// failure within a round trip besides, which a search seldom lands.
//
// A run that could not watch the replicas (Config.Invariants unset) gives
// no evidence: no breach recorded is then not no breach, and the check is
// not applicable.
func ISRInvariant(h *History) Result {
	f := h.newFinding(ISRInvariantName)
	if !h.cfg.Invariants && len(h.violations) == 0 {
		f.notApplicable("%s", InvariantUnwatched)
		return f.result()
	}
	for _, pos := range h.violations {
		op := h.ops.op(pos)
		f.add(Unexplained, invariantDetail(op), op.Index)
	}
	return f.result()
}

func invariantDetail(op *history.Op) string {
	v := op.Value
	if v == nil {
		return fmt.Sprintf("at %s (op %d)", secs(op.Time), op.Index)
	}
	return fmt.Sprintf("partition %d: %s (at %s, op %d)", v.Partition, v.Value, secs(op.Time), op.Index)
}

// InvariantUnwatched is why a run that did not watch the replicas gives
// no evidence for isr-invariant.
const InvariantUnwatched = "only the simulation reads every replica at every instant (chaos sim, chaos hunt); a real cluster is seen through the protocol, which shows no follower's log"
