// Package bug is the registry of the bugs that can be planted in the broker,
// the controller and the storage on purpose: each is a setting, off by
// default, that breaks one replication rule at the one place the code applies
// it. A tester that has never been shown a bug cannot say what it misses;
// these are the bugs that have really hit Kafka-style systems (or the rules
// whose breaking they stand for), so that a run with one enabled measures
// whether, how fast and with which checker the tester catches it.
//
// The package imports nothing: the broker stays a program of its own, and a
// driver (server, memdriver) or a command line passes a Set into
// core.Config, controller.Config and storage's options.
package bug

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Node is the kind of node a bug lives in: the process whose code it changes.
type Node string

const (
	Broker     Node = "broker"     // broker/core: replication, ISR, HW, acks, truncation
	Controller Node = "controller" // broker/controller: fencing, elections, ISR changes
	Storage    Node = "storage"    // broker/storage: the log and its recovery (run by the broker process)
)

// Process is the command that runs a node's code: storage runs inside the
// broker.
func (n Node) Process() Node {
	if n == Storage {
		return Broker
	}
	return n
}

// Bug names one planted bug. The constants are its identity in code; Name
// is its identity everywhere else (flags, test.json, reports).
type Bug uint8

// The bugs, in the order chaos bugs lists them. New ones go at the end of
// their node's group; the order is not stored anywhere (a Set is stored by
// names), so it may change.
const (
	AckBeforeReplicate Bug = iota
	HWIgnoresISR
	ISREarlyRejoin
	ISRRejoinBeforeEpochStart
	ReadPastHW
	TruncateToHW
	NoFollowerTruncation
	EpochTruncationSingleRound
	StaleEpochFetch
	MinISRIgnored
	ISRShrinkWithoutController
	OffsetReuse
	IdempotenceNoDedup
	FollowerStallsAfterTruncation
	FetchStallsBelowEpochStart
	TruncationIndexOutOfRange
	CommitBeforeReplicate
	GroupForgottenOnFailover
	CommitStaleGeneration
	LSOPastOpenTxn
	AbortLostOnFollower
	UncleanWhenClean
	RecoveryKeepsTornTail
	TxnEpochNotBumped
	ZombieNotFenced
	ELRKeepsUnclean
	ELRHWBelowMin
	DeadlinesOnWallClock
	count
)

// Info describes a bug for chaos bugs, the docs and whoever plans runs.
type Info struct {
	Bug  Bug
	Name string
	Node Node
	// Breaks is the rule the bug breaks and what the broker then does.
	Breaks string
	// Mirrors is the real-world incident, JIRA or KIP the bug stands for.
	Mirrors string
	// Why is what the bug adds to the set: the failure it is the one
	// example of.
	Why string
	// Scenario is the configuration and faults expected to expose it, and
	// the anomaly that should show it; a starting point for a campaign.
	Scenario string
}

