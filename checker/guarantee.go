package checker

import (
	"fmt"
	"strings"
)

// Config is what the guarantee model needs to know about a test: the
// replication settings the producers and the topic used, the faults the
// nemesis injected, and how the client behaved.
type Config struct {
	// Acks is the producers' acks: 0, 1 or -1 (all).
	Acks              int `json:"acks"`
	MinInsyncReplicas int `json:"min_insync_replicas"`
	// Election is "clean" (only an ISR member may become leader) or
	// "unclean" (any live replica). Empty means clean, Kafka's default.
	Election          string `json:"election"`
	ReplicationFactor int    `json:"replication_factor"`
	// Faults names the fault kinds the nemesis used (see FaultClass).
	Faults []string `json:"faults"`
	// ClientRetries: the producer retries sends without idempotence, so
	// one value may be written twice.
	ClientRetries bool `json:"client_retries"`
	// MaxInFlight is the number of produce requests a producer may have
	// outstanding; above one, a retry may reorder sends.
	MaxInFlight int `json:"max_in_flight"`
}

// Fault classes of GUARANTEES.md, in increasing severity.
const (
	FaultsNone = "none"
	FaultsF1   = "F1" // crashes with the disk intact, pauses, partitions, slow followers
	FaultsF2   = "F2" // F1 plus loss of unsynced writes on one node at a time
	FaultsF3   = "F3" // unsynced writes lost on two or more nodes at once
)

// FaultClass maps the fault kinds a test used to the most severe class
// among them:
//
//   - "" and "none" add nothing;
//   - "lose-unsynced" and "lose-unsynced-one" (one node loses its unsynced
//     writes at a time) are F2;
//   - any other "lose-unsynced-…" name ("lose-unsynced-multi",
//     "-majority", "-all", …: several nodes at once) is F3;
//   - everything else is F1: process faults (kill, stop, pause, restart),
//     network faults (partition, isolate, delay, drop, slow-follower) and
//     unknown names. A fault that destroys data must say so in its name;
//     guessing that an unknown fault might would silently permit lost
//     writes, and a false alarm is easier to notice than a missed one.
func FaultClass(faults []string) string {
	class := FaultsNone
	rank := map[string]int{FaultsNone: 0, FaultsF1: 1, FaultsF2: 2, FaultsF3: 3}
	for _, f := range faults {
		c := FaultsF1
		switch name := strings.ToLower(strings.TrimSpace(f)); {
		case name == "" || name == "none":
			c = FaultsNone
		case name == "lose-unsynced" || name == "lose-unsynced-one":
			c = FaultsF2
		case strings.HasPrefix(name, "lose-unsynced"):
			c = FaultsF3
		}
		if rank[c] > rank[class] {
			class = c
		}
	}
	return class
}

// Permission says whether a configuration permits an anomaly, and why.
type Permission struct {
	Permitted bool   `json:"permitted"`
	Why       string `json:"why"`
}

