package core

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

// ControllerID is the Send target meaning "the controller".
const ControllerID int32 = -1000

// Replica ids in Fetch and ListOffsets: an ordinary consumer, and a debug
// consumer that may read any replica, leader or not, up to its log end.
const (
	ConsumerReplicaID int32 = -1
	DebugReplicaID    int32 = -2
)

// Config holds one broker's settings.
type Config struct {
	// ClusterID is the cluster the broker belongs to: it registers only
	// with a controller of that cluster and reports it in Metadata, where
	// a client can tell this cluster from another on the same address.
	// Empty: control.DefaultClusterID.
	ClusterID   string
	BrokerID    int32
	Host        string // advertised to clients and peers
	Port        int32
	Incarnation string // differs on every process start

	ReplicaLagTimeMaxMs   int64 // a follower not caught up for this long leaves the ISR
	ReplicaLagMaxMessages int64 // a follower this many offsets behind leaves the ISR; 0 disables
	ReplicaFetchWaitMaxMs int32
	ReplicaFetchMaxBytes  int32
	RetryBackoffMs        int64 // after a failed peer or controller request
	HeartbeatIntervalMs   int64
	ControllerTimeoutMs   int64 // how long a controller request may take
	CheckpointIntervalMs  int64 // how often HW and epoch checkpoints are written
	AutoCreateTopics      bool

	// The group coordinator (groups.go), with Kafka's names and defaults:
	// offsets.topic.num.partitions (Kafka's is 50; a few spread the
	// groups over the brokers as well in a test's cluster),
	// group.min.session.timeout.ms, group.max.session.timeout.ms,
	// group.initial.rebalance.delay.ms, offsets.commit.timeout.ms.
	OffsetsTopicPartitions       int32
	GroupMinSessionTimeoutMs     int32
	GroupMaxSessionTimeoutMs     int32
	GroupInitialRebalanceDelayMs int64
	GroupCommitTimeoutMs         int64
	// The transaction coordinator (txns.go): transaction.state.log.num.partitions
	// (Kafka's is 50) and transaction.max.timeout.ms.
	TransactionTopicPartitions int32
	TransactionMaxTimeoutMs    int64
	// Bugs are the bugs planted in this broker on purpose (package bug),
	// none unless a test asks: each breaks one rule where the code below
	// applies it. Only bugs that live in the broker.
	Bugs bug.Set
}

// DefaultConfig returns the documented defaults (Kafka's where Kafka has one).
func DefaultConfig() Config {
	return Config{
		ReplicaLagTimeMaxMs:   10000,
		ReplicaLagMaxMessages: 4000,
		ReplicaFetchWaitMaxMs: 500,
		ReplicaFetchMaxBytes:  1 << 20,
		RetryBackoffMs:        100,
		HeartbeatIntervalMs:   250,
		ControllerTimeoutMs:   2000,
		CheckpointIntervalMs:  1000,
		AutoCreateTopics:      true,

		OffsetsTopicPartitions:       3,
		GroupMinSessionTimeoutMs:     6000,
		GroupMaxSessionTimeoutMs:     1800000,
		GroupInitialRebalanceDelayMs: 3000,
		GroupCommitTimeoutMs:         5000,
		TransactionTopicPartitions:   3,
		TransactionMaxTimeoutMs:      900000,
	}
}

