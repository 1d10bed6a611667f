package checker

// anomalyDoc is what an anomaly means and which causes can explain it, in
// words: docs/guarantees.md's anomaly table is generated from it (go test
// ./checker -run TestGuaranteesDoc -update), and the report shows the
// meaning beside each anomaly's row, so the two say the same.
type anomalyDoc struct{ meaning, causes string }

var anomalyDocs = map[string]anomalyDoc{
	LostWriteName:           {"a record known to be written (its send acknowledged, or a consumer read it) is gone: the final read reached past its offset without it, or every replica's log was read and none holds it", "uncommitted truncation, committed truncation"},
	UnseenName:              {"an acknowledged send that nobody ever read and that the end of the history shows is gone", "uncommitted truncation, committed truncation"},
	CrashName:               {"a node (broker or controller) died without the nemesis killing or stopping it: the runtime saw its process exit, or the simulation recovered its panic (see below)", "unexplained: forbidden in every configuration"},
	DuplicateName:           {"one value at two offsets (or partitions)", "unexplained (only client retries explain it)"},
	InconsistentOffsetsName: {"one offset read with two values: a consumed record changed", "committed truncation; unexplained when both values are still in the log"},
	NonmonotonicSendName:    {"one producer's later acknowledged send landed at a lower offset of the same partition", "uncommitted or committed truncation of one of the two records; unexplained when both are still in the log"},
	PollSkipName:            {"a consumer's next record skipped offsets that exist", "committed truncation"},
	NonmonotonicPollName:    {"a consumer's next record went backwards", "committed truncation"},
	AbortedReadName:         {"a value whose send definitely failed was read; or a value of a transaction that aborted was read by a client other than the transaction itself (Jepsen's G1a; a replica read holds it by right)", "unexplained (a failed send); for an aborted transaction's value, uncommitted read (a read_uncommitted reader: permitted everywhere) or committed truncation (a read_committed reader: a lost abort marker)"},
	GarbageReadName:         {"a value nobody sent was read, or a read got records that do not decode (a bad checksum: the read's error starts with CORRUPT_MESSAGE)", "unexplained"},
	ReplicaDivergenceName:   {"after healing, two replicas' logs differ below their common high watermark", "committed truncation"},
	ISRInvariantName:        {"in simulation only: an in-sync replica lacked a committed record (its log ended below the highest high watermark any replica of the partition reached) or held another at its offset (see below)", "unexplained, permitted where committed truncation is (unclean election, F2, F3)"},
	AckBelowMinISRName:      {"an acks=-1 send was acknowledged while the monitor saw its partition's ISR below `min.insync.replicas` the whole time, from well before it was sent to well after (see below)", "unexplained (no truncation: the leader broke the acks=-1 contract)"},
	NonlinearizableSendName: {"acknowledged offsets contradict real-time order (a send that began after another completed got a lower offset; porcupine, per partition)", "uncommitted or committed truncation of the record whose offset was reused; unexplained when both records are still in the log, or a read returned a value before its send began"},
	StaleReadName:           {"a read returned a high watermark older than one a completed operation had established (porcupine)", "permitted everywhere: Kafka does not promise linearizable reads"},
	NoConvergenceName:       {"a partition was not seen with a leader and its whole replica set in the ISR within the liveness bound after the last heal", "unexplained (forbidden everywhere: see Liveness below)"},
	StuckPartitionName:      {"after the last heal, every send to a partition failed (under acks 1 or -1), or every poll and final read of it failed or returned nothing below the high watermark, and the failures went on past the liveness bound", "unexplained (forbidden everywhere)"},
	OffsetRegressionName:    {"a consumer group's committed offset of a partition, as a member fetched it when it joined, was below one whose commit had been acknowledged (or that an earlier join had fetched) before the join began", "committed truncation (committed offsets are records of the coordinator's internal topic, acknowledged once committed)"},
	FencedCommitName:        {"a commit was acknowledged from a generation older than one the coordinator had already given a member before the commit began: a member fenced by a rebalance moved the group's offset", "committed truncation (of the coordinator's record of the newer generation)"},
	UnreadBelowCommitName:   {"a record below the group's final committed offset of its partition that no member of the group ever received: at-least-once delivery broken", "committed truncation (the partition's log rewritten below the offset)"},
	StuckGroupName:          {"after the last heal, a new member could not join the consumer group and fetch its committed offsets within the liveness bound", "unexplained (forbidden everywhere)"},
	StuckConsumerName:       {"polls of a partition from one offset returned no records, though the high watermark they reported was above it, for longer than the liveness bound", "unexplained (forbidden everywhere)"},
	PrecommittedReadName:    {"transactions only: a record of a transaction was read before the transaction could have committed: by the transaction's own poll, or by a read that completed before the transaction asked to commit (before it began, where the history does not say when it asked)", "uncommitted read (a read_uncommitted reader: permitted everywhere); committed truncation (a read_committed reader: a transaction's coordinator record or markers lost)"},
	IntPollSkipName:         {"transactions only: within one transaction, a poll's next record of a partition skipped offsets that exist and that the reader's isolation lets it see", "committed truncation"},
	IntNonmonotonicPollName: {"transactions only: within one transaction, a poll's next record of a partition was at or below the one before", "committed truncation"},
	IntSendSkipName:         {"transactions only: within one transaction, two consecutive sends to a partition landed with other records between them", "interleaved writes (permitted everywhere: Kafka does not isolate a transaction's writes)"},
	IntNonmonotonicSendName: {"transactions only: within one transaction, a later send to a partition landed at or below an earlier one", "uncommitted or committed truncation of one of the two records; unexplained when both are still in the log"},
	G0Name:                  {"transactions only: a cycle of write-write dependencies among committed transactions, each partition's offsets ordering its writers (see below)", "interleaved writes (permitted everywhere)"},
	G1cName:                 {"transactions only: a cycle of dependencies among committed transactions with at least one write-read dependency (a transaction polled another's record; see below)", "interleaved writes (a cycle with a write-write dependency: permitted everywhere); uncommitted read (a read_uncommitted reader in it: permitted everywhere); committed truncation (write-read dependencies and read_committed readers alone)"},
}

// Meaning is what anomaly name means, in a sentence; "" for a name that is
// not an anomaly.
func Meaning(name string) string { return anomalyDocs[name].meaning }