var registry = [count]Info{
	{
		Bug: AckBeforeReplicate, Name: "ack-before-replicate", Node: Broker,
		Breaks:   "acks=-1 is answered at the leader's append, as acks=1 is, instead of once the high watermark passes the batch",
		Mirrors:  "the acks=all contract itself (Kafka's producer acks documentation): the simplest way for a broker to promise more durability than it gives",
		Why:      "the baseline: a tester that cannot catch an acknowledgement given before replication catches nothing about acks=-1",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s: the cut-off leader acknowledges writes no follower has, and they are truncated when it rejoins (lost-write, unseen, nonlinearizable-send); kill-leader catches it less often, the leader dying only a fetch ahead of its followers",
	},
	{
		Bug: HWIgnoresISR, Name: "hw-ignores-isr", Node: Broker,
		Breaks:   "the leader's high watermark advances to its own log end offset, ignoring the followers' (the HW must be the minimum LEO of the ISR)",
		Mirrors:  "the HW rule of Kafka's Partition.maybeIncrementLeaderHW; KIP-497's \"maximal ISR\" rule guards one case of it (a shrink in flight)",
		Why:      "breaks commitment for consumers and acks=-1 at once: records are readable and acknowledged before any follower has them",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s, consumers reading: the cut-off leader acknowledges and serves what it alone has, which is truncated when it rejoins (lost-write, inconsistent-offsets, nonmonotonic-poll)",
	},
	{
		Bug: ISREarlyRejoin, Name: "isr-early-rejoin", Node: Broker,
		Breaks:   "a follower is asked back into the ISR at its first fetch, before it has caught up to the high watermark (and the start of the leader epoch)",
		Mirrors:  "the ISR membership rule (Kafka's Partition.maybeExpandIsr: a follower rejoins only once its LEO reaches the HW)",
		Why:      "the ISR is the set clean elections choose from: a member that lacks committed records turns a clean election into a lossy one",
		Scenario: "acks=-1, min.insync.replicas=1, slow-followers-kill-leader with --replica-lag-time-max-ms 4000 and 15 s windows: the slowed followers' fetches time out, so they stay where the window began, yet each fetch readmits them; the leader, alone in sync, acknowledges and dies, and a readmitted follower is elected (lost-write, inconsistent-offsets)",
	},
	{
		Bug: ISRRejoinBeforeEpochStart, Name: "isr-rejoin-before-epoch-start", Node: Broker,
		Breaks:   "a follower rejoins the ISR once it reaches the HW even when a new leader's HW lags behind the offset its epoch began at, before the follower has truncated and caught up to that offset",
		Mirrors:  "KAFKA-7128 \"Lagging high watermark can lead to committed data loss after ISR expansion\" (fixed in Kafka 2.1)",
		Why:      "the subtle half of isr-early-rejoin: it only bites right after a leader change, while the new leader's HW has not caught up",
		Scenario: "no fixed scenario catches it by its losses: a follower admitted between the new leader's HW and its epoch start lacks the records only until the answer to the fetch that admitted it, so it must be elected within that round trip (lost-write); with four or more replicas the simulator's ISR invariant sees the admission itself, and chaos hunt --bug isr-rejoin-before-epoch-start finds it so (isr-invariant)",
	},
	{
		Bug: ReadPastHW, Name: "read-past-hw", Node: Broker,
		Breaks:   "consumers are served records above the high watermark, up to the leader's log end offset",
		Mirrors:  "Kafka's visibility rule (\"only committed messages are ever given out to the consumer\", Kafka documentation, Replication)",
		Why:      "the read-side counterpart of ack-before-replicate: even acks=1 promises that a record a consumer read is never lost",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s, consumers reading (one per partition): a consumer reads records the cut-off leader alone has, which are truncated when it rejoins (lost-write of a read record, inconsistent-offsets)",
	},
	{
		Bug: TruncateToHW, Name: "truncate-to-hw", Node: Broker,
		Breaks:   "a replica that becomes a follower (or restarts) truncates its log to its own high watermark instead of asking the leader where its epoch ends (OffsetForLeaderEpoch)",
		Mirrors:  "Kafka before 0.11: KAFKA-1211 and KIP-101 (\"Alter Replication Protocol to use Leader Epoch rather than High Watermark for Truncation\")",
		Why:      "the canonical replication bug of Kafka's history: a follower's HW lags the leader's, so it drops committed records, and keeps diverged ones below an HW the new leader never reached",
		Scenario: "acks=-1, min.insync.replicas=2, one partition, kill-leader every 100 ms (leaders change faster than followers hear of it): a follower that truncated to its lagging HW is elected before it fetched the committed records back (lost-write, inconsistent-offsets, replica-divergence)",
	},
	{
		Bug: NoFollowerTruncation, Name: "no-follower-truncation", Node: Broker,
		Breaks:   "a replica that becomes a follower keeps its whole log and fetches from its log end, so a suffix the new leader does not have stays (the log matching rule)",
		Mirrors:  "the log divergence KIP-101 fixed (KAFKA-1211; KAFKA-3919, non-monotonic offsets in logs after a failover)",
		Why:      "divergence in its plainest form: the replicas disagree below the HW, which only a check of every replica's log can see",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s: the cut-off leader keeps the suffix it appended alone under the new leader's records (replica-divergence, inconsistent-offsets, lost-write)",
	},
	{
		Bug: EpochTruncationSingleRound, Name: "epoch-truncation-single-round", Node: Broker,
		Breaks:   "a follower truncates to the end offset the leader gives for its latest epoch even when the leader answers with an epoch the follower never had, instead of asking again about its own epoch below it",
		Mirrors:  "KAFKA-6361 \"Fast leader fail over can lead to log divergence between leader and follower\", fixed by KIP-279 (Kafka 2.0)",
		Why:      "the bug left after KIP-101: truncation by epoch done in one round, which only fast successive failovers expose",
		Scenario: "acks=-1, min.insync.replicas=2, one partition, kill-leader every 100 ms: a leader elected with a shorter log than a follower writes in its epoch and dies before that follower truncates; the follower leads next, and the old leader, asking about an epoch the new one never had, keeps its own records (replica-divergence, lost-write, inconsistent-offsets)",
	},
	{
		Bug: StaleEpochFetch, Name: "stale-epoch-fetch", Node: Broker,
		Breaks:   "a leader serves, and counts as the follower's progress, a follower's fetch made in an older leader epoch instead of refusing it with FENCED_LEADER_EPOCH",
		Mirrors:  "KAFKA-6880 \"Zombie replicas must be fenced\", fixed by KIP-320 (Kafka 2.1)",
		Why:      "needs a follower with stale metadata (cut from the controller one way) while leadership moves away and back: a test of whether the faults can make zombies at all",
		Scenario: "one partition, lag 2 s, a zombie-follower window held 30 s while kill-leader windows come and go beside it (lanes: --schedule zombie-follower@2s+30s,kill-leader@4s+2s,kill-leader@10s+2s,...): the zombie fetches in the epoch it last knew from a leader that came back and is served from its own log end, so it rejoins the ISR with records the committed log lacks (isr-invariant, replica-divergence), in 3 of 12 seeds; chaos hunt finds it without the schedule (docs/hunt.md)",
	},
	{
		Bug: MinISRIgnored, Name: "min-isr-ignored", Node: Broker,
		Breaks:   "acks=-1 writes are appended and acknowledged while the ISR is below min.insync.replicas (no NOT_ENOUGH_REPLICAS, no NOT_ENOUGH_REPLICAS_AFTER_APPEND)",
		Mirrors:  "KAFKA-1555 \"provide strong consistency with reasonable availability\", which added min.insync.replicas (Kafka 0.8.2) after acks=-1 writes acknowledged by a lone leader were lost",
		Why:      "under clean election a lone ISR member's acknowledged write is lost only if that member loses its disk, so no lost write shows it; it asks for a check that an acknowledgement came while the ISR was below the minimum",
		Scenario: "acks=-1, min.insync.replicas=2, kill-majority with 7 s windows: the survivor leads every partition with an ISR of one and acknowledges for seconds on end (ack-below-min-isr)",
	},
	{
		Bug: ISRShrinkWithoutController, Name: "isr-shrink-without-controller", Node: Broker,
		Breaks:   "a leader shrinks its ISR locally at once, without waiting for the controller's approval, so a leader cut off from everyone shrinks to itself and keeps acknowledging acks=-1 writes while the controller elects another",
		Mirrors:  "the ZooKeeper-era split of authority over the ISR that KIP-497 (AlterIsr, the controller as single writer) ended; Jepsen's 2013 Kafka analysis lost acks=-1 writes to an ISR shrunk to a lone partitioned leader",
		Why:      "split brain: two leaders both acknowledging acks=-1 writes, which only partitions (not crashes) produce",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s: the cut-off leader shrinks its ISR to itself, so what it appended commits and consumers read it, then it is truncated when the leader rejoins (lost-write, inconsistent-offsets); under min.insync.replicas=1 the writes are acknowledged too",
	},
	{
		Bug: OffsetReuse, Name: "offset-reuse", Node: Broker,
		Breaks:   "an acks=-1 write that fails (timed out, or NOT_ENOUGH_REPLICAS_AFTER_APPEND) and is still the leader's last batch is removed from its log, so the next batch gets the same offset although followers may hold the first and consumers may have read it",
		Mirrors:  "Kafka's rule that an offset, once assigned, names one record for ever (what consumer offsets, idempotence and KIP-320's truncation detection rest on); \"undoing\" a failed append is the classic way to break it, as a Raft leader overwriting its own log would",
		Why:      "the one bug where a record's identity changes under a live leader, with no failover at all",
		Scenario: "acks=-1, min.insync.replicas=2, slow-follower every 5 s, --request-timeout 1s, --concurrency 1: a write the slowed follower holds up times out as the leader's last batch, and the next write takes its offset while the other follower keeps the first (replica-divergence)",
	},
	{
		Bug: IdempotenceNoDedup, Name: "idempotence-no-dedup", Node: Broker,
		Breaks:   "a leader checks an idempotent producer's sequence numbers but appends a retried batch it already has (the same producer, epoch and sequences as one of the last five) again, at new offsets, instead of answering with the offset it was first written at",
		Mirrors:  "KIP-98's duplicate detection (Kafka's ProducerStateManager keeps each producer's last five batches for it), the broker's half of the idempotent producer that clients enable by default since Kafka 3.0 (KIP-679): what turns a producer's retries into one write per record",
		Why:      "the one bug only a retrying idempotent producer can show: without retries no batch is ever sent twice, and without idempotence a duplicate is allowed",
		Scenario: "an idempotent producer that retries, acks=-1, min.insync.replicas=2, slow-follower every 5 s with --request-timeout 1s: a send times out while its batch stays in the leader's log, and its retry is written again (a duplicate read); kill-leader works too, a leader dying after its followers fetched a batch it had not acknowledged yet, whose retry the new leader writes again",
	},
	{
		Bug: FollowerStallsAfterTruncation, Name: "follower-stalls-after-truncation", Node: Broker,
		Breaks:   "a follower that truncated records from its log (to where the leader's epoch ends) never fetches that partition again until the next leader change, so it never catches up or rejoins the ISR",
		Mirrors:  "KIP-461 (Kafka 2.3): before it, an error in one partition's truncation or fetch killed the replica fetcher thread, and after it such a partition is marked failed and left unfetched; either way the partition stays under-replicated until the broker restarts",
		Why:      "the first liveness bug: nothing is lost or reordered, the cluster just never heals, which only a check that the cluster converges after the faults can see",
		Scenario: "any acks, partition-leader every 5 s (the default interval will do): the cut-off leader appends writes its followers never get, truncates them when it rejoins as a follower, and stops there; its partition keeps an ISR without it after every fault has healed (no-convergence)",
	},
	{
		Bug: FetchStallsBelowEpochStart, Name: "fetch-stalls-below-epoch-start", Node: Broker,
		Breaks:   "a leader answers a consumer's fetch from an offset below the start of its own leader epoch with no records (and its high watermark), instead of the records there, so a consumer that was behind at a leader change is stuck for ever",
		Mirrors:  "epoch validation misapplied to consumer positions (KIP-320's fencing is for a fetch's leader epoch, not its offset); Jepsen's Bufstream 0.1 and Redpanda 21.10 analyses found consumers that stopped receiving records though records were there",
		Why:      "the stuck consumer: every record is kept and acknowledged, reads just stop, which only a check of poll progress against the high watermark catches",
		Scenario: "any acks, consumers reading, kill-leader or partition-leader every 5 s in a 60 s run: after the first leader change each consumer is behind the new epoch's start and gets nothing from then on (stuck-consumer; stuck-partition, the final read stuck too)",
	},
	{
		Bug: TruncationIndexOutOfRange, Name: "truncation-index-out-of-range", Node: Broker,
		Breaks:   "a follower that truncates its log names the leader epochs the truncation dropped by reading the epoch entry after the one its new log end lies in, unchecked: when the truncation cuts into its latest epoch there is none, and the broker panics (index out of range) with the truncation done",
		Mirrors:  "brokers that die on the truncation path, which only failovers take: Kafka before KIP-101 exited a follower whose leader's log was shorter than its own (FATAL \"Exiting because log truncation is not allowed\"), and KIP-461 (KAFKA-8346) stopped an exception on one partition's fetch or truncation from killing the whole replica fetcher thread",
		Why:      "the one bug that kills a node rather than breaking a rule of the data: a crash, which the runtimes notice and the crash check judges; the records stay as a truncation leaves them, so no other check sees it",
		Scenario: "acks=-1, min.insync.replicas=2, partition-leader every 5 s: the cut-off leader appended records its successor never had, and panics truncating them when it rejoins (crash); kill-leader every 100 ms or so on one partition too (a killed leader truncating its unreplicated tail when it comes back), every 5 s less often",
	},
	{
		Bug: CommitBeforeReplicate, Name: "commit-before-replicate", Node: Broker,
		Breaks:   "the group coordinator answers an offset commit once it has appended it to its partition of __consumer_offsets, instead of once the high watermark passes it (every in-sync replica has it)",
		Mirrors:  "the acks=-1 contract of the coordinator's own writes (Kafka's GroupMetadataManager appends offset commits with required acks -1 and answers in the append's callback); a coordinator that answered early would let a failover take acknowledged commits back, so a consumer group reads again what it had committed as done",
		Why:      "the coordinator's ack-before-replicate: a consumer group's committed offset going back, which only a workload that commits and rejoins can see",
		Scenario: "--sub-via subscribe, acks=-1, min.insync.replicas=2, partition-coordinator with 12 s windows (--nemesis-interval 12s): the coordinator cut off answers the members' commits that no follower has, while another broker takes the group over and empties it of its silent members; after the heal they join there and fetch the offsets from before those commits (offset-regression)",
	},
	{
		Bug: GroupForgottenOnFailover, Name: "group-forgotten-on-failover", Node: Broker,
		Breaks:   "a broker that becomes the leader of a partition of __consumer_offsets does not read its groups back: each group starts again empty, at generation 0, with no committed offsets",
		Mirrors:  "coordinator failover that loses a group's state (Kafka loads a partition's groups and offsets before it answers as their coordinator, COORDINATOR_LOAD_IN_PROGRESS meanwhile); generations that start again let a fenced member's commits through, and lost offsets have the group read everything again",
		Why:      "the group's fencing rests on its generation surviving a failover: the one bug that gives out a generation number twice",
		Scenario: "--sub-via subscribe, acks=-1, min.insync.replicas=2, partition-coordinator with 12 s windows (--nemesis-interval 12s): when the group's coordinator is cut off, its successor knows neither the group's generation nor its committed offsets, so a member joining there finds none (offset-regression) and generations are given out again (nonmonotonic-poll)",
	},
	{
		Bug: CommitStaleGeneration, Name: "commit-stale-generation", Node: Broker,
		Breaks:   "the group coordinator takes an offset commit from a member of an older generation, or from one it has removed, instead of refusing it (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID)",
		Mirrors:  "the generation fencing of Kafka's group protocol (a commit carries the member's generation, and the coordinator refuses a stale one), which KIP-848 carries on as member epochs: without it a consumer back from a long pause commits offsets for partitions the group has given to another member since",
		Why:      "the one bug of the group's fencing, which only a member that misses a rebalance and comes back shows",
		Scenario: "--sub-via subscribe, acks=-1, min.insync.replicas=2, pause-consumer with 12 s windows (--nemesis-interval 12s): the paused member is removed from the group after its session timeout and the others get a new generation; resumed, it commits the position it had in its old one (fenced-commit)",
	},
	{
		Bug: LSOPastOpenTxn, Name: "lso-past-open-txn", Node: Broker,
		Breaks:   "a partition's last stable offset is its high watermark even while a transaction is open below it, so a read_committed fetch returns the records of transactions not yet decided",
		Mirrors:  "the last stable offset of KIP-98, which holds read_committed consumers at the first offset of the earliest open transaction: Jepsen's Redpanda 21.10 analysis found read_committed consumers reading aborted records (aborted reads, G1a)",
		Why:      "the one bug of the isolation a read_committed consumer is promised, which only a workload whose transactions abort shows",
		Scenario: "--workload txn, acks=-1, min.insync.replicas=2, partition-leader every 5 s (the bug needs no fault): a read_committed consumer or a transaction's poll reads a transaction's records while it is open, and the transaction then aborts (aborted-read)",
	},
	{
		Bug: AbortLostOnFollower, Name: "abort-lost-on-follower", Node: Broker,
		Breaks:   "a follower that copies an abort marker from its leader does not record the aborted transaction, so when it becomes the leader it does not name that transaction to read_committed fetches, which then return its records",
		Mirrors:  "transaction state that a replica derives from its log and gets wrong: a marker lost or misread on one replica (the issue's \"abort marker lost on one replica\"; KAFKA-12671's last stable offset stuck by a marker a replica missed)",
		Why:      "the transactions' state has to be replicated with the log: the one bug that is invisible until leadership moves",
		Scenario: "--workload txn, acks=-1, min.insync.replicas=2, partition-leader every 5 s: a follower that copied aborted transactions becomes the leader and serves their records to read_committed readers (aborted-read)",
	},
	{
		Bug: UncleanWhenClean, Name: "unclean-when-clean", Node: Controller,
		Breaks:   "when no live ISR member is left, the controller elects the first live out-of-sync replica although the topic's policy is clean",
		Mirrors:  "unclean.leader.election.enable defaulting to true until Kafka 0.11 (KIP-106): clusters ran unclean elections without asking for them",
		Why:      "the one controller bug: a policy not honoured, which only shows when every in-sync replica is down at once",
		Scenario: "acks=-1, min.insync.replicas=1, clean election, slow-followers-kill-leader with --replica-lag-time-max-ms 4000 and 15 s windows: the leader, alone in sync, acknowledges and dies, and a replica outside the ISR is elected (lost-write, inconsistent-offsets)",
	},
	{
		Bug: RecoveryKeepsTornTail, Name: "recovery-keeps-torn-tail", Node: Storage,
		Breaks:   "recovery after a crash keeps every batch whose header is sane and continues the log, without checking its CRC, so a tail the crash tore (its header on disk, its records not) is served; with --lose-unsynced a crash then tears the unsynced batches instead of losing them cleanly",
		Mirrors:  "recovery skipped or cut short after an unclean shutdown: KAFKA-10471 (a crash during log loading treated as a clean shutdown) and KAFKA-10101 (the recovery point advanced past unflushed data)",
		Why:      "the one storage bug: what a broker serves after a crash, which only faults that lose unsynced writes exercise",
		Scenario: "acks=-1, lose-unsynced every 5 s (so --lose-unsynced, with --fsync never): a killed broker restarts on its torn unsynced batches and serves them (garbage-read)",
	},
	{
		Bug: TxnEpochNotBumped, Name: "txn-epoch-not-bumped", Node: Broker,
		Breaks:   "the transaction coordinator answers an EndTxn of version 5 (KIP-890's per-transaction epoch) without bumping the producer's epoch, so every transaction of an id runs under one epoch and an EndTxn that arrives late, after the producer's retry was answered, decides the producer's next transaction",
		Mirrors:  "KAFKA-17754, found by Jepsen's Bufstream 0.1 analysis and reproduced on Kafka itself: EndTxn names only the producer id and epoch, so before KIP-890 a delayed commit or abort ends whatever transaction is open (aborted reads, lost writes, a transaction half committed)",
		Why:      "the flaw of the protocol itself that KIP-890 closes: invisible without a message that outlives its timeout",
		Scenario: "--workload txn, acks=-1, min.insync.replicas=2, delay-client every 5 s: an EndTxn held on its way past the client's timeout arrives after the retry was answered and decides the producer's next transaction (aborted-read, lost-write)",
	},
	{
		Bug: ZombieNotFenced, Name: "zombie-not-fenced", Node: Broker,
		Breaks:   "a partition leader takes a transactional write whose producer epoch is older than the one it knows, so a producer that a new incarnation of its transactional id has fenced still writes",
		Mirrors:  "zombie fencing, the reason KIP-98 gives transactional ids epochs: a producer paused long enough for its replacement to start (a stop-the-world pause, a partitioned host) wakes and writes as if it were still the id's producer",
		Why:      "the one fencing rule a transaction's partitions enforce themselves: the coordinator refuses the zombie's EndTxn, but only the partition can refuse its writes",
		Scenario: "--workload txn, acks=-1, min.insync.replicas=2, pause-producer every 2 s: a paused session's replacement bumps the epoch and aborts what it had open; the zombie wakes, and its writes land in a transaction no coordinator knows, which the new incarnation's next marker there decides (aborted-read when it commits)",
	},
	{
		Bug: ELRKeepsUnclean, Name: "elr-keeps-unclean", Node: Controller,
		Breaks:   "under --election elr, a broker that registers after an unclean shutdown stays in every ELR it was in, so a replica that lost its unsynced writes can still be elected as one that holds every committed record",
		Mirrors:  "KIP-966's unclean-shutdown rule (KAFKA-15586: a broker that registers without its previous broker epoch left uncleanly and leaves the ELR); without it ELR only moves the last-replica-standing loss, it does not close it",
		Why:      "the ELR's membership rule: the set is safe only while each member is known to have kept what it had",
		Scenario: "acks=-1, min.insync.replicas=2, --election elr, stop-followers-kill-leader every 5 s: the followers stop cleanly and the ISR shrinks to the leader, which dies losing its unsynced writes and comes back first, still eligible, and is elected without the records the followers have (lost-write)",
	},
	{
		Bug: ELRHWBelowMin, Name: "elr-hw-below-min", Node: Broker,
		Breaks:   "under --election elr, the leader advances its high watermark while the ISR is below min.insync.replicas, as clean election allows, so a replica that left the ISR then (an ELR member) lacks records below the high watermark",
		Mirrors:  "KIP-966's strict min ISR rule (Kafka 4.0's Partition.maybeIncrementLeaderHW): the ELR is sound only because the high watermark stands still below the minimum",
		Why:      "the rule the ELR rests on: with it broken an ELR election truncates committed records even when no disk loses anything",
		Scenario: "acks=-1, min.insync.replicas=2, --election elr, stop-followers-kill-leader every 5 s: the leader, alone in the ISR, commits the writes it had taken before the followers left, which consumers read; it dies losing them, and the ELR follower elected lacks them (inconsistent-offsets, lost-write)",
	},
	{
		Bug: DeadlinesOnWallClock, Name: "deadlines-on-wall-clock", Node: Broker,
		Breaks:   "the broker keeps its deadlines (the next heartbeat, fetch, ISR check, retry) on the clock as it reads it, so a clock stepped back leaves each of them that far in the future: the broker sends nothing, the controller fences it, and it stays out of every ISR for as long as the step",
		Mirrors:  "timers on the wall clock rather than a monotonic one: Kafka's scheduler and request timeouts use System.nanoTime for this reason, and hosts whose clock NTP steps back (or a VM restored from a snapshot) are where it bites",
		Why:      "the one clock bug: a liveness failure that only a clock fault shows, and that no amount of killing or partitioning reaches",
		Scenario: "acks=-1, min.insync.replicas=2, clock-jump every second: a broker whose clock was stepped forward is set right at the window's end, and waits out the step before it heartbeats or fetches again (no-convergence, stuck-partition)",
	},
}

