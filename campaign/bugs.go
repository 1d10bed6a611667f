package campaign

import (
	"slices"

	"github.com/chaos-isr/chaos/broker/bug"
)

// The bugs preset is a detection campaign: for every bug chaos can plant
// (package bug), in chaos bugs' order, the scenario that exposes it, each
// a cell that plants that bug alone, then one control cell per scenario,
// the same configuration, faults and flags with no bug planted. A run of a
// bug's cell catches it when its verdict is invalid (an anomaly the
// configuration forbids); a control cell's runs must all be valid, or the
// scenario itself raises false alarms and proves nothing.
//
// Each scenario was found in simulation (chaos sim --time-limit 30s with
// the campaign's short timings, 50 seeds or more, docs/detection.md has
// the table): the bug is caught in at least 90% of the seeds, and the
// same seeds without it are valid, but for isr-rejoin-before-epoch-start
// and stale-epoch-fetch, which no scenario exposes that often (their rows
// stay in the matrix, as caught or not, so that the gap shows).
//
// A cell's nemesis interval is in its own run args: the scenarios need
// very different ones (a window of 100 ms for leader changes in quick
// succession, one of 15 s for a two-step fault at a long lag time), so
// the preset sets none of its own.

// The scenarios, each shared by the bugs it exposes.
var (
	// A leader of one partition cut off from everyone (clients still
	// reach it) every 5 s: whatever it acknowledged, let consumers read or
	// kept for itself is tested against the leader elected meanwhile.
	partitionLeader = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "partition-leader",
		RunArgs: []string{"--nemesis-interval", "5s"}}
	// slow-followers-kill-leader at a long lag time (4 s, so the slowed
	// followers' fetches time out and they stay behind for the whole
	// window; the leader is killed 10 s into it, hence 15 s windows), one
	// window a run: a lone leader acknowledges (min.insync.replicas=1),
	// then dies, and a clean election must leave the partition offline.
	slowFollowersKillLeader = CellSpec{Acks: -1, MinInsyncReplicas: 1, Election: "clean", Nemesis: "slow-followers-kill-leader",
		RunArgs: []string{"--nemesis-interval", "15s", "--replica-lag-time-max-ms", "4000"}}
	// The leader of the one partition killed for about 100 ms every
	// 100 ms or so: leaders change every few hundred milliseconds, faster
	// than followers hear of it (a heartbeat every 250 ms), the fast
	// successive failovers of KIP-101's and KIP-279's bugs.
	quickLeaderChanges = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "kill-leader",
		RunArgs: []string{"--nemesis-interval", "100ms", "--partitions", "1"}}
	// The same under acks=1, whose leaders keep unreplicated suffixes: a
	// follower's log diverges from the leader's more often.
	quickLeaderChangesAcks1 = CellSpec{Acks: 1, MinInsyncReplicas: 1, Election: "clean", Nemesis: "kill-leader",
		RunArgs: []string{"--nemesis-interval", "100ms", "--partitions", "1"}}
	// Two of the three brokers killed for 5 to 9 s: the survivor leads
	// every partition with an ISR of one, below min.insync.replicas, for
	// seconds on end (the monitor must see it over more than the
	// metadata lag ack-below-min-isr allows, 1 s each side).
	killMajority = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "kill-majority",
		RunArgs: []string{"--nemesis-interval", "7s"}}
	// A slowed follower holds acks=-1 writes past a 1 s request timeout,
	// and one producer makes the batch that times out the leader's last.
	slowFollowerTimeouts = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "slow-follower",
		RunArgs: []string{"--nemesis-interval", "5s", "--request-timeout", "1s", "--concurrency", "1"}}
	// A broker killed with its unsynced writes lost (fsync never: all of
	// them), which turns the brokers' --lose-unsynced on.
	loseUnsynced = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "lose-unsynced",
		RunArgs: []string{"--nemesis-interval", "5s"}}
	// slowFollowerTimeouts with idempotent producers that retry: an
	// acks=-1 write times out behind the slowed follower and is sent
	// again to the leader that has it, which must know it by its
	// sequence number.
	retryingIdempotent = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "slow-follower",
		RunArgs: []string{"--nemesis-interval", "5s", "--request-timeout", "1s", "--retries", "5", "--idempotent"}}
	// The consumers a consumer group (--sub-via subscribe) whose
	// coordinator is cut off from the other brokers for 9 to 15 s, once a
	// run: its members, who still reach it, commit to it while another
	// broker takes the group over and, its members silent there for a
	// session, empties it; after the heal they join the new coordinator
	// and fetch the offsets it kept.
	coordinatorCut = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "partition-coordinator",
		RunArgs: []string{"--nemesis-interval", "12s", "--sub-via", "subscribe"}}
	// A member of the consumer group paused for 9 to 15 s, once a run:
	// its group removes it after its session timeout and rebalances; on
	// resuming it commits in the generation it had.
	memberPause = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "pause-consumer",
		RunArgs: []string{"--nemesis-interval", "12s", "--sub-via", "subscribe"}}
	// partitionLeader under the transactional workload: transactions
	// commit and abort while a partition's leadership moves, and
	// read_committed readers read from whichever replica leads.
	txnPartitionLeader = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "partition-leader",
		RunArgs: []string{"--nemesis-interval", "5s", "--workload", "txn"}}
	// The transactional workload's requests to one broker held past the
	// clients' timeout (250 ms, plus the 2 s of grace) about every
	// second, with 20 transactional sessions: an EndTxn whose retry was
	// answered arrives while its producer's next transaction is open.
	txnDelayedRequests = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "delay-client",
		RunArgs: []string{"--nemesis-interval", "1s", "--workload", "txn", "--request-timeout", "250ms", "--concurrency", "20"}}
	// A transactional session paused about every 250 ms, 10 sessions: a
	// new incarnation takes the paused one's place and fences it, and the
	// zombie wakes in the transaction it was in and writes.
	txnZombies = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "pause-producer",
		RunArgs: []string{"--nemesis-interval", "250ms", "--workload", "txn", "--concurrency", "10"}}
	// KIP-966's case under --election elr, every 5 s: a partition's
	// followers stopped cleanly, its leader, alone in the ISR, killed with
	// its unsynced writes and restarted while they are down. The ELR must
	// wait for a follower; the leader that came back must not lead, nor
	// its high watermark have moved without them.
	elrStopFollowers = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "elr", Nemesis: "stop-followers-kill-leader",
		RunArgs: []string{"--nemesis-interval", "5s"}}
	// A node's clock stepped by 1 s to 10 min, either way, about every
	// second, and set right at the end of each window: a broker whose
	// deadlines were set on the stepped clock must not wait out the step.
	clockJumps = CellSpec{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "clock-jump",
		RunArgs: []string{"--nemesis-interval", "1s"}}
)