// Validate refuses impossible settings with the reason.
func (c Config) Validate() error {
	if c.ClusterID != "" {
		if err := control.ValidClusterID(c.ClusterID); err != nil {
			return err
		}
	}
	if err := c.Bugs.Only(bug.Broker); err != nil {
		return err
	}
	switch {
	case c.BrokerID < 0:
		return fmt.Errorf("broker id must be >= 0, got %d", c.BrokerID)
	case c.BrokerID >= producerIDBrokers:
		return fmt.Errorf("broker id must be below %d, the broker ids producer ids can tell apart, got %d", producerIDBrokers, c.BrokerID)
	case c.ReplicaLagTimeMaxMs <= 0:
		return fmt.Errorf("replica.lag.time.max.ms must be positive, got %d", c.ReplicaLagTimeMaxMs)
	case c.ReplicaLagMaxMessages < 0:
		return fmt.Errorf("replica.lag.max.messages must be >= 0 (0 disables it), got %d", c.ReplicaLagMaxMessages)
	case c.HeartbeatIntervalMs <= 0:
		return fmt.Errorf("heartbeat interval must be positive, got %d", c.HeartbeatIntervalMs)
	case c.OffsetsTopicPartitions < 1:
		return fmt.Errorf("offsets.topic.num.partitions must be positive, got %d", c.OffsetsTopicPartitions)
	case c.GroupMinSessionTimeoutMs < 1 || c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs:
		return fmt.Errorf("group session timeouts must be positive, the minimum at most the maximum, got %d and %d ms",
			c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs)
	case c.GroupInitialRebalanceDelayMs < 0:
		return fmt.Errorf("group.initial.rebalance.delay.ms must be >= 0, got %d", c.GroupInitialRebalanceDelayMs)
	case c.TransactionTopicPartitions < 1 || c.TransactionMaxTimeoutMs < 1:
		return fmt.Errorf("transaction.state.log.num.partitions and transaction.max.timeout.ms must be positive, got %d and %d",
			c.TransactionTopicPartitions, c.TransactionMaxTimeoutMs)
	case c.GroupCommitTimeoutMs <= 0:
		return fmt.Errorf("offsets.commit.timeout.ms must be positive, got %d", c.GroupCommitTimeoutMs)
	case int64(c.ReplicaFetchWaitMaxMs) >= c.ReplicaLagTimeMaxMs:
		return fmt.Errorf("replica fetch wait %dms must be below replica.lag.time.max.ms %dms, or idle followers would drop out of the ISR",
			c.ReplicaFetchWaitMaxMs, c.ReplicaLagTimeMaxMs)
	}
	return nil
}

// ConnID names a client connection; the driver assigns them.
type ConnID uint64

// Effect is something the driver must do: Reply, Send or Log.
type Effect interface{ isEffect() }

// Reply answers request Corr on connection Conn. Resp is nil when nothing is
// to be written (acks=0 produce): the connection may read its next request.
// Close asks the driver to close the connection instead: that is how an
// acks=0 producer learns that a write failed (Kafka does the same), since
// it reads no responses.
type Reply struct {
	Conn  ConnID
	Corr  int32
	Resp  kmsg.Response
	Close bool
}

// Send asks the driver to deliver Req to broker To (at Addr) or to the
// controller (To == ControllerID), and to call Response with ID when the
// answer, an error or the timeout comes. Lane separates independent streams
// to the same peer, so a long-polling fetch does not hold up the others.
type Send struct {
	ID        uint64
	To        int32
	Addr      string
	Lane      string
	Req       any // kmsg.Request for brokers, a control request for the controller
	TimeoutMs int64
}

// Log is a line worth keeping in the broker's log (and in traces).
type Log struct{ Line string }

func (Reply) isEffect() {}
func (Send) isEffect()  {}
func (Log) isEffect()   {}

type tp struct {
	topic     string
	partition int32
}

func (k tp) String() string { return fmt.Sprintf("%s-%d", k.topic, k.partition) }

func less(a, b tp) bool { return compareTP(a, b) < 0 }

