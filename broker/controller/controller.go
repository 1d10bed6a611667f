package controller

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// Kafka error codes the controller returns for topic creation.
const (
	errInvalidTopic       int16 = 17
	errTopicExists        int16 = 36
	errInvalidPartitions  int16 = 37
	errInvalidReplication int16 = 38
	errInvalidConfig      int16 = 40
)

// Config holds the controller's settings and the cluster's topic defaults.
type Config struct {
	ClusterID                string // brokers of another cluster are refused; empty: control.DefaultClusterID
	SessionTimeoutMs         int64
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	DefaultMinInsyncReplicas int32
	DefaultElection          string
	// Bugs are the bugs planted in the controller on purpose (package
	// bug), none unless a test asks. Only bugs that live in the controller.
	Bugs bug.Set
}

// DefaultConfig returns the defaults the CLI documents.
func DefaultConfig() Config {
	return Config{
		ClusterID:                control.DefaultClusterID,
		SessionTimeoutMs:         3000,
		DefaultPartitions:        3,
		DefaultReplicationFactor: 3,
		DefaultMinInsyncReplicas: 1,
		DefaultElection:          control.Clean,
	}
}

// Validate refuses impossible settings with the reason.
func (c Config) Validate() error {
	if c.ClusterID != "" {
		if err := control.ValidClusterID(c.ClusterID); err != nil {
			return err
		}
	}
	if err := c.Bugs.Only(bug.Controller); err != nil {
		return err
	}
	switch {
	case c.SessionTimeoutMs <= 0:
		return fmt.Errorf("session timeout must be positive, got %dms", c.SessionTimeoutMs)
	case c.DefaultPartitions < 1:
		return fmt.Errorf("partitions must be at least 1, got %d", c.DefaultPartitions)
	case c.DefaultReplicationFactor < 1:
		return fmt.Errorf("replication factor must be at least 1, got %d", c.DefaultReplicationFactor)
	case c.DefaultMinInsyncReplicas < 1:
		return fmt.Errorf("min.insync.replicas must be at least 1, got %d", c.DefaultMinInsyncReplicas)
	case int32(c.DefaultReplicationFactor) < c.DefaultMinInsyncReplicas:
		return fmt.Errorf("min.insync.replicas %d exceeds the replication factor %d: acks=-1 writes could never succeed",
			c.DefaultMinInsyncReplicas, c.DefaultReplicationFactor)
	case !slices.Contains(control.Elections(), c.DefaultElection):
		return fmt.Errorf("election policy must be one of %s, got %q", strings.Join(control.Elections(), ", "), c.DefaultElection)
	}
	return nil
}

// Controller is the controller state machine. Not safe for concurrent use.
type Controller struct {
	cfg           Config
	md            control.Snapshot
	incarnation   map[int32]string
	lastHeartbeat map[int32]int64
	refused       map[int32]string // the cluster id last refused, by broker
	started       bool
	log           []string
	// clock is the time the sessions run on (control.ForwardClock).
	clock control.ForwardClock
}

// New returns a controller, resuming from a persisted snapshot if not nil.
func New(cfg Config, restored *control.Snapshot) *Controller {
	c := &Controller{cfg: cfg, incarnation: map[int32]string{}, lastHeartbeat: map[int32]int64{}, refused: map[int32]string{}}
	if restored != nil {
		c.md = *clone(restored)
	}
	c.md.Features = nil
	if cfg.DefaultElection == control.ELR {
		c.md.Features = map[string]int16{control.FeatureELR: 1}
	}
	return c
}

// Version is the metadata version; it changes with every mutation.
func (c *Controller) Version() int64 { return c.md.Version }

// Snapshot returns a deep copy of the metadata, for persistence.
func (c *Controller) Snapshot() *control.Snapshot { return clone(&c.md) }

// Events returns and clears the human-readable decisions taken since the
// last call (elections, fencing, ISR changes), for logs and traces.
func (c *Controller) Events() []string {
	ev := c.log
	c.log = nil
	return ev
}

