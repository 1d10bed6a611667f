package control

import "fmt"

// Election policies: the seed's two, clean (wait for an ISR member) and
// unclean (the first live replica), and Kafka 4's third, elr (KIP-966's
// eligible leader replicas: clean, with a strict min.insync.replicas rule
// for the high watermark that makes replicas outside the ISR safe to
// elect).
const (
	Clean   = "clean"
	Unclean = "unclean"
	ELR     = "elr"
)

// Elections lists the policies, in the order flags and docs give them.
func Elections() []string { return []string{Clean, Unclean, ELR} }

// ForwardClock is the time a state machine's deadlines run on: the
// driver's clock readings, moved by their forward steps only. A clock
// stepped back (a host's wall clock set right) would otherwise leave every
// deadline set before the step that far in the future, and the node silent
// for as long (found by the clock-jump fault); a step forward still makes
// the timeouts that span it expire early, as Kafka's wall-clock lag and
// session checks do. The zero value takes its first reading as it is.
type ForwardClock struct {
	now, wall int64
	read      bool
}

// Read takes the driver's reading and returns the deadlines' time.
func (c *ForwardClock) Read(reading int64) int64 {
	switch {
	case !c.read:
		c.now, c.read = reading, true
	case reading > c.wall:
		c.now += reading - c.wall
	}
	c.wall = reading
	return c.now
}

// NoLeader marks a partition that is offline.
const NoLeader int32 = -1

// DefaultClusterID is the cluster id of a controller or broker not given
// one. A tester gives each cluster it starts its own, so that it can tell
// its cluster from another one on the same ports.
const DefaultClusterID = "chaos"

// ValidClusterID refuses a cluster id that could not be shown or compared
// plainly: empty, longer than 64 bytes, or other than letters, digits,
// '.', '_' and '-'.
func ValidClusterID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("cluster id must be 1 to 64 characters, got %q", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("cluster id %q: only letters, digits, '.', '_' and '-' are allowed", id)
		}
	}
	return nil
}

// Broker is a registered broker as the controller sees it.
type Broker struct {
	ID     int32
	Host   string
	Port   int32
	Epoch  int64 // assigned at registration; a restart gets a new one
	Fenced bool  // session expired or just registered and not yet heartbeating
}

// Partition is one partition's replication state.
type Partition struct {
	Partition      int32
	Leader         int32 // NoLeader when offline
	LeaderEpoch    int32 // bumped on every leader change
	PartitionEpoch int32 // bumped on every change (leader or ISR)
	Replicas       []int32
	ISR            []int32
	// ELR is KIP-966's eligible leader replicas (policy elr only): the
	// replicas that left the ISR while it was below min.insync.replicas.
	// The high watermark does not advance while the ISR is below the
	// minimum, so each holds every committed record and may be elected
	// when no ISR member is live. A member that shuts down uncleanly
	// leaves it: it may have lost what it had not synced.
	ELR []int32 `json:",omitempty"`
	// LastKnownELR is the ELR members that left it by an unclean
	// shutdown, in the order they left. When the ISR and the ELR are both
	// empty the last resort is one of them, as Kafka's last known leader:
	// each held every committed record before its shutdown.
	LastKnownELR []int32 `json:",omitempty"`
}

// Topic is a topic and its settings.
type Topic struct {
	Name              string
	ID                [16]byte
	MinInsyncReplicas int32
	Election          string
	Partitions        []Partition
}

// Snapshot is the whole cluster metadata at one version.
type Snapshot struct {
	Version int64
	Brokers []Broker
	Topics  []Topic
	// Features are the cluster's finalized features (KIP-584), by name,
	// each at its level, as brokers advertise them in ApiVersions.
	Features map[string]int16 `json:",omitempty"`
}

// FeatureELR is Kafka's feature for KIP-966: level 1 in a cluster whose
// controller elects by policy elr.
const FeatureELR = "eligible.leader.replicas.version"