// All returns every bug, in order.
func All() []Info { return slices.Clone(registry[:]) }

// Info returns the description of b.
func (b Bug) Info() Info {
	if b >= count {
		return Info{Bug: b, Name: fmt.Sprintf("bug(%d)", b)}
	}
	return registry[b]
}

// String returns the bug's name.
func (b Bug) String() string { return b.Info().Name }

// Node returns where the bug lives.
func (b Bug) Node() Node { return b.Info().Node }

// Names returns every bug's name, in order.
func Names() []string {
	out := make([]string, count)
	for i := range registry {
		out[i] = registry[i].Name
	}
	return out
}

// Parse returns the bug named name; an unknown name's error lists the known
// ones.
func Parse(name string) (Bug, error) {
	for i := range registry {
		if registry[i].Name == name {
			return Bug(i), nil
		}
	}
	return 0, fmt.Errorf("unknown bug %q: known bugs are %s", name, strings.Join(Names(), ", "))
}

// Set is a set of enabled bugs. The zero value enables none, which is what
// every configuration has unless a bug is asked for. It is a value (a
// bitmask), so configurations holding it stay comparable and copy safely.
type Set uint64

// Of returns the set of bugs bs.
func Of(bs ...Bug) Set {
	var s Set
	for _, b := range bs {
		s |= 1 << b
	}
	return s
}