func (c *Controller) logf(format string, args ...any) {
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

// begin gives every broker known from a restored snapshot a fresh session
// on the first event after a (re)start: the controller cannot know when they
// last heartbeated, and fencing them all at once would move every leader.
func (c *Controller) begin(now int64) {
	if c.started {
		return
	}
	c.started = true
	for _, b := range c.md.Brokers {
		c.lastHeartbeat[b.ID] = now
	}
}

// Handle answers one broker request.
func (c *Controller) Handle(now int64, req any) any {
	now = c.clock.Read(now)
	c.begin(now)
	switch r := req.(type) {
	case *control.RegisterRequest:
		return c.register(now, r)
	case *control.HeartbeatRequest:
		return c.heartbeat(now, r)
	case *control.AlterISRRequest:
		return c.alterISR(r)
	case *control.CreateTopicsRequest:
		return c.createTopics(r)
	default:
		return fmt.Errorf("controller: unknown request %T", req)
	}
}

// Tick fences brokers whose session expired.
func (c *Controller) Tick(now int64) {
	now = c.clock.Read(now)
	c.begin(now)
	var expired []int32
	for i := range c.md.Brokers {
		b := &c.md.Brokers[i]
		if b.Fenced || now-c.lastHeartbeat[b.ID] <= c.cfg.SessionTimeoutMs {
			continue
		}
		c.logf("fence broker %d: no heartbeat for %dms", b.ID, now-c.lastHeartbeat[b.ID])
		expired = append(expired, b.ID)
	}
	c.fence(expired...)
}

func (c *Controller) bump() { c.md.Version++ }

func (c *Controller) broker(id int32) *control.Broker { return c.md.BrokerByID(id) }

func (c *Controller) live(id int32) bool {
	b := c.broker(id)
	return b != nil && !b.Fenced
}

func (c *Controller) register(now int64, r *control.RegisterRequest) *control.RegisterResponse {
	mine, theirs := cmp.Or(c.cfg.ClusterID, control.DefaultClusterID), cmp.Or(r.ClusterID, control.DefaultClusterID)
	if theirs != mine {
		// Said once per broker and id: the broker keeps asking.
		if c.refused[r.BrokerID] != theirs {
			c.refused[r.BrokerID] = theirs
			c.logf("refused broker %d of cluster %q: this is cluster %q", r.BrokerID, theirs, mine)
		}
		return &control.RegisterResponse{Error: fmt.Sprintf("%s: the controller runs cluster %q, the broker was started for %q",
			control.ErrClusterID, mine, theirs)}
	}
	b := c.broker(r.BrokerID)
	if b != nil && c.incarnation[r.BrokerID] == r.Incarnation {
		return &control.RegisterResponse{BrokerEpoch: b.Epoch}
	}
	if b != nil {
		// A new incarnation: the old process is gone, whatever its session
		// says. Move its leaderships before it is trusted again.
		c.logf("broker %d re-registered (new incarnation)", r.BrokerID)
		if !b.Fenced {
			c.fence(r.BrokerID)
		}
		if r.PreviousBrokerEpoch != b.Epoch {
			c.uncleanShutdown(r.BrokerID)
		}
	} else {
		c.md.Brokers = append(c.md.Brokers, control.Broker{ID: r.BrokerID, Fenced: true})
		sort.Slice(c.md.Brokers, func(i, j int) bool { return c.md.Brokers[i].ID < c.md.Brokers[j].ID })
		c.logf("broker %d registered", r.BrokerID)
	}
	b = c.broker(r.BrokerID)
	c.bump()
	b.Host, b.Port, b.Epoch, b.Fenced = r.Host, r.Port, c.md.Version, true
	c.incarnation[r.BrokerID] = r.Incarnation
	c.lastHeartbeat[r.BrokerID] = now
	return &control.RegisterResponse{BrokerEpoch: b.Epoch}
}

func (c *Controller) heartbeat(now int64, r *control.HeartbeatRequest) *control.HeartbeatResponse {
	b := c.broker(r.BrokerID)
	if b == nil {
		return &control.HeartbeatResponse{Error: control.ErrUnknownBroker}
	}
	if b.Epoch != r.BrokerEpoch {
		return &control.HeartbeatResponse{Error: control.ErrStaleBrokerEpoch}
	}
	c.lastHeartbeat[r.BrokerID] = now
	if b.Fenced {
		c.bump()
		b.Fenced = false
		c.logf("unfence broker %d", b.ID)
		c.electOffline()
	}
	resp := &control.HeartbeatResponse{}
	if r.MetadataVersion < c.md.Version {
		resp.Metadata = clone(&c.md)
	}
	return resp
}

// fence marks brokers dead: their leaderships go to others per each topic's
// policy and they leave every ISR they are not the last member of. All are
// marked before any election, so that none is elected on its way out.
func (c *Controller) fence(ids ...int32) {
	if len(ids) == 0 {
		return
	}
	c.bump()
	for _, id := range ids {
		c.broker(id).Fenced = true
	}
	for _, id := range ids {
		c.fenceOne(id)
	}
}

func (c *Controller) fenceOne(id int32) {
	for ti := range c.md.Topics {
		t := &c.md.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			switch {
			case p.Leader == id:
				c.elect(t, p)
			case control.Contains(p.ISR, id) && (len(p.ISR) > 1 || t.Election == control.ELR):
				c.setISR(t, p, without(p.ISR, id))
				p.PartitionEpoch++
				c.logf("%s-%d: isr %v%s (broker %d fenced)", t.Name, p.Partition, p.ISR, elrString(t, p), id)
			}
		}
	}
}