// Permitted encodes the guarantee matrix and invariants of GUARANTEES.md:
// for every anomaly of Names, whether cfg permits it. Fault classes not
// named by the matrix are read as the closest row says: no faults as F1
// (an overloaded cluster can still fence a broker and change leaders), and
// F2/F3 wherever the matrix only promises "under F1".
func Permitted(cfg Config) map[string]Permission {
	class := FaultClass(cfg.Faults)
	unclean := strings.EqualFold(cfg.Election, "unclean")
	p := map[string]Permission{}

	// lost-write.
	var loss Permission
	switch {
	case unclean:
		loss = Permission{true, "unclean election: an out-of-sync replica may become leader, and the acknowledged records only the old leader had are truncated"}
	case cfg.Acks == 0:
		loss = Permission{true, "acks=0: nothing is acknowledged; a send may vanish without anyone knowing"}
	case cfg.Acks == 1:
		loss = Permission{true, "acks=1: the leader acknowledges before followers fetch; if it dies or is cut off first, a follower without the record becomes leader"}
	case class == FaultsF3:
		loss = Permission{true, fmt.Sprintf("acks=%d under F3: unsynced writes lost on several nodes at once can erase a committed record from every replica", cfg.Acks)}
	case class == FaultsF2 && cfg.MinInsyncReplicas <= 1:
		loss = Permission{true, fmt.Sprintf("acks=%d, min.insync.replicas=%d under F2: the ISR may shrink to the leader alone, which acknowledges and then loses its unsynced writes", cfg.Acks, cfg.MinInsyncReplicas)}
	case class == FaultsF2:
		loss = Permission{true, fmt.Sprintf("acks=%d, min.insync.replicas=%d under F2: only via the last replica standing (the ISR shrinks to one replica, which then loses unsynced writes; KIP-966 closes this)", cfg.Acks, cfg.MinInsyncReplicas)}
	default:
		loss = Permission{false, fmt.Sprintf("acks=%d, clean election, faults %s: an acknowledged record is on every ISR member and only an ISR member becomes leader, so crashes with intact disks, pauses and partitions cannot lose it", cfg.Acks, class)}
	}
	p[LostWriteName] = loss
	p[UnseenName] = Permission{loss.Permitted, "follows lost-write (an unseen value is lost, or beyond the final read): " + loss.Why}

	// inconsistent-offsets, replica-divergence.
	var rewrite Permission
	switch {
	case unclean:
		rewrite = Permission{true, "unclean election: an out-of-sync replica becomes leader, and the old leader truncates committed records and reuses their offsets"}
	case class == FaultsF2 || class == FaultsF3:
		rewrite = Permission{true, fmt.Sprintf("clean election under %s: a replica that loses its unsynced writes can lose committed records (last replica standing) and reuse their offsets", class)}
	default:
		rewrite = Permission{false, fmt.Sprintf("clean election, faults %s: consumers read below the high watermark, and every future leader has every record below it", class)}
	}
	p[InconsistentOffsetsName] = rewrite
	p[ReplicaDivergenceName] = Permission{rewrite.Permitted, rewrite.Why + "; replicas must converge on the committed prefix after healing unless that prefix can be rewritten"}
	p[PollSkipName] = Permission{rewrite.Permitted, "follows inconsistent-offsets (a truncated and rewritten log can make a consumer skip): " + rewrite.Why}
	p[NonmonotonicPollName] = Permission{rewrite.Permitted, "follows inconsistent-offsets (a truncated log sends a consumer back): " + rewrite.Why}

	// nonmonotonic-send, nonlinearizable-send.
	switch {
	case cfg.MaxInFlight > 1:
		p[NonmonotonicSendName] = Permission{true, fmt.Sprintf("max.in.flight=%d: a retried request may land after a later one", cfg.MaxInFlight)}
	case loss.Permitted:
		p[NonmonotonicSendName] = Permission{true, "follows lost-write (a truncation rewinds the log end, so a later send can land lower): " + loss.Why}
	default:
		p[NonmonotonicSendName] = Permission{false, "one request in flight per producer, and the log end only grows when no acknowledged record can be truncated: " + loss.Why}
	}
	switch {
	case loss.Permitted || rewrite.Permitted:
		why := loss.Why
		if !loss.Permitted {
			why = rewrite.Why
		}
		p[NonlinearizableSendName] = Permission{true, "a truncation rewinds the log end, so a send that began after another completed can get a lower offset: " + why}
	default:
		p[NonlinearizableSendName] = Permission{false, "offsets are assigned by one leader at a time from a log end that never moves back, so real-time order holds: " + loss.Why}
	}

	// duplicate.
	if cfg.ClientRetries {
		p[DuplicateName] = Permission{true, "client retries without idempotence: a retry of a send that was written writes its value again"}
	} else {
		p[DuplicateName] = Permission{false, "invariant: without client retries each value is sent by one request, so it can be written once"}
	}

	p[StaleReadName] = Permission{true, "permitted everywhere: Kafka does not promise linearizable reads; a new leader's high watermark can lag the old one's"}
	p[AbortedReadName] = Permission{false, "invariant: a send that failed definitely was not written (NOT_ENOUGH_REPLICAS before the append, an unknown topic, a request never sent)"}
	p[GarbageReadName] = Permission{false, "invariant: every record was sent by someone; anything else is corruption"}
	return p
}
