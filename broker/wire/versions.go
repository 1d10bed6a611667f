package wire

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the range of versions the broker supports for one API key,
// in the shape ApiVersions advertises it.
type VersionRange struct {
	Key int16
	Min int16
	Max int16
}

// supported is the broker's API surface. It is the single source for both
// what ParseRequest decodes and what ApiVersions advertises: a client picks
// the highest version both sides know, so advertising a version we cannot
// decode (or decoding one we do not advertise) breaks real clients.
//
// The bounds, and why:
//
//   - Produce 3-12: 3 is the first version carrying v2 record batches, the only
//     format package batch understands (Kafka 4.0 also dropped 0-2). 13 names
//     topics by ID, which this broker does not assign.
//   - Fetch 4-12: 4 is the first to return v2 batches (and Kafka 4.0's
//     minimum). 12 is the last to name topics by name; it is flexible and
//     carries LastFetchedEpoch/DivergingEpoch, which followers use to detect
//     log divergence.
//   - ListOffsets 1-8: 0 (multiple old-style offsets) was dropped by Kafka 4.0
//     and no current client needs it. 7 adds MAX_TIMESTAMP (-3) and 8
//     EARLIEST_LOCAL (-4, same as earliest without tiered storage); 9 adds a
//     tiered-storage timestamp and 10 a timeout, neither of which means
//     anything here.
//   - Metadata 0-12: every version that names topics by name in requests;
//     13 adds a top-level error for KIP-1102 rebootstrapping.
//   - InitProducerId 0-4: idempotent and transactional producers (KIP-98).
//     0 and 1 differ in throttling, 2 is flexible, 3 carries the producer's
//     current id and epoch (KIP-360; ignored: a producer without a
//     transactional id always gets a new id, as from Kafka's coordinator,
//     and a transactional one a new epoch), 4 lets the answer say
//     PRODUCER_FENCED (KIP-588). 5, the last kmsg knows, says that the
//     client understands TRANSACTION_ABORTABLE (KIP-890), which this broker
//     never answers: advertising it would promise nothing.
//   - The transaction coordinator's (broker/core/txns.go, markers.go):
//     AddPartitionsToTxn 0-3 (4 and 5 batch transactions for KIP-890's
//     verification by the partitions' leaders), EndTxn 0-5 (4 says the
//     client understands TRANSACTION_ABORTABLE, never answered here; 5 is
//     KIP-890's per-transaction epoch: the decision bumps the epoch and the
//     answer gives it), WriteTxnMarkers 0-2 (2 carries KIP-890's
//     transaction version, by which a partition refuses a marker whose
//     epoch is not past the open transaction's), AddOffsetsToTxn 0-3 and TxnOffsetCommit 0-3 (4 of each
//     is KIP-890's; 3 of TxnOffsetCommit names the group member, which is
//     checked as OffsetCommit checks it).
//   - OffsetForLeaderEpoch 0-4: all versions kmsg knows; followers use it to
//     truncate after a leader change.
//   - ApiVersions 0-4: 5 (KIP-1242) asks the broker to check a cluster and node
//     ID and answer REBOOTSTRAP_REQUIRED; advertising it would promise that
//     check. A v5 request takes the KIP-511 path and the client retries at 4.
//   - CreateTopics 0-7: all versions kmsg knows. They differ only in optional
//     fields (validate-only, response configs, topic ID), and the tester and
//     admin clients of every age create topics through it.
//   - DescribeConfigs 0-4: all versions kmsg knows, for topics only; it is
//     how a client (the tester first) sees a topic's min.insync.replicas
//     and election policy. Later versions add only optional fields.
//   - The group coordinator's (broker/core/groups.go), every version of
//     the classic protocol kmsg knows but those that need what this broker
//     does not have: OffsetCommit 0-9 and OffsetFetch 0-9 (10 names
//     topics by ID), FindCoordinator 0-5 (6 is for share groups, KIP-932),
//     JoinGroup 0-9, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5,
//     DescribeGroups 0-5 (6 describes KIP-848 groups), ListGroups 0-5.
//
// Each maximum is at most what kmsg can encode and decode (checked by a test).
// Sorted by key, as Kafka lists them.
var supported = [...]VersionRange{
	{Key: 0, Min: 3, Max: 12}, // Produce
	{Key: 1, Min: 4, Max: 12}, // Fetch
	{Key: 2, Min: 1, Max: 8},  // ListOffsets
	{Key: 3, Min: 0, Max: 12}, // Metadata
	{Key: 8, Min: 0, Max: 9},  // OffsetCommit
	{Key: 9, Min: 0, Max: 9},  // OffsetFetch
	{Key: 10, Min: 0, Max: 5}, // FindCoordinator
	{Key: 11, Min: 0, Max: 9}, // JoinGroup
	{Key: 12, Min: 0, Max: 4}, // Heartbeat
	{Key: 13, Min: 0, Max: 5}, // LeaveGroup
	{Key: 14, Min: 0, Max: 5}, // SyncGroup
	{Key: 15, Min: 0, Max: 5}, // DescribeGroups
	{Key: 16, Min: 0, Max: 5}, // ListGroups
	{Key: 18, Min: 0, Max: 4}, // ApiVersions
	{Key: 19, Min: 0, Max: 7}, // CreateTopics
	{Key: 22, Min: 0, Max: 4}, // InitProducerId
	{Key: 23, Min: 0, Max: 4}, // OffsetForLeaderEpoch
	{Key: 24, Min: 0, Max: 3}, // AddPartitionsToTxn
	{Key: 25, Min: 0, Max: 3}, // AddOffsetsToTxn
	{Key: 26, Min: 0, Max: 5}, // EndTxn
	{Key: 27, Min: 0, Max: 2}, // WriteTxnMarkers
	{Key: 28, Min: 0, Max: 3}, // TxnOffsetCommit
	{Key: 32, Min: 0, Max: 4}, // DescribeConfigs
}