// electOffline retries the election of every leaderless partition.
func (c *Controller) electOffline() {
	for ti := range c.md.Topics {
		t := &c.md.Topics[ti]
		for pi := range t.Partitions {
			if p := &t.Partitions[pi]; p.Leader == control.NoLeader {
				c.elect(t, p)
			}
		}
	}
}

// elect picks a leader for p among live replicas. Clean: the first live ISR
// member in replica order, else none (the ISR is kept, so the partition comes
// back when a member does). Unclean: failing that, the first live replica,
// whose log becomes the truth; the ISR restarts as just the new leader.
// ELR: the old leader leaves the ISR even when it is the last member (the
// ISR may be empty), and failing a live ISR member the first live ELR
// member is elected, then, when the ISR and the ELR are both empty, a live
// member of LastKnownELR, the most recent first.
func (c *Controller) elect(t *control.Topic, p *control.Partition) {
	if t.Election == control.ELR && !c.cfg.Bugs.Has(bug.UncleanWhenClean) {
		c.electELR(t, p)
		return
	}
	old := p.Leader
	next := control.NoLeader
	for _, r := range p.Replicas {
		if r != old && c.live(r) && control.Contains(p.ISR, r) {
			next = r
			break
		}
	}
	isr := p.ISR
	how := t.Election
	if next != control.NoLeader {
		if len(isr) > 1 {
			isr = without(isr, old)
		}
	} else if t.Election == control.Unclean || c.cfg.Bugs.Has(bug.UncleanWhenClean) {
		// (Planted bug unclean-when-clean comes here under a clean policy
		// too, breaking the rule that a clean election picks only an
		// in-sync replica, and stays offline otherwise.)
		if t.Election != control.Unclean {
			how = "unclean (planted bug unclean-when-clean)"
		}
		for _, r := range p.Replicas {
			if r != old && c.live(r) {
				next = r
				isr = []int32{r}
				break
			}
		}
	}
	if next == control.NoLeader && old == control.NoLeader {
		return
	}
	p.Leader, p.ISR = next, slices.Clone(isr)
	p.LeaderEpoch++
	p.PartitionEpoch++
	if next == control.NoLeader {
		c.logf("%s-%d: offline (no live in-sync replica), isr %v", t.Name, p.Partition, p.ISR)
	} else {
		c.logf("%s-%d: leader %d epoch %d isr %v (%s election)", t.Name, p.Partition, next, p.LeaderEpoch, p.ISR, how)
	}
}

// electELR is elect under KIP-966.
func (c *Controller) electELR(t *control.Topic, p *control.Partition) {
	old := p.Leader
	if old != control.NoLeader {
		c.setISR(t, p, without(p.ISR, old))
	}
	pick := func(ids []int32) int32 {
		for _, r := range p.Replicas {
			if c.live(r) && control.Contains(ids, r) {
				return r
			}
		}
		return control.NoLeader
	}
	next, how := pick(p.ISR), "elr election: in-sync replica"
	if next == control.NoLeader {
		next, how = pick(p.ELR), "elr election: eligible leader replica"
	}
	if next == control.NoLeader && len(p.ISR) == 0 && len(p.ELR) == 0 {
		for i := len(p.LastKnownELR) - 1; i >= 0; i-- {
			if r := p.LastKnownELR[i]; c.live(r) {
				next, how = r, "elr election: last known eligible replica"
				break
			}
		}
	}
	if next != control.NoLeader && !control.Contains(p.ISR, next) {
		c.setISR(t, p, []int32{next})
	}
	if next == control.NoLeader && old == control.NoLeader {
		return
	}
	p.Leader = next
	p.LeaderEpoch++
	p.PartitionEpoch++
	if next == control.NoLeader {
		c.logf("%s-%d: offline (no live in-sync or eligible replica), isr %v%s", t.Name, p.Partition, p.ISR, elrString(t, p))
	} else {
		c.logf("%s-%d: leader %d epoch %d isr %v%s (%s)", t.Name, p.Partition, next, p.LeaderEpoch, p.ISR, elrString(t, p), how)
	}
}