// compareTP orders partitions by topic, then number.
func compareTP(a, b tp) int {
	return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// Broker is one broker's state machine. Not safe for concurrent use.
type Broker struct {
	cfg  Config
	logs storage.Factory
	now  int64
	// clock turns the driver's readings into now (setNow).
	clock control.ForwardClock

	effects []Effect
	nextID  uint64

	// controller session
	brokerEpoch int64 // 0 until registered
	// prevEpoch is the broker epoch the clean shutdown of the process
	// before this one recorded (storage.CleanShutdown), 0 if it did not
	// shut down cleanly; read once, at the first registration.
	prevEpoch      int64
	prevEpochRead  bool
	registering    bool
	registerErr    string // the last refusal logged, said once
	hbInFlight     bool
	nextHeartbeat  int64
	nextRegister   int64
	md             *control.Snapshot
	creating       map[string]bool // auto-creations asked for, by topic
	pendingCreates map[uint64]*pendingCreate
	controllerReqs map[uint64]string // what an in-flight controller request was

	replicas map[tp]*replica
	order    []tp // sorted keys of replicas

	// follower side: one fetch in flight per leader
	fetching     map[int32]*fetchInFlight
	fetchBackoff map[int32]int64
	offsetReqs   map[uint64]tp

	// producerCounter is the last producer id counter handed out
	// (producers.go); a restart loses it, and the clock takes its place.
	producerCounter int64

	produces []*pendingProduce
	fetches  []*pendingFetch

	// The group coordinator (groups.go): the groups of the offsets
	// partitions this broker leads, the writes of their records waiting
	// for the HW, and a counter for new members' ids.
	groups        map[string]*group
	internalWaits []*internalWait
	memberIDs     int64
	// The transaction coordinator (txns.go): the transactional ids of the
	// transaction partitions this broker leads, and its marker requests
	// in flight.
	txns       map[string]*transaction
	markerReqs map[uint64]markerSend
	nextCheck  int64 // ISR shrink check
	nextCkpt   int64
}

// New returns a broker that will register with the controller on its first
// Tick.
func New(cfg Config, logs storage.Factory) *Broker {
	return &Broker{
		cfg:            cfg,
		logs:           logs,
		creating:       map[string]bool{},
		pendingCreates: map[uint64]*pendingCreate{},
		controllerReqs: map[uint64]string{},
		replicas:       map[tp]*replica{},
		fetching:       map[int32]*fetchInFlight{},
		fetchBackoff:   map[int32]int64{},
		offsetReqs:     map[uint64]tp{},
		groups:         map[string]*group{},
		txns:           map[string]*transaction{},
		markerReqs:     map[uint64]markerSend{},
	}
}

// Effects returns and clears what the broker wants done, in order.
func (b *Broker) Effects() []Effect {
	e := b.effects
	b.effects = nil
	return e
}

func (b *Broker) emit(e Effect) { b.effects = append(b.effects, e) }

func (b *Broker) logf(format string, args ...any) {
	b.emit(Log{Line: fmt.Sprintf(format, args...)})
}

func (b *Broker) reply(conn ConnID, corr int32, resp kmsg.Response) {
	b.emit(Reply{Conn: conn, Corr: corr, Resp: resp})
}

func (b *Broker) send(to int32, addr, lane string, req any, timeout int64) uint64 {
	b.nextID++
	b.emit(Send{ID: b.nextID, To: to, Addr: addr, Lane: lane, Req: req, TimeoutMs: timeout})
	return b.nextID
}

func (b *Broker) sendController(what string, req any) uint64 {
	id := b.send(ControllerID, "", "control", req, b.cfg.ControllerTimeoutMs)
	b.controllerReqs[id] = what
	return id
}

// Metadata is the broker's current view of the cluster (nil before the
// first heartbeat answer). Callers must not modify it.
func (b *Broker) Metadata() *control.Snapshot { return b.md }

// Tick advances time: heartbeats, ISR checks, timeouts, follower fetches.
//
// now, here and in every other event, is in milliseconds, and only
// differences matter but for one use: producer ids (producers.go) stay
// unique across restarts of the broker only if the clock goes on forward
// across them, so the real driver gives wall-clock time (as of its start,
// then monotonic) rather than time since its start.
func (b *Broker) Tick(now int64) {
	b.setNow(now)
	b.controllerSession()
	b.expireProduces()
	b.expireFetches()
	b.expireInternalWaits()
	b.tickGroups()
	b.tickTxns()
	if now >= b.nextCheck {
		b.nextCheck = now + max(b.cfg.ReplicaLagTimeMaxMs/2, 1)
		b.maybeShrinkISRs()
	}
	b.syncIntervals()
	if now >= b.nextCkpt {
		b.nextCkpt = now + max(b.cfg.CheckpointIntervalMs, 1)
		b.checkpoint()
	}
	b.startFetches()
}

// intervalSyncer is a log with an fsync interval policy to run.
type intervalSyncer interface{ MaybeSync(nowMs int64) error }

// syncIntervals runs the fsync interval policy on quiet logs too: a log
// syncs on Append when its interval has passed, but the last appends before
// a pause would otherwise stay unsynced indefinitely.
func (b *Broker) syncIntervals() {
	for _, k := range b.order {
		if s, ok := b.replicas[k].log.(intervalSyncer); ok {
			if err := s.MaybeSync(b.now); err != nil {
				b.logf("%s: sync failed: %v", k, err)
			}
		}
	}
}

func (b *Broker) checkpoint() {
	for _, k := range b.order {
		l := b.replicas[k].log
		if err := l.Checkpoint(); err != nil {
			b.logf("%s: checkpoint failed: %v", k, err)
		}
	}
}

// Close checkpoints and closes every log. The broker is unusable after.
func (b *Broker) Close() error {
	var first error
	for _, k := range b.order {
		if err := b.replicas[k].log.Close(); err != nil && first == nil {
			first = err
		}
	}
	// Every log synced and closed: the next process may say so when it
	// registers (Kafka's clean shutdown file), and stay eligible.
	if cs, ok := b.logs.(storage.CleanShutdown); ok && first == nil && b.brokerEpoch > 0 {
		first = cs.MarkClean(b.brokerEpoch)
	}
	return first
}

// FinalizedFeatures are the cluster's features as the last metadata gave
// them, for ApiVersions (read-only).
func (b *Broker) FinalizedFeatures() map[string]int16 {
	if b.md == nil {
		return nil
	}
	return b.md.Features
}

// previousEpoch is what the registration says of the process before this
// one: its broker epoch if it shut down cleanly, else 0. The record is
// taken at the first registration, so that a crash after it counts as
// unclean.
func (b *Broker) previousEpoch() int64 {
	if !b.prevEpochRead {
		b.prevEpochRead = true
		if cs, ok := b.logs.(storage.CleanShutdown); ok {
			epoch, err := cs.TakeClean()
			if err != nil {
				b.logf("reading the clean shutdown record: %v (registering as after an unclean shutdown)", err)
			}
			b.prevEpoch = epoch
		}
	}
	return b.prevEpoch
}

// setNow reads the driver's clock: the broker's deadlines run on a
// control.ForwardClock, so that a clock stepped back stalls nothing.
func (b *Broker) setNow(now int64) {
	b.now = b.clock.Read(now)
	if b.cfg.Bugs.Has(bug.DeadlinesOnWallClock) {
		// Planted bug deadlines-on-wall-clock takes every reading as it
		// is, breaking the rule that a step back stalls nothing.
		b.now = now
	}
}

// Request handles a client or peer request arriving on conn.
func (b *Broker) Request(now int64, conn ConnID, corr int32, req kmsg.Request) {
	b.setNow(now)
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		b.handleProduce(conn, corr, r)
	case *kmsg.FetchRequest:
		b.handleFetch(conn, corr, r)
	case *kmsg.MetadataRequest:
		b.reply(conn, corr, b.handleMetadata(r))
	case *kmsg.ListOffsetsRequest:
		b.reply(conn, corr, b.handleListOffsets(r))
	case *kmsg.OffsetForLeaderEpochRequest:
		b.reply(conn, corr, b.handleOffsetForLeaderEpoch(r))
	case *kmsg.CreateTopicsRequest:
		b.handleCreateTopics(conn, corr, r)
	case *kmsg.DescribeConfigsRequest:
		b.reply(conn, corr, b.handleDescribeConfigs(r))
	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID != nil {
			b.initTransactional(conn, corr, r)
			break
		}
		b.reply(conn, corr, b.handleInitProducerID(r))
	case *kmsg.AddPartitionsToTxnRequest:
		b.handleAddPartitionsToTxn(conn, corr, r)
	case *kmsg.EndTxnRequest:
		b.handleEndTxn(conn, corr, r)
	case *kmsg.AddOffsetsToTxnRequest:
		b.handleAddOffsetsToTxn(conn, corr, r)
	case *kmsg.TxnOffsetCommitRequest:
		b.handleTxnOffsetCommit(conn, corr, r)
	case *kmsg.WriteTxnMarkersRequest:
		b.handleWriteTxnMarkers(conn, corr, r)
	case *kmsg.FindCoordinatorRequest:
		b.reply(conn, corr, b.handleFindCoordinator(r))
	case *kmsg.JoinGroupRequest:
		b.handleJoinGroup(conn, corr, r)
	case *kmsg.SyncGroupRequest:
		b.handleSyncGroup(conn, corr, r)
	case *kmsg.HeartbeatRequest:
		b.reply(conn, corr, b.handleHeartbeat(r))
	case *kmsg.LeaveGroupRequest:
		b.reply(conn, corr, b.handleLeaveGroup(r))
	case *kmsg.OffsetCommitRequest:
		b.handleOffsetCommit(conn, corr, r)
	case *kmsg.OffsetFetchRequest:
		b.reply(conn, corr, b.handleOffsetFetch(r))
	case *kmsg.DescribeGroupsRequest:
		b.reply(conn, corr, b.handleDescribeGroups(r))
	case *kmsg.ListGroupsRequest:
		b.reply(conn, corr, b.handleListGroups(r))
	default:
		// The wire layer refuses keys we do not advertise; reaching here is a
		// driver bug, and answering nothing would hang the client.
		b.logf("request key %d not handled by the core", req.Key())
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		b.reply(conn, corr, resp)
	}
	b.startFetches()
}

