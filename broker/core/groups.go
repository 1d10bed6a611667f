package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// The group coordinator: consumer groups with Kafka's classic protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; the clients' own
// assignors, eager or cooperative, ride in it unseen) and committed
// offsets (OffsetCommit, OffsetFetch).
//
// A group lives in a partition of the internal topic __consumer_offsets
// (the hash of its name, as Kafka's), which the controller creates with
// the cluster's defaults the first time a client looks for a coordinator,
// and is replicated like any other topic: the leader of that partition is
// the group's coordinator. What must outlive the coordinator is written
// there before it is answered, the same way as an acks=-1 produce (the
// high watermark must pass it): every committed offset, and the group's
// generation, protocol, leader and members' assignments once a rebalance
// completes. A broker that becomes the partition's leader reads the whole
// log back (the last record of each offset and group wins), so a
// coordinator's failover loses nothing the ISR held, and a fault that
// loses acknowledged writes of the partition loses committed offsets too,
// which is what the tester's group checks are for. The members' sessions
// and a rebalance in progress are the coordinator's memory only: after a
// failover the members' next heartbeats find their group at the stored
// generation, and a member that does not heartbeat within its session
// timeout is removed, starting a rebalance.
//
// Not supported: static membership (a join's group.instance.id is
// ignored: the member is dynamic), KIP-848's consumer protocol
// (ConsumerGroupHeartbeat), transactional offset commits, offset
// retention and deletion, DeleteGroups.

// OffsetsTopic is the internal topic that holds groups and their offsets.
const OffsetsTopic = "__consumer_offsets"

// Group states, as DescribeGroups names them.
const (
	groupEmpty               = "Empty"
	groupPreparingRebalance  = "PreparingRebalance"
	groupCompletingRebalance = "CompletingRebalance"
	groupStable              = "Stable"
)

// group is one consumer group this broker coordinates.
type group struct {
	name       string
	partition  int32 // of OffsetsTopic
	state      string
	generation int32
	protoType  string
	protocol   string
	leader     string
	members    map[string]*member
	// pending are members given an id by MEMBER_ID_REQUIRED that have
	// not joined with it yet, with when they are forgotten.
	pending map[string]int64
	// rebalanceAt is when a rebalance in progress completes even if not
	// every member has joined (PreparingRebalance); syncBy, when the
	// members that have not sent SyncGroup are removed
	// (CompletingRebalance).
	rebalanceAt int64
	syncBy      int64
	// joinNotBefore holds a rebalance of an empty group back for
	// group.initial.rebalance.delay.ms, so that members joining at once
	// join one generation.
	joinNotBefore int64
	// offsets are the committed offsets, by topic and partition;
	// txnOffsets those committed in open transactions, by producer id,
	// until their markers say whether they count (txnoffsets.go).
	offsets    map[tp]committed
	txnOffsets map[int64]map[tp]committed
	// storing: the completed rebalance's record is being written; the
	// leader's SyncGroup is answered, and the group is Stable, once it is
	// committed.
	storing bool
}

type committed struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

// member is one member of a group.
type member struct {
	id               string
	clientID         string
	sessionTimeout   int64
	rebalanceTimeout int64
	protoType        string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte
	expires          int64 // its session ends unless it heartbeats
	// A parked JoinGroup or SyncGroup waiting for the rebalance.
	join *parked
	sync *parked
}

type parked struct {
	conn    ConnID
	corr    int32
	version int16
}