// bugsCells are the bugs preset's cells: one per bug in chaos bugs' order,
// then the control cells.
var bugsCells = withControls(
	plant(bug.AckBeforeReplicate, partitionLeader),
	plant(bug.HWIgnoresISR, partitionLeader),
	plant(bug.ISREarlyRejoin, slowFollowersKillLeader),
	// Not caught: the follower lacks the records only until the answer
	// to the fetch that readmitted it, one round trip.
	plant(bug.ISRRejoinBeforeEpochStart, quickLeaderChanges),
	plant(bug.ReadPastHW, partitionLeader),
	plant(bug.TruncateToHW, quickLeaderChanges),
	plant(bug.NoFollowerTruncation, partitionLeader),
	plant(bug.EpochTruncationSingleRound, quickLeaderChanges),
	// Rarely caught: a zombie follower needs stale metadata across two
	// leader changes while it still reaches the leader.
	plant(bug.StaleEpochFetch, quickLeaderChangesAcks1),
	plant(bug.MinISRIgnored, killMajority),
	plant(bug.ISRShrinkWithoutController, partitionLeader),
	plant(bug.OffsetReuse, slowFollowerTimeouts),
	plant(bug.IdempotenceNoDedup, retryingIdempotent),
	// Liveness: a partition that never converges, a consumer that never
	// gets past the new epoch's start, after partition-leader has healed.
	plant(bug.FollowerStallsAfterTruncation, partitionLeader),
	plant(bug.FetchStallsBelowEpochStart, partitionLeader),
	plant(bug.TruncationIndexOutOfRange, partitionLeader),
	plant(bug.CommitBeforeReplicate, coordinatorCut),
	plant(bug.GroupForgottenOnFailover, coordinatorCut),
	plant(bug.CommitStaleGeneration, memberPause),
	plant(bug.LSOPastOpenTxn, txnPartitionLeader),
	plant(bug.AbortLostOnFollower, txnPartitionLeader),
	plant(bug.UncleanWhenClean, slowFollowersKillLeader),
	plant(bug.RecoveryKeepsTornTail, loseUnsynced),
	plant(bug.TxnEpochNotBumped, txnDelayedRequests),
	plant(bug.ZombieNotFenced, txnZombies),
	plant(bug.ELRKeepsUnclean, elrStopFollowers),
	plant(bug.ELRHWBelowMin, elrStopFollowers),
	plant(bug.DeadlinesOnWallClock, clockJumps),
)

// plant is scenario s planting bug b alone.
func plant(b bug.Bug, s CellSpec) CellSpec {
	c := s
	c.Bugs = []string{b.String()}
	c.RunArgs = slices.Clone(s.RunArgs)
	return c
}

// withControls returns cells followed by one control cell for each
// scenario they use (configuration, faults and run args), in the order
// the scenarios first appear: the same cell with no bug planted.
func withControls(cells ...CellSpec) []CellSpec {
	out := slices.Clone(cells)
	var controls []CellSpec
	for _, c := range cells {
		ctl := c
		ctl.Bugs = nil
		ctl.RunArgs = slices.Clone(c.RunArgs)
		if !slices.ContainsFunc(controls, func(x CellSpec) bool { return sameScenario(x, ctl) }) {
			controls = append(controls, ctl)
		}
	}
	return append(out, controls...)
}

// sameScenario says whether two cells run the same configuration, faults
// and flags, whatever bugs they plant.
func sameScenario(a, b CellSpec) bool {
	return a.Acks == b.Acks && a.MinInsyncReplicas == b.MinInsyncReplicas && a.Election == b.Election &&
		a.Nemesis == b.Nemesis && slices.Equal(a.RunArgs, b.RunArgs)
}