// ConnClosed forgets requests parked for a closed connection.
func (b *Broker) ConnClosed(conn ConnID) {
	b.produces = deleteFunc(b.produces, func(p *pendingProduce) bool { return p.conn == conn })
	b.fetches = deleteFunc(b.fetches, func(f *pendingFetch) bool { return f.conn == conn })
	for id, c := range b.pendingCreates {
		if c.conn == conn {
			delete(b.pendingCreates, id)
		}
	}
}

// Response delivers the answer to an earlier Send (or err if it failed or
// timed out).
func (b *Broker) Response(now int64, id uint64, resp any, err error) {
	b.setNow(now)
	if what, ok := b.controllerReqs[id]; ok {
		delete(b.controllerReqs, id)
		b.controllerResponse(id, what, resp, err)
	} else if ms, ok := b.markerReqs[id]; ok {
		delete(b.markerReqs, id)
		b.markerResponse(ms, resp, err)
	} else if k, ok := b.offsetReqs[id]; ok {
		delete(b.offsetReqs, id)
		b.offsetForEpochResponse(id, k, resp, err)
	} else {
		for leader, f := range b.fetching {
			if f.id == id {
				delete(b.fetching, leader)
				b.fetchResponse(leader, f, resp, err)
				break
			}
		}
	}
	b.startFetches()
}