// RegisterRequest is sent by a broker when it starts. Incarnation differs on
// every process start, so the controller can tell a restart from a retry.
type RegisterRequest struct {
	// ClusterID is the cluster the broker was started for: a controller
	// of another cluster refuses it (Kafka's InconsistentClusterIdException),
	// so a broker never joins a cluster that happens to hold the
	// controller's address.
	ClusterID   string
	BrokerID    int32
	Incarnation string
	Host        string
	Port        int32
	// PreviousBrokerEpoch is the broker epoch of the process before this
	// one if that process shut down cleanly (it synced and closed its
	// logs), else 0: Kafka's rule for telling an unclean shutdown
	// (KAFKA-15586), after which the broker may have lost unsynced writes
	// and leaves every ELR.
	PreviousBrokerEpoch int64 `json:",omitempty"`
}

// RegisterResponse gives the broker its epoch for this incarnation.
type RegisterResponse struct {
	Error       string
	BrokerEpoch int64
}

// HeartbeatRequest keeps a broker's session alive and asks for metadata newer
// than MetadataVersion.
type HeartbeatRequest struct {
	BrokerID        int32
	BrokerEpoch     int64
	MetadataVersion int64
}

// HeartbeatResponse carries the metadata when the broker's is stale.
// Error "unknown-broker" or "stale-epoch" tells the broker to register again.
type HeartbeatResponse struct {
	Error    string
	Metadata *Snapshot
}

// AlterISRRequest is a leader asking to change a partition's ISR.
type AlterISRRequest struct {
	BrokerID       int32
	BrokerEpoch    int64
	Topic          string
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// AlterISRResponse returns the partition's state after the request, accepted
// or not; Error says why not.
type AlterISRResponse struct {
	Error string
	State *Partition
}

// TopicSpec asks for a topic. Zero or empty fields take the cluster default.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int32
	Election          string
}

// CreateTopicsRequest creates topics; ValidateOnly checks without creating.
type CreateTopicsRequest struct {
	Topics       []TopicSpec
	ValidateOnly bool
}

// TopicResult is the outcome for one topic: a Kafka error code and message.
type TopicResult struct {
	Name      string
	ErrorCode int16
	Message   string
	Topic     *Topic
}

// CreateTopicsResponse answers CreateTopicsRequest, one result per topic.
type CreateTopicsResponse struct {
	Results []TopicResult
}

// Error strings shared by controller and brokers.
const (
	ErrClusterID         = "cluster-id-mismatch"
	ErrUnknownBroker     = "unknown-broker"
	ErrStaleBrokerEpoch  = "stale-broker-epoch"
	ErrNotLeader         = "not-leader"
	ErrStaleLeaderEpoch  = "stale-leader-epoch"
	ErrStalePartition    = "stale-partition-epoch"
	ErrUnknownPartition  = "unknown-partition"
	ErrIneligibleReplica = "ineligible-replica"
)

// Lookup finds a topic and partition in the snapshot.
func (s *Snapshot) Lookup(topic string, partition int32) (*Topic, *Partition) {
	if s == nil {
		return nil, nil
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		if t.Name != topic {
			continue
		}
		if partition < 0 || int(partition) >= len(t.Partitions) {
			return t, nil
		}
		return t, &t.Partitions[partition]
	}
	return nil, nil
}

// BrokerByID finds a broker in the snapshot.
func (s *Snapshot) BrokerByID(id int32) *Broker {
	if s == nil {
		return nil
	}
	for i := range s.Brokers {
		if s.Brokers[i].ID == id {
			return &s.Brokers[i]
		}
	}
	return nil
}

// Contains reports whether id is in ids.
func Contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// ValidTopicName applies Kafka's rule for topic names.
func ValidTopicName(n string) error {
	if n == "" || n == "." || n == ".." || len(n) > 249 {
		return fmt.Errorf("topic name %q is empty, '.', '..' or longer than 249 characters", n)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q has %q; only ASCII letters, digits, '.', '_' and '-' are allowed", n, r)
		}
	}
	return nil
}