// groupKeyPartition is the partition of OffsetsTopic that holds group
// name: Java's String.hashCode of it, as Kafka places groups.
func groupKeyPartition(name string, partitions int32) int32 {
	var h int32
	for _, r := range name {
		if r > 0xffff {
			r1, r2 := (r-0x10000)>>10+0xd800, (r-0x10000)&0x3ff+0xdc00
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}

// coordinatorFor says which broker coordinates key, a group's name in
// internal topic OffsetsTopic or a transactional id's in
// TransactionTopic, or why none can be named now (the internal topic is
// being created, or the partition has no leader).
func (b *Broker) coordinatorFor(topic string, partitions int32, key string) (*control.Broker, int16) {
	if b.md == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	t, _ := b.md.Lookup(topic, -1)
	if t == nil {
		b.createInternalTopic(topic, partitions)
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	_, p := b.md.Lookup(topic, groupKeyPartition(key, int32(len(t.Partitions))))
	if p == nil || p.Leader == control.NoLeader {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	br := b.md.BrokerByID(p.Leader)
	if br == nil || br.Fenced {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return br, 0
}

// createInternalTopic asks the controller for an internal topic, once.
func (b *Broker) createInternalTopic(name string, partitions int32) {
	if b.creating[name] || b.brokerEpoch == 0 {
		return
	}
	b.creating[name] = true
	b.logf("creating the internal topic %s (%d partitions)", name, partitions)
	b.sendController("create-topics", &control.CreateTopicsRequest{Topics: []control.TopicSpec{{Name: name, Partitions: partitions}}})
}

func (b *Broker) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.SetVersion(req.Version)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		topic, partitions := OffsetsTopic, b.cfg.OffsetsTopicPartitions
		if req.CoordinatorType == 1 {
			topic, partitions = TransactionTopic, b.cfg.TransactionTopicPartitions
		}
		switch {
		case req.CoordinatorType != 0 && req.CoordinatorType != 1:
			c.ErrorCode = kerr.InvalidRequest.Code
			msg := "only group (0) and transaction (1) coordinators are supported"
			c.ErrorMessage = &msg
		default:
			br, code := b.coordinatorFor(topic, partitions, key)
			c.ErrorCode = code
			if br != nil {
				c.NodeID, c.Host, c.Port = br.ID, br.Host, br.Port
			}
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp
}

// groupHome is this broker's replica of the offsets partition that
// holds group name, with the error a coordinator answers when it is not
// the leader of it, or has not read it back yet.
func (b *Broker) groupHome(name string) (*replica, int16) {
	t, _ := b.md.Lookup(OffsetsTopic, -1)
	if t == nil {
		return nil, kerr.NotCoordinator.Code
	}
	r := b.replica(OffsetsTopic, groupKeyPartition(name, int32(len(t.Partitions))))
	if r == nil || r.role != roleLeader {
		return nil, kerr.NotCoordinator.Code
	}
	return r, 0
}

// groupFor is group name at this broker, its coordinator: created (Empty)
// if create and it is not known.
func (b *Broker) groupFor(name string, create bool) (*group, int16) {
	if name == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	if b.md == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	r, code := b.groupHome(name)
	if code != 0 {
		return nil, code
	}
	g := b.groups[name]
	if g == nil && create {
		g = &group{name: name, partition: r.key.partition, state: groupEmpty, members: map[string]*member{},
			pending: map[string]int64{}, offsets: map[tp]committed{}}
		b.groups[name] = g
	}
	return g, 0
}

func (b *Broker) handleJoinGroup(conn ConnID, corr int32, req *kmsg.JoinGroupRequest) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.SetVersion(req.Version)
	resp.Generation = -1
	refuse := func(code int16) {
		resp.ErrorCode = code
		b.reply(conn, corr, resp)
	}
	if req.SessionTimeoutMillis < b.cfg.GroupMinSessionTimeoutMs || req.SessionTimeoutMillis > b.cfg.GroupMaxSessionTimeoutMs {
		refuse(kerr.InvalidSessionTimeout.Code)
		return
	}
	g, code := b.groupFor(req.Group, req.MemberID == "")
	switch {
	case code != 0:
		refuse(code)
		return
	case g == nil:
		refuse(kerr.UnknownMemberID.Code)
		return
	case len(req.Protocols) == 0 || req.ProtocolType == "" || !g.protocolsFit(req.ProtocolType, req.Protocols):
		refuse(kerr.InconsistentGroupProtocol.Code)
		return
	}
	rebalanceTimeout := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		rebalanceTimeout = req.SessionTimeoutMillis
	}
	here := &parked{conn: conn, corr: corr, version: req.Version}
	m := g.members[req.MemberID]
	if req.MemberID == "" || m == nil {
		if req.MemberID != "" {
			if _, ok := g.pending[req.MemberID]; !ok {
				refuse(kerr.UnknownMemberID.Code)
				return
			}
			delete(g.pending, req.MemberID)
		}
		id := req.MemberID
		if id == "" {
			b.memberIDs++
			id = fmt.Sprintf("member-%d-%d-%d", b.cfg.BrokerID, b.now, b.memberIDs)
			if req.Version >= 4 {
				// KIP-394: a new member first learns its id, and joins
				// with it.
				g.pending[id] = b.now + int64(req.SessionTimeoutMillis)
				resp.MemberID = id
				refuse(kerr.MemberIDRequired.Code)
				return
			}
		}
		m = &member{id: id}
		g.members[id] = m
		b.logf("group %s: member %s joins", g.name, id)
	}
	changed := m.protoType != req.ProtocolType || !slices.EqualFunc(m.protocols, req.Protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
	m.sessionTimeout, m.rebalanceTimeout = int64(req.SessionTimeoutMillis), int64(rebalanceTimeout)
	m.protoType, m.protocols = req.ProtocolType, slices.Clone(req.Protocols)
	m.expires = b.now + m.sessionTimeout
	switch {
	case g.state == groupPreparingRebalance:
		b.parkJoin(g, m, here)
	case (g.state == groupCompletingRebalance || g.state == groupStable) && !changed && m.id != g.leader:
		// Nothing new: the generation as it is (a member whose answer was
		// lost asks again).
		b.replyJoin(g, m, here)
	default:
		b.parkJoin(g, m, here)
		b.prepareRebalance(g, "member "+m.id+" joined")
	}
	b.maybeCompleteJoin(g)
}

// protocolsFit says whether a member with these protocols may be in g:
// the group's protocol type, and a protocol every member supports.
func (g *group) protocolsFit(protoType string, protos []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if g.protoType != "" && protoType != g.protoType {
		return false
	}
	for _, p := range protos {
		all := true
		for _, m := range g.members {
			if !slices.ContainsFunc(m.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (b *Broker) parkJoin(g *group, m *member, p *parked) {
	if m.join != nil && (m.join.conn != p.conn || m.join.corr != p.corr) {
		// An older join of the same member is superseded.
		b.replyJoinError(m.join, kerr.UnknownMemberID.Code, m.id)
	}
	m.join = p
}

// prepareRebalance starts a rebalance: every member must join again
// within the longest of their rebalance timeouts. SyncGroups waiting for
// the generation that is now over are told so.
func (b *Broker) prepareRebalance(g *group, why string) {
	if g.state == groupCompletingRebalance {
		for _, id := range g.memberIDs() {
			if m := g.members[id]; m.sync != nil {
				b.replySync(m.sync, kerr.RebalanceInProgress.Code, nil, g)
				m.sync = nil
			}
		}
	}
	if g.state != groupPreparingRebalance {
		var longest int64
		for _, m := range g.members {
			longest = max(longest, m.rebalanceTimeout)
		}
		if g.state == groupEmpty {
			g.joinNotBefore = b.now + b.cfg.GroupInitialRebalanceDelayMs
		}
		g.rebalanceAt = b.now + longest
		b.logf("group %s: rebalancing (generation %d): %s", g.name, g.generation, why)
	}
	g.state = groupPreparingRebalance
	g.storing = false
}

// maybeCompleteJoin ends the join phase once every member has joined
// again (and an empty group's initial delay has passed), or the rebalance
// timeout has: members that did not join are removed, the generation
// moves on, and every joined member is answered, the leader with the
// members' protocols.
func (b *Broker) maybeCompleteJoin(g *group) {
	if g.state != groupPreparingRebalance {
		return
	}
	all := true
	for _, m := range g.members {
		all = all && m.join != nil
	}
	if !(all && b.now >= g.joinNotBefore) && b.now < g.rebalanceAt {
		return
	}
	for _, id := range g.memberIDs() {
		if g.members[id].join == nil {
			b.logf("group %s: member %s removed: it did not join the rebalance in time", g.name, id)
			delete(g.members, id)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protoType, g.protocol, g.leader = groupEmpty, "", "", ""
		b.storeGroup(g, nil)
		return
	}
	ids := g.memberIDs()
	if g.members[g.leader] == nil {
		g.leader = ids[0]
	}
	g.protoType = g.members[ids[0]].protoType
	g.protocol = g.chooseProtocol()
	g.state = groupCompletingRebalance
	g.syncBy = b.now + g.members[g.leader].rebalanceTimeout
	for _, m := range g.members {
		m.assignment = nil
	}
	b.logf("group %s: generation %d, protocol %s, leader %s, members %v", g.name, g.generation, g.protocol, g.leader, ids)
	for _, id := range ids {
		m := g.members[id]
		j := m.join
		m.join = nil
		b.replyJoin(g, m, j)
	}
}

// chooseProtocol is the protocol most members prefer of those all of them
// support (Kafka's vote), ties to the name first in order.
func (g *group) chooseProtocol() string {
	votes := map[string]int{}
	for _, id := range g.memberIDs() {
		for _, p := range g.members[id].protocols {
			if g.supportedByAll(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range sortedKeys(votes) {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func (g *group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

func (g *group) memberIDs() []string { return sortedKeys(g.members) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// replyJoin answers m's join with the group's generation; the leader
// learns every member's protocol metadata.
func (b *Broker) replyJoin(g *group, m *member, p *parked) {
	if p == nil {
		return
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(p.version)
	resp.Generation, resp.LeaderID, resp.MemberID = g.generation, g.leader, m.id
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.ProtocolType = kmsg.StringPtr(g.protoType)
	if m.id == g.leader {
		for _, id := range g.memberIDs() {
			o := g.members[id]
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = id
			for _, proto := range o.protocols {
				if proto.Name == g.protocol {
					rm.ProtocolMetadata = proto.Metadata
				}
			}
			resp.Members = append(resp.Members, rm)
		}
	}
	b.reply(p.conn, p.corr, resp)
}

func (b *Broker) replyJoinError(p *parked, code int16, id string) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(p.version)
	resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, id
	b.reply(p.conn, p.corr, resp)
}

func (b *Broker) handleSyncGroup(conn ConnID, corr int32, req *kmsg.SyncGroupRequest) {
	here := &parked{conn: conn, corr: corr, version: req.Version}
	g, code := b.groupFor(req.Group, false)
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
	}
	switch {
	case code != 0:
	case g == nil || m == nil:
		code = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		code = kerr.IllegalGeneration.Code
	case req.ProtocolType != nil && *req.ProtocolType != g.protoType, req.Protocol != nil && *req.Protocol != g.protocol:
		code = kerr.InconsistentGroupProtocol.Code
	case g.state == groupPreparingRebalance || g.state == groupEmpty:
		code = kerr.RebalanceInProgress.Code
	}
	if code != 0 {
		b.replySync(here, code, nil, g)
		return
	}
	m.expires = b.now + m.sessionTimeout
	if g.state == groupStable {
		b.replySync(here, 0, m.assignment, g)
		return
	}
	// CompletingRebalance: wait for the leader's assignment, which the
	// leader's own SyncGroup carries.
	m.sync = here
	if m.id != g.leader || g.storing {
		return
	}
	assigned := map[string][]byte{}
	for _, a := range req.GroupAssignment {
		assigned[a.MemberID] = a.MemberAssignment
	}
	for id, o := range g.members {
		o.assignment = assigned[id]
	}
	g.storing = true
	gen := g.generation
	b.storeGroup(g, func(code int16) {
		if g.generation != gen || g.state != groupCompletingRebalance || b.groups[g.name] != g {
			return
		}
		g.storing = false
		if code != 0 {
			// The generation's record is not known to be kept: every
			// member joins again, as Kafka's coordinator has them do.
			for _, id := range g.memberIDs() {
				if o := g.members[id]; o.sync != nil {
					b.replySync(o.sync, code, nil, g)
					o.sync = nil
				}
			}
			b.prepareRebalance(g, "the generation's record was not stored: "+kerr.ErrorForCode(code).Error())
			return
		}
		g.state = groupStable
		for _, id := range g.memberIDs() {
			if o := g.members[id]; o.sync != nil {
				b.replySync(o.sync, 0, o.assignment, g)
				o.sync = nil
			}
		}
	})
}

func (b *Broker) replySync(p *parked, code int16, assignment []byte, g *group) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(p.version)
	resp.ErrorCode, resp.MemberAssignment = code, assignment
	if g != nil && code == 0 {
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protoType), kmsg.StringPtr(g.protocol)
	}
	b.reply(p.conn, p.corr, resp)
}

func (b *Broker) handleHeartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.SetVersion(req.Version)
	g, code := b.groupFor(req.Group, false)
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
	}
	switch {
	case code != 0:
		resp.ErrorCode = code
	case g == nil || m == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	case g.state == groupPreparingRebalance:
		m.expires = b.now + m.sessionTimeout
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	default:
		m.expires = b.now + m.sessionTimeout
	}
	return resp
}

func (b *Broker) handleLeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.SetVersion(req.Version)
	ids := []string{req.MemberID}
	if req.Version >= 3 {
		ids = nil
		for _, m := range req.Members {
			ids = append(ids, m.MemberID)
		}
	}
	g, code := b.groupFor(req.Group, false)
	for _, id := range ids {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = id
		switch {
		case code != 0:
			rm.ErrorCode = code
		case g == nil || g.members[id] == nil:
			rm.ErrorCode = kerr.UnknownMemberID.Code
		default:
			b.removeMember(g, g.members[id], "left the group")
		}
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	} else if code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// removeMember takes m out of g (it left, or its session ended) and
// rebalances the members left.
func (b *Broker) removeMember(g *group, m *member, why string) {
	b.logf("group %s: member %s removed: %s", g.name, m.id, why)
	if m.join != nil {
		b.replyJoinError(m.join, kerr.UnknownMemberID.Code, m.id)
	}
	if m.sync != nil {
		b.replySync(m.sync, kerr.UnknownMemberID.Code, nil, g)
	}
	delete(g.members, m.id)
	if g.state == groupStable || g.state == groupCompletingRebalance || g.state == groupPreparingRebalance {
		b.prepareRebalance(g, fmt.Sprintf("member %s %s", m.id, why))
		b.maybeCompleteJoin(g)
	}
}

// tickGroups runs the groups' clocks: sessions that ended, rebalances
// whose time is up, members that never sent SyncGroup.
func (b *Broker) tickGroups() {
	for _, name := range sortedKeys(b.groups) {
		g := b.groups[name]
		for id, at := range g.pending {
			if b.now >= at {
				delete(g.pending, id)
			}
		}
		for _, id := range g.memberIDs() {
			m := g.members[id]
			if m != nil && m.join == nil && m.sync == nil && b.now >= m.expires {
				b.removeMember(g, m, fmt.Sprintf("its session timed out (%d ms without a heartbeat)", m.sessionTimeout))
			}
		}
		b.maybeCompleteJoin(g)
		if g.state == groupCompletingRebalance && !g.storing && b.now >= g.syncBy {
			for _, id := range g.memberIDs() {
				if m := g.members[id]; m.sync == nil {
					b.removeMember(g, m, "it did not send SyncGroup in time")
				}
			}
		}
	}
}

func (b *Broker) handleDescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.SetVersion(req.Version)
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.AuthorizedOperations = name, -2147483648
		g, code := b.groupFor(name, false)
		switch {
		case code != 0:
			rg.ErrorCode = code
		case g == nil:
			rg.State = "Dead"
		default:
			rg.State, rg.ProtocolType, rg.Protocol = g.state, g.protoType, g.protocol
			for _, id := range g.memberIDs() {
				m := g.members[id]
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = id, m.clientID, ""
				for _, p := range m.protocols {
					if p.Name == g.protocol {
						rm.ProtocolMetadata = p.Metadata
					}
				}
				rm.MemberAssignment = m.assignment
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (b *Broker) handleListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.SetVersion(req.Version)
	for _, name := range sortedKeys(b.groups) {
		g := b.groups[name]
		if _, code := b.groupHome(name); code != 0 {
			continue
		}
		if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, g.state) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.name, g.protoType, g.state, "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// handleOffsetCommit stores a member's offsets: from the group's current
// generation (or from no member at all, while the group has none, as an
// admin's commit), written to the group's partition and answered once the
// high watermark passes them.
func (b *Broker) handleOffsetCommit(conn ConnID, corr int32, req *kmsg.OffsetCommitRequest) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	answer := func(code int16) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
		b.reply(conn, corr, resp)
	}
	g, code := b.committingGroup(req.Group, req.MemberID, req.Generation, false)
	if code != 0 {
		answer(code)
		return
	}
	if m := g.members[req.MemberID]; m != nil {
		m.expires = b.now + m.sessionTimeout
	}
	var recs []groupRecord
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			c := newCommitted(p.Offset, p.LeaderEpoch, p.Metadata)
			recs = append(recs, groupRecord{Kind: recordOffset, Group: g.name, Topic: t.Topic, Partition: p.Partition, Generation: req.Generation, Commit: &c})
		}
	}
	b.appendGroupRecords(g, recs, func(code int16) {
		if code == 0 && b.groups[g.name] == g {
			for _, rec := range recs {
				g.offsets[tp{rec.Topic, rec.Partition}] = *rec.Commit
			}
		}
		answer(code)
	})
}

// committingGroup is the group a commit of member in generation is to,
// or the error to answer it with: the coordinator must hold the group,
// and the commit must come from a member of its current generation (a
// simple consumer's, naming no member and generation -1, creates the
// group and is taken while it has no members, or, with anySimple, as a
// transactional commit before TxnOffsetCommit v3 is, whatever it has).
func (b *Broker) committingGroup(name, member string, generation int32, anySimple bool) (*group, int16) {
	simple := generation < 0 && member == ""
	g, code := b.groupFor(name, simple)
	switch {
	case code != 0:
		return nil, code
	case g == nil:
		// A member's commit to a group this coordinator does not know.
		return nil, kerr.UnknownMemberID.Code
	case simple && anySimple:
		return g, 0
	}
	if code := b.commitRefused(g, member, generation, simple); code != 0 {
		return nil, code
	}
	return g, 0
}

// newCommitted is an offset as a commit request gives it.
func newCommitted(offset int64, leaderEpoch int32, metadata *string) committed {
	c := committed{Offset: offset, LeaderEpoch: leaderEpoch}
	if metadata != nil {
		c.Metadata = *metadata
	}
	return c
}

// commitRefused says why a commit may not be taken (0 if it may).
func (b *Broker) commitRefused(g *group, memberID string, generation int32, simple bool) int16 {
	if b.cfg.Bugs.Has(bug.CommitStaleGeneration) && !simple && g.state != groupCompletingRebalance {
		// Planted bug commit-stale-generation: any member's commit is
		// taken, of whatever generation, breaking the rule that a commit
		// comes from a member of the group's current generation.
		return 0
	}
	switch {
	case simple && len(g.members) == 0:
		return 0
	case simple:
		// Not a member of a group that has members.
		return kerr.UnknownMemberID.Code
	case g.members[memberID] == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	case g.state == groupCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

func (b *Broker) handleOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.SetVersion(req.Version)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			var topics []string
			for _, t := range rg.Topics {
				topics = append(topics, t.Topic)
			}
			parts := map[string][]int32{}
			for _, t := range rg.Topics {
				parts[t.Topic] = t.Partitions
			}
			g, code := b.groupFor(rg.Group, false)
			sg.ErrorCode = code
			if code == 0 {
				for _, ft := range b.fetchOffsets(g, rg.Topics == nil, topics, parts, req.RequireStable) {
					st := kmsg.NewOffsetFetchResponseGroupTopic()
					st.Topic = ft.topic
					for _, fp := range ft.parts {
						sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = fp.partition, fp.c.Offset, fp.c.LeaderEpoch, kmsg.StringPtr(fp.c.Metadata)
						sp.ErrorCode = fp.code
						st.Partitions = append(st.Partitions, sp)
					}
					sg.Topics = append(sg.Topics, st)
				}
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}
	var topics []string
	parts := map[string][]int32{}
	for _, t := range req.Topics {
		topics = append(topics, t.Topic)
		parts[t.Topic] = t.Partitions
	}
	g, code := b.groupFor(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		// Before v2 there is no error but the partitions'.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, ft := range b.fetchOffsets(g, req.Topics == nil, topics, parts, req.RequireStable) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.topic
		for _, fp := range ft.parts {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = fp.partition, fp.c.Offset, fp.c.LeaderEpoch, kmsg.StringPtr(fp.c.Metadata)
			rp.ErrorCode = fp.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

type fetchedTopic struct {
	topic string
	parts []fetchedPartition
}

type fetchedPartition struct {
	partition int32
	c         committed
	code      int16
}

// fetchOffsets is g's committed offsets of the partitions asked for
// (every one it has, if all), -1 for a partition without one. With
// stable (KIP-447's require_stable), a partition whose offset an open
// transaction has committed answers UNSTABLE_OFFSET_COMMIT instead, for
// the client to ask again once the transaction has ended.
func (b *Broker) fetchOffsets(g *group, all bool, topics []string, parts map[string][]int32, stable bool) []fetchedTopic {
	none := committed{Offset: -1, LeaderEpoch: -1}
	if all {
		byTopic := map[string][]int32{}
		if g != nil {
			for k := range g.offsets {
				byTopic[k.topic] = append(byTopic[k.topic], k.partition)
			}
		}
		topics = sortedKeys(byTopic)
		parts = byTopic
	}
	var out []fetchedTopic
	for _, t := range topics {
		ft := fetchedTopic{topic: t}
		ps := slices.Clone(parts[t])
		slices.Sort(ps)
		for _, p := range ps {
			c, ok := committed{}, false
			if g != nil {
				c, ok = g.offsets[tp{t, p}]
			}
			if !ok {
				c = none
			}
			var code int16
			if stable && g.txnPending(tp{t, p}) {
				c, code = none, kerr.UnstableOffsetCommit.Code
			}
			ft.parts = append(ft.parts, fetchedPartition{p, c, code})
		}
		out = append(out, ft)
	}
	return out
}

// Records of the offsets partitions: JSON values in ordinary batches (the
// tester and kcat can read them as any other record).
const (
	recordOffset = "offset"
	recordGroup  = "group"
)

type groupRecord struct {
	Kind       string     `json:"kind"`
	Group      string     `json:"group"`
	Topic      string     `json:"topic,omitempty"`
	Partition  int32      `json:"partition,omitempty"`
	Generation int32      `json:"generation"`
	Commit     *committed `json:"commit,omitempty"`
	// A group's record: its state after a rebalance.
	State     string         `json:"state,omitempty"`
	ProtoType string         `json:"protocol_type,omitempty"`
	Protocol  string         `json:"protocol,omitempty"`
	Leader    string         `json:"leader,omitempty"`
	Members   []memberRecord `json:"members,omitempty"`
}

type memberRecord struct {
	ID               string `json:"id"`
	SessionTimeout   int64  `json:"session_timeout_ms"`
	RebalanceTimeout int64  `json:"rebalance_timeout_ms"`
	Assignment       []byte `json:"assignment,omitempty"`
}

// storeGroup writes g's generation, protocol, leader and members'
// assignments to its partition, so that a coordinator that takes the
// partition over goes on from that generation; done (if not nil) hears
// whether the write was committed.
func (b *Broker) storeGroup(g *group, done func(code int16)) {
	rec := groupRecord{Kind: recordGroup, Group: g.name, Generation: g.generation, State: g.state,
		ProtoType: g.protoType, Protocol: g.protocol, Leader: g.leader}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		rec.Members = append(rec.Members, memberRecord{ID: id, SessionTimeout: m.sessionTimeout,
			RebalanceTimeout: m.rebalanceTimeout, Assignment: m.assignment})
	}
	if done == nil {
		done = func(int16) {}
	}
	b.appendGroupRecords(g, []groupRecord{rec}, done)
}

// appendGroupRecords appends recs to g's partition as its leader and
// calls done once the high watermark passes them (0), or with the error a
// coordinator answers when it cannot say that they were kept: the ISR is
// below min.insync.replicas (before the append, or when the HW passed),
// the leadership moved, or the wait timed out.
func (b *Broker) appendGroupRecords(g *group, recs []groupRecord, done func(code int16)) {
	var values [][]byte
	for _, rec := range recs {
		values = append(values, mustJSON(rec))
	}
	b.appendInternal(b.replica(OffsetsTopic, g.partition), batch.Build(b.now, values...), b.cfg.GroupCommitTimeoutMs,
		b.cfg.Bugs.Has(bug.CommitBeforeReplicate), func(code int16) { done(coordinatorCode(code)) })
}

// mustJSON encodes a coordinator's record, which is always encodable.
func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return out
}

// coordinatorCode is what a coordinator answers for a write of its own
// records that ended with a partition's error code.
func coordinatorCode(code int16) int16 {
	switch code {
	case 0:
		return 0
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// internalWait is a write of the broker's own (a coordinator's records, a
// transaction marker) waiting for the high watermark.
type internalWait struct {
	key         tp
	required    int64
	leaderEpoch int32
	deadline    int64
	done        func(code int16)
}

// appendInternal appends raw, a batch the broker built, to r as its
// leader, as an acks=-1 produce: done hears 0 once the high watermark
// passes it, or the partition's error: NOT_LEADER_OR_FOLLOWER (r does not
// lead, or stopped leading the epoch), NOT_ENOUGH_REPLICAS (the ISR was
// below min.insync.replicas before the append),
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (when the HW passed), REQUEST_TIMED_OUT
// (after timeoutMs), KAFKA_STORAGE_ERROR. early (a planted bug's) answers
// at the append instead.
func (b *Broker) appendInternal(r *replica, raw []byte, timeoutMs int64, early bool, done func(code int16)) {
	switch {
	case r == nil || r.role != roleLeader:
		done(kerr.NotLeaderForPartition.Code)
		return
	case b.belowMinISR(r):
		done(kerr.NotEnoughReplicas.Code)
		return
	}
	base := r.log.LogEndOffset()
	batch.Stamp(raw, base, r.leaderEpoch)
	if err := r.log.Append(raw); err != nil {
		b.logf("%s: append failed: %v", r.key, err)
		done(kerr.KafkaStorageError.Code)
		return
	}
	hs, _ := batch.Validate(raw)
	for _, h := range hs {
		h.BaseOffset = base
		r.recordBatch(h, raw)
	}
	b.wakeFetches(r.key)
	if early {
		b.advanceHW(r)
		done(0)
		return
	}
	b.internalWaits = append(b.internalWaits, &internalWait{key: r.key, required: r.log.LogEndOffset(), leaderEpoch: r.leaderEpoch,
		deadline: b.now + timeoutMs, done: done})
	// A leader alone in the ISR commits it at once.
	b.checkProduces(r.key)
}

// checkInternalWaits completes the broker's own writes on partition k
// whose HW, leadership or ISR changed.
func (b *Broker) checkInternalWaits(k tp) {
	if len(b.internalWaits) == 0 {
		return
	}
	r := b.replicas[k]
	b.endInternalWaits(func(w *internalWait) (int16, bool) {
		switch {
		case w.key != k:
			return 0, false
		case r == nil || r.role != roleLeader || r.leaderEpoch != w.leaderEpoch:
			return kerr.NotLeaderForPartition.Code, true
		case r.log.HighWatermark() >= w.required:
			if b.belowMinISR(r) {
				return kerr.NotEnoughReplicasAfterAppend.Code, true
			}
			return 0, true
		}
		return 0, false
	})
}

func (b *Broker) expireInternalWaits() {
	b.endInternalWaits(func(w *internalWait) (int16, bool) {
		return kerr.RequestTimedOut.Code, b.now >= w.deadline
	})
}

// endInternalWaits ends the waits that ended says are over, with its code.
// Their callbacks run once the list is settled, because a callback may
// write again (a transaction's marker written completes it, which writes
// its state) and so add a wait of its own, which must not be lost.
func (b *Broker) endInternalWaits(ended func(w *internalWait) (int16, bool)) {
	type end struct {
		w    *internalWait
		code int16
	}
	var ends []end
	b.internalWaits = deleteFunc(b.internalWaits, func(w *internalWait) bool {
		code, over := ended(w)
		if over {
			ends = append(ends, end{w, code})
		}
		return over
	})
	for _, e := range ends {
		e.w.done(e.code)
	}
}

// groupsLead is told that this broker now leads offsets partition p, or
// no longer does: it reads the groups back from the log, or forgets them
// (their members' parked requests are told to find the coordinator
// again).
func (b *Broker) groupsLead(r *replica, leading bool) {
	if r.key.topic != OffsetsTopic {
		return
	}
	for _, name := range sortedKeys(b.groups) {
		g := b.groups[name]
		if g.partition != r.key.partition {
			continue
		}
		for _, id := range g.memberIDs() {
			m := g.members[id]
			if m.join != nil {
				b.replyJoinError(m.join, kerr.NotCoordinator.Code, m.id)
			}
			if m.sync != nil {
				b.replySync(m.sync, kerr.NotCoordinator.Code, nil, g)
			}
		}
		delete(b.groups, name)
	}
	if !leading {
		return
	}
	if b.cfg.Bugs.Has(bug.GroupForgottenOnFailover) && r.log.LogEndOffset() > 0 {
		// Planted bug group-forgotten-on-failover: the groups are not
		// read back, breaking the rule that a new coordinator goes on
		// from the generations and offsets its partition holds.
		b.logf("%s: coordinator of its groups: not read back (planted bug group-forgotten-on-failover)", r.key)
		return
	}
	n := b.loadGroups(r)
	b.logf("%s: coordinator of its groups: read back %d records, %d groups", r.key, n, b.groupsIn(r.key.partition))
}

func (b *Broker) groupsIn(p int32) int {
	n := 0
	for _, g := range b.groups {
		if g.partition == p {
			n++
		}
	}
	return n
}

// loadGroups reads the whole of offsets partition r back into groups: the
// last offset committed for each partition, and each group at the
// generation its last record names, its members with their sessions
// starting now. Offsets committed in a transaction wait for its marker,
// as they did when they were written (txnoffsets.go).
func (b *Broker) loadGroups(r *replica) int {
	n := 0
	for off := r.log.LogStartOffset(); off < r.log.LogEndOffset(); {
		raw, err := r.log.Read(off, r.log.LogEndOffset(), 1<<20)
		if err == nil && len(raw) == 0 {
			err = fmt.Errorf("nothing read")
		}
		if err != nil {
			b.logf("%s: reading the groups back stopped at %d: %v", r.key, off, err)
			break
		}
		next := off
		_, err = batch.Walk(raw, func(h batch.Header, one []byte) bool {
			if h.LastOffset() < off {
				return true
			}
			next = h.LastOffset() + 1
			if h.Control() {
				if commit, ok := batch.ControlCommit(one); ok {
					b.txnOffsetsEnded(r.key.partition, h.ProducerID, commit)
				}
				return true
			}
			_, values, verr := batch.Values(one)
			if verr != nil {
				err = verr
				return false
			}
			for _, v := range values {
				var rec groupRecord
				if json.Unmarshal(v, &rec) != nil || rec.Group == "" {
					continue
				}
				n++
				b.loadGroupRecord(r, rec, h)
			}
			return true
		})
		if err != nil || next == off {
			b.logf("%s: reading the groups back stopped at %d: %v", r.key, off, err)
			break
		}
		off = next
	}
	return n
}

// loadGroupRecord applies one record of offsets partition r, from the
// batch h.
func (b *Broker) loadGroupRecord(r *replica, rec groupRecord, h batch.Header) {
	g := b.groups[rec.Group]
	if g == nil {
		g = &group{name: rec.Group, partition: r.key.partition, state: groupEmpty, members: map[string]*member{},
			pending: map[string]int64{}, offsets: map[tp]committed{}}
		b.groups[rec.Group] = g
	}
	switch rec.Kind {
	case recordOffset:
		switch {
		case rec.Commit == nil:
		case h.Transactional():
			g.stageTxnOffset(h.ProducerID, tp{rec.Topic, rec.Partition}, *rec.Commit)
		default:
			g.offsets[tp{rec.Topic, rec.Partition}] = *rec.Commit
		}
	case recordGroup:
		g.generation, g.protoType, g.protocol, g.leader = rec.Generation, rec.ProtoType, rec.Protocol, rec.Leader
		g.members = map[string]*member{}
		for _, mr := range rec.Members {
			g.members[mr.ID] = &member{id: mr.ID, sessionTimeout: mr.SessionTimeout, rebalanceTimeout: mr.RebalanceTimeout,
				assignment: mr.Assignment, expires: b.now + mr.SessionTimeout, protoType: rec.ProtoType,
				protocols: []kmsg.JoinGroupRequestProtocol{{Name: rec.Protocol}}}
		}
		g.state = groupStable
		if len(g.members) == 0 {
			g.state = groupEmpty
		}
	}
}