// ParseSet parses bug names; an unknown one is an error that lists the
// known ones. Repeats are allowed.
func ParseSet(names []string) (Set, error) {
	var s Set
	for _, n := range names {
		b, err := Parse(n)
		if err != nil {
			return 0, err
		}
		s |= Of(b)
	}
	return s, nil
}

// Has says whether b is enabled. The code checks it at the one place the
// rule b breaks is applied.
func (s Set) Has(b Bug) bool { return s&(1<<b) != 0 }

// Empty says whether no bug is enabled.
func (s Set) Empty() bool { return s == 0 }

// Bugs returns the enabled bugs, in order.
func (s Set) Bugs() []Bug {
	var out []Bug
	for rest := uint64(s); rest != 0; rest &= rest - 1 {
		out = append(out, Bug(bits.TrailingZeros64(rest)))
	}
	return out
}

// On returns the bugs of s that live in node n.
func (s Set) On(n Node) Set {
	var out Set
	for _, b := range s.Bugs() {
		if b.Node() == n {
			out |= Of(b)
		}
	}
	return out
}

// Names returns the enabled bugs' names, in order.
func (s Set) Names() []string {
	var out []string
	for _, b := range s.Bugs() {
		out = append(out, b.String())
	}
	return out
}

// String returns the names joined by commas ("" for none).
func (s Set) String() string { return strings.Join(s.Names(), ",") }

// MarshalText writes the set as its names, so that a Set in a JSON
// document reads as bugs, not as a number whose bits depend on the order of
// the registry.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses what MarshalText writes.
func (s *Set) UnmarshalText(b []byte) error {
	var names []string
	if len(b) > 0 {
		names = strings.Split(string(b), ",")
	}
	v, err := ParseSet(names)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Only refuses the bugs of s that do not live in node n: a configuration
// takes only its own node's bugs, so a misrouted one is a wiring mistake.
func (s Set) Only(n Node) error {
	if s>>count != 0 {
		return fmt.Errorf("unknown bug bits %#x", uint64(s>>count<<count))
	}
	for _, b := range s.Bugs() {
		if b.Node() != n {
			return fmt.Errorf("bug %s lives in the %s, not the %s", b, b.Node(), n)
		}
	}
	return nil
}