func deleteFunc[T any](s []T, del func(T) bool) []T {
	out := s[:0]
	for _, x := range s {
		if !del(x) {
			out = append(out, x)
		}
	}
	for i := len(out); i < len(s); i++ {
		var zero T
		s[i] = zero
	}
	return out
}

func (b *Broker) replica(topic string, partition int32) *replica {
	return b.replicas[tp{topic, partition}]
}

func (b *Broker) addReplica(k tp, r *replica) {
	b.replicas[k] = r
	i := sort.Search(len(b.order), func(i int) bool { return !less(b.order[i], k) })
	b.order = append(b.order, tp{})
	copy(b.order[i+1:], b.order[i:])
	b.order[i] = k
}

// ReplicaInfo describes a local replica, for tests, tools and traces.
type ReplicaInfo struct {
	Role        string // leader, follower or none
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	LEO, HW     int64
}

// Replica returns the state of this broker's replica of a partition.
func (b *Broker) Replica(topic string, partition int32) (ReplicaInfo, bool) {
	r := b.replica(topic, partition)
	if r == nil {
		return ReplicaInfo{}, false
	}
	return ReplicaInfo{
		Role: r.role.String(), Leader: r.leader, LeaderEpoch: r.leaderEpoch, ISR: r.isr,
		LEO: r.log.LogEndOffset(), HW: r.log.HighWatermark(),
	}, true
}