// setISR gives p a new ISR and, under policy elr, keeps KIP-966's sets:
// while the ISR is below min.insync.replicas the high watermark stands
// still, so a member that leaves it then joins the ELR (it has every
// committed record); an ISR back at the minimum clears both sets. The
// caller bumps the epochs.
func (c *Controller) setISR(t *control.Topic, p *control.Partition, isr []int32) {
	old := p.ISR
	p.ISR = slices.Clone(isr)
	if t.Election != control.ELR {
		return
	}
	if int32(len(isr)) >= t.MinInsyncReplicas {
		p.ELR, p.LastKnownELR = nil, nil
		return
	}
	var elr []int32
	for _, r := range p.Replicas { // replica order, as the ISR
		if control.Contains(isr, r) {
			continue
		}
		if control.Contains(p.ELR, r) || control.Contains(old, r) {
			elr = append(elr, r)
		}
	}
	p.ELR = elr
	p.LastKnownELR = slices.DeleteFunc(p.LastKnownELR, func(r int32) bool { return control.Contains(isr, r) || control.Contains(elr, r) })
}

// uncleanShutdown takes a broker that shut down uncleanly (it did not
// close its logs, so it may have lost unsynced writes) out of every ELR,
// into LastKnownELR.
func (c *Controller) uncleanShutdown(id int32) {
	for ti := range c.md.Topics {
		t := &c.md.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if !control.Contains(p.ELR, id) {
				continue
			}
			if c.cfg.Bugs.Has(bug.ELRKeepsUnclean) {
				// Planted bug elr-keeps-unclean: the broker stays in the
				// ELR, breaking the rule that only a replica that shut down
				// cleanly is still known to hold every committed record.
				continue
			}
			c.bump()
			p.ELR = without(p.ELR, id)
			p.LastKnownELR = append(without(p.LastKnownELR, id), id)
			p.PartitionEpoch++
			c.logf("%s-%d: broker %d shut down uncleanly%s", t.Name, p.Partition, id, elrString(t, p))
		}
	}
}

// elrString is the ELR sets for a log line, under policy elr.
func elrString(t *control.Topic, p *control.Partition) string {
	if t.Election != control.ELR {
		return ""
	}
	s := fmt.Sprintf(" elr %v", p.ELR)
	if len(p.LastKnownELR) > 0 {
		s += fmt.Sprintf(" last known elr %v", p.LastKnownELR)
	}
	return s
}

func (c *Controller) alterISR(r *control.AlterISRRequest) *control.AlterISRResponse {
	b := c.broker(r.BrokerID)
	if b == nil || b.Epoch != r.BrokerEpoch {
		return &control.AlterISRResponse{Error: control.ErrStaleBrokerEpoch}
	}
	t, p := c.md.Lookup(r.Topic, r.Partition)
	if p == nil {
		return &control.AlterISRResponse{Error: control.ErrUnknownPartition}
	}
	state := func(err string) *control.AlterISRResponse {
		cp := clonePartition(p)
		return &control.AlterISRResponse{Error: err, State: &cp}
	}
	switch {
	case p.Leader != r.BrokerID:
		return state(control.ErrNotLeader)
	case p.LeaderEpoch != r.LeaderEpoch:
		return state(control.ErrStaleLeaderEpoch)
	case p.PartitionEpoch != r.PartitionEpoch:
		return state(control.ErrStalePartition)
	case !control.Contains(r.ISR, r.BrokerID):
		return state(control.ErrIneligibleReplica)
	}
	for _, id := range r.ISR {
		if !control.Contains(p.Replicas, id) || (!control.Contains(p.ISR, id) && !c.live(id)) {
			return state(control.ErrIneligibleReplica)
		}
	}
	c.bump()
	c.setISR(t, p, r.ISR)
	p.PartitionEpoch++
	c.logf("%s-%d: isr %v%s (requested by leader %d)", t.Name, p.Partition, p.ISR, elrString(t, p), r.BrokerID)
	return state("")
}