// apiVersionsKey is ApiVersions' key. It is special in three places: its
// response header is always v0, an unsupported version of it is answered
// rather than refused, and a v0 error reply must be decodable by any client.
const apiVersionsKey = 18

// errUnsupportedVersion is Kafka's UNSUPPORTED_VERSION error code.
const errUnsupportedVersion = 35

// SupportedAPIs returns a copy of the supported version table, sorted by key.
// It is a copy so that no caller can widen what the broker decodes.
func SupportedAPIs() []VersionRange {
	out := make([]VersionRange, len(supported))
	copy(out, supported[:])
	return out
}

// Supported reports the inclusive version range the broker accepts for key;
// ok is false for a key it does not serve at all.
func Supported(key int16) (lo, hi int16, ok bool) {
	for _, r := range supported {
		if r.Key == key {
			return r.Min, r.Max, true
		}
	}
	return 0, 0, false
}

// isSupported reports whether key at version is inside the table.
func isSupported(key, version int16) bool {
	lo, hi, ok := Supported(key)
	return ok && version >= lo && version <= hi
}

// ApiVersionsResponse is the answer to a supported ApiVersions request at
// version: no error and the whole table. The caller may fill feature fields
// before encoding; none are needed by the clients we target.
//
// features are the cluster's finalized features (KIP-584) as the broker
// last heard of them, by name, each at its level: version 3 and above
// carry them, as Kafka's brokers do, so that a client or a tester can see
// what the cluster runs (eligible.leader.replicas.version: KIP-966's ELR).
func ApiVersionsResponse(version int16, features map[string]int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	resp.ApiKeys = make([]kmsg.ApiVersionsResponseApiKey, 0, len(supported))
	for _, r := range supported {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	resp.FinalizedFeaturesEpoch = -1
	for _, name := range slices.Sorted(maps.Keys(features)) {
		s := kmsg.NewApiVersionsResponseSupportedFeature()
		s.Name, s.MinVersion, s.MaxVersion = name, 0, features[name]
		resp.SupportedFeatures = append(resp.SupportedFeatures, s)
		f := kmsg.NewApiVersionsResponseFinalizedFeature()
		f.Name, f.MinVersionLevel, f.MaxVersionLevel = name, features[name], features[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, f)
		resp.FinalizedFeaturesEpoch = 0
	}
	return resp
}

// UnsupportedResponse decides what to do with a request that ParseRequest
// refused with ErrUnsupported. For ApiVersions it returns the KIP-511 reply:
// version 0 (the one every client can decode), UNSUPPORTED_VERSION, and the
// ApiVersions range alone, so the client retries at our maximum. That is
// exactly what Kafka sends, and what franz-go, librdkafka and the Java client
// look for. For any other key ok is false and the server should close the
// connection: Kafka does, and a client that ignored ApiVersions has nothing
// sensible to read in an error body of a version it chose blindly.
func UnsupportedResponse(req Request) (resp kmsg.Response, ok bool) {
	if req.Key != apiVersionsKey {
		return nil, false
	}
	lo, hi, _ := Supported(apiVersionsKey)
	r := kmsg.NewPtrApiVersionsResponse()
	r.SetVersion(0)
	r.ErrorCode = errUnsupportedVersion
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = apiVersionsKey, lo, hi
	r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return r, true
}