func (c *Controller) createTopics(r *control.CreateTopicsRequest) *control.CreateTopicsResponse {
	resp := &control.CreateTopicsResponse{}
	for _, spec := range r.Topics {
		res := c.createTopic(spec, r.ValidateOnly)
		res.Name = spec.Name
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func (c *Controller) createTopic(s control.TopicSpec, validateOnly bool) control.TopicResult {
	if err := control.ValidTopicName(s.Name); err != nil {
		return control.TopicResult{ErrorCode: errInvalidTopic, Message: err.Error()}
	}
	if t, _ := c.md.Lookup(s.Name, -1); t != nil {
		return control.TopicResult{ErrorCode: errTopicExists, Message: fmt.Sprintf("topic %q already exists", s.Name)}
	}
	if s.Partitions <= 0 {
		s.Partitions = c.cfg.DefaultPartitions
	}
	if s.ReplicationFactor <= 0 {
		s.ReplicationFactor = c.cfg.DefaultReplicationFactor
	}
	if s.MinInsyncReplicas <= 0 {
		s.MinInsyncReplicas = c.cfg.DefaultMinInsyncReplicas
	}
	if s.Election == "" || s.Election == control.Clean && c.cfg.DefaultElection == control.ELR {
		// ELR is a cluster's feature in Kafka (eligible.leader.replicas.version),
		// not a topic's: a topic that asks for no unclean elections in an
		// ELR cluster gets ELR.
		s.Election = c.cfg.DefaultElection
	}
	var live []int32
	for _, b := range c.md.Brokers {
		if !b.Fenced {
			live = append(live, b.ID)
		}
	}
	switch {
	case s.Partitions > 10000:
		return control.TopicResult{ErrorCode: errInvalidPartitions, Message: fmt.Sprintf("%d partitions is more than this broker supports (10000)", s.Partitions)}
	case int(s.ReplicationFactor) > len(live):
		return control.TopicResult{ErrorCode: errInvalidReplication,
			Message: fmt.Sprintf("replication factor %d is larger than the %d live brokers", s.ReplicationFactor, len(live))}
	case s.MinInsyncReplicas > int32(s.ReplicationFactor):
		return control.TopicResult{ErrorCode: errInvalidConfig,
			Message: fmt.Sprintf("min.insync.replicas %d exceeds the replication factor %d", s.MinInsyncReplicas, s.ReplicationFactor)}
	case !slices.Contains(control.Elections(), s.Election):
		return control.TopicResult{ErrorCode: errInvalidConfig, Message: fmt.Sprintf("election policy %q is not one of %s", s.Election, strings.Join(control.Elections(), ", "))}
	}
	t := control.Topic{Name: s.Name, MinInsyncReplicas: s.MinInsyncReplicas, Election: s.Election}
	if validateOnly {
		return control.TopicResult{Topic: &t}
	}
	c.bump()
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", s.Name, c.md.Version))
	copy(t.ID[:], sum[:16])
	h := fnv.New32a()
	h.Write([]byte(s.Name))
	start := int(h.Sum32() % uint32(len(live)))
	for p := int32(0); p < s.Partitions; p++ {
		replicas := make([]int32, s.ReplicationFactor)
		for i := range replicas {
			replicas[i] = live[(start+int(p)+i)%len(live)]
		}
		t.Partitions = append(t.Partitions, control.Partition{
			Partition: p, Leader: replicas[0], Replicas: replicas, ISR: slices.Clone(replicas),
		})
	}
	c.md.Topics = append(c.md.Topics, t)
	sort.Slice(c.md.Topics, func(i, j int) bool { return c.md.Topics[i].Name < c.md.Topics[j].Name })
	c.logf("create topic %s: %d partitions, rf %d, min.insync %d, %s election", s.Name, s.Partitions, s.ReplicationFactor, s.MinInsyncReplicas, s.Election)
	cp := t
	return control.TopicResult{Topic: &cp}
}

func without(ids []int32, id int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func clonePartition(p *control.Partition) control.Partition {
	cp := *p
	cp.Replicas = slices.Clone(p.Replicas)
	cp.ISR = slices.Clone(p.ISR)
	cp.ELR = slices.Clone(p.ELR)
	cp.LastKnownELR = slices.Clone(p.LastKnownELR)
	return cp
}

func clone(s *control.Snapshot) *control.Snapshot {
	out := &control.Snapshot{Version: s.Version, Brokers: slices.Clone(s.Brokers), Features: maps.Clone(s.Features)}
	for _, t := range s.Topics {
		ct := t
		ct.Partitions = make([]control.Partition, len(t.Partitions))
		for i := range t.Partitions {
			ct.Partitions[i] = clonePartition(&t.Partitions[i])
		}
		out.Topics = append(out.Topics, ct)
	}
	return out
}
