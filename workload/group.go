package workload

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// The group half of the Client: what a consumer in a group asks its
// coordinator (Kafka's classic protocol), each call one request and its
// answer, classified; the GroupMember decides when to ask what.

// GroupAnswer is how a group request ended: the broker's error code (0:
// none), or err when no answer came (wrapping ErrNotSent if the request
// never left).
type GroupAnswer struct {
	Code int16
	Err  error
}

// Error is the answer's error text, "" if it succeeded.
func (a GroupAnswer) Error() string {
	switch {
	case a.Err != nil:
		return a.Err.Error()
	case a.Code != 0:
		return errorName(a.Code)
	}
	return ""
}

// OK says whether the request succeeded.
func (a GroupAnswer) OK() bool { return a.Err == nil && a.Code == 0 }

// Lost says whether the coordinator asked is not (or no longer) the
// group's, or cannot be reached: the member asks who is.
func (a GroupAnswer) Lost() bool {
	if a.Err != nil {
		return true
	}
	switch a.Code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code:
		return true
	}
	return false
}

// Fenced says whether the answer ends the member's generation: it must
// join again (with no member id, if the coordinator does not know it).
func (a GroupAnswer) Fenced() bool {
	switch a.Code {
	case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		return true
	}
	return false
}

func joinAddr(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }

// FindCoordinator asks any broker which broker coordinates group, and
// learns that broker's address.
func (c *Client) FindCoordinator(group string, done func(int32, GroupAnswer)) {
	c.findCoordinator(group, 0, done)
}

// findCoordinator asks for the coordinator of key, a group's name (typ 0)
// or a transactional id (1).
func (c *Client) findCoordinator(key string, typ int8, done func(int32, GroupAnswer)) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey, req.CoordinatorType = key, typ
	c.anyBroker(req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(-1, GroupAnswer{Err: err})
			return
		}
		r := resp.(*kmsg.FindCoordinatorResponse)
		if r.ErrorCode != 0 {
			done(-1, GroupAnswer{Code: r.ErrorCode})
			return
		}
		c.addrs[r.NodeID] = joinAddr(r.Host, r.Port)
		done(r.NodeID, GroupAnswer{})
	})
}

// anyBroker sends req to the first broker the client knows (asking for
// metadata if it knows none): a question every broker answers.
func (c *Client) anyBroker(req kmsg.Request, done func(kmsg.Response, error)) {
	ids := c.Brokers()
	if len(ids) == 0 {
		c.Metadata("", nil, func(_ Metadata, err error) {
			if err != nil {
				done(nil, err)
				return
			}
			if len(c.Brokers()) == 0 {
				done(nil, fmt.Errorf("%w: the metadata names no broker", ErrNotSent))
				return
			}
			c.anyBroker(req, done)
		})
		return
	}
	c.Call(ids[0], req, func(resp kmsg.Response, err error) {
		if err != nil {
			// The next question goes to another broker, with fresh
			// metadata.
			clear(c.addrs)
		}
		done(resp, err)
	})
}

// JoinSpec is what a member asks to join its group with.
type JoinSpec struct {
	Group            string
	Member           string // "" for a new member
	Topic            string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
}

// Joined is a JoinGroup's answer: the member's id and generation, the
// leader, and (for the leader) every member's id.
type Joined struct {
	Member     string
	Generation int32
	Leader     string
	Members    []string
}

// rangeProtocol is the one assignor the tester's members bring, Kafka's
// range assignor as its consumer protocol encodes it.
const rangeProtocol = "range"

// JoinGroup asks coordinator to add the member to the group. A new member
// is first given its id (MEMBER_ID_REQUIRED, KIP-394) and joins again with
// it, in the same call.
func (c *Client) JoinGroup(coordinator int32, s JoinSpec, done func(Joined, GroupAnswer)) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{s.Topic}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.ProtocolType = s.Group, s.Member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(s.SessionTimeout/time.Millisecond), int32(s.RebalanceTimeout/time.Millisecond)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: rangeProtocol, Metadata: meta.AppendTo(nil)}}
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(Joined{}, GroupAnswer{Err: err})
			return
		}
		r := resp.(*kmsg.JoinGroupResponse)
		if r.ErrorCode == kerr.MemberIDRequired.Code && s.Member == "" && r.MemberID != "" {
			s.Member = r.MemberID
			c.JoinGroup(coordinator, s, done)
			return
		}
		if r.ErrorCode != 0 {
			done(Joined{Member: s.Member}, GroupAnswer{Code: r.ErrorCode})
			return
		}
		j := Joined{Member: r.MemberID, Generation: r.Generation, Leader: r.LeaderID}
		for _, m := range r.Members {
			j.Members = append(j.Members, m.MemberID)
		}
		done(j, GroupAnswer{})
	})
}

// RangeAssign is the leader's assignment, Kafka's range assignor for one
// topic: the members in order of their ids, each given a run of
// partitions, the first ones one more when they do not divide evenly.
func RangeAssign(members []string, partitions int32) map[string][]int32 {
	ms := slices.Sorted(slices.Values(members))
	out := map[string][]int32{}
	if len(ms) == 0 {
		return out
	}
	per, extra := int(partitions)/len(ms), int(partitions)%len(ms)
	p := int32(0)
	for i, m := range ms {
		n := per
		if i < extra {
			n++
		}
		out[m] = []int32{}
		for range n {
			out[m] = append(out[m], p)
			p++
		}
	}
	return out
}

// SyncGroup sends the member's SyncGroup (the leader's with the whole
// assignment) and returns the partitions of topic it was given.
func (c *Client) SyncGroup(coordinator int32, group, member string, generation int32, topic string, assign map[string][]int32, done func([]int32, GroupAnswer)) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = group, member, generation
	for _, m := range slices.Sorted(maps.Keys(assign)) {
		a := kmsg.NewConsumerMemberAssignment()
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: assign[m]}}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: a.AppendTo(nil)})
	}
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, GroupAnswer{Err: err})
			return
		}
		r := resp.(*kmsg.SyncGroupResponse)
		if r.ErrorCode != 0 {
			done(nil, GroupAnswer{Code: r.ErrorCode})
			return
		}
		parts := []int32{}
		if len(r.MemberAssignment) > 0 {
			a := kmsg.NewConsumerMemberAssignment()
			if err := a.ReadFrom(r.MemberAssignment); err != nil {
				done(nil, GroupAnswer{Err: fmt.Errorf("malformed assignment: %v", err)})
				return
			}
			for _, t := range a.Topics {
				if t.Topic == topic {
					parts = append(parts, t.Partitions...)
				}
			}
		}
		slices.Sort(parts)
		done(parts, GroupAnswer{})
	})
}

// Heartbeat tells the coordinator the member is alive in generation.
func (c *Client) Heartbeat(coordinator int32, group, member string, generation int32, done func(GroupAnswer)) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = group, member, generation
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(GroupAnswer{Err: err})
			return
		}
		done(GroupAnswer{Code: resp.(*kmsg.HeartbeatResponse).ErrorCode})
	})
}

// LeaveGroup takes the member out of the group.
func (c *Client) LeaveGroup(coordinator int32, group, member string, done func(GroupAnswer)) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 2
	req.Group, req.MemberID = group, member
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(GroupAnswer{Err: err})
			return
		}
		done(GroupAnswer{Code: resp.(*kmsg.LeaveGroupResponse).ErrorCode})
	})
}

// FetchOffsets is the group's committed offsets of topic's partitions, -1
// where it has none.
func (c *Client) FetchOffsets(coordinator int32, group, topic string, partitions []int32, done func([]history.PartitionOffset, GroupAnswer)) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 5
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: partitions}}
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, GroupAnswer{Err: err})
			return
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if r.ErrorCode != 0 {
			done(nil, GroupAnswer{Code: r.ErrorCode})
			return
		}
		got := map[int32]int64{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if t.Topic != topic {
					continue
				}
				if p.ErrorCode != 0 {
					done(nil, GroupAnswer{Code: p.ErrorCode})
					return
				}
				got[p.Partition] = p.Offset
			}
		}
		var out []history.PartitionOffset
		for _, p := range partitions {
			off, ok := got[p]
			if !ok {
				done(nil, GroupAnswer{Err: fmt.Errorf("the answer leaves out partition %d", p)})
				return
			}
			out = append(out, history.PartitionOffset{Partition: p, Offset: off})
		}
		done(out, GroupAnswer{})
	})
}

// CommitOffset commits offset as where the group polls partition k from
// next, from member in generation.
func (c *Client) CommitOffset(coordinator int32, group, member string, generation int32, k history.Key, offset int64, done func(GroupAnswer)) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group, req.MemberID, req.Generation = group, member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: k.Topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: k.Partition, Offset: offset, LeaderEpoch: -1}}}}
	c.Call(coordinator, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(GroupAnswer{Err: err})
			return
		}
		r := resp.(*kmsg.OffsetCommitResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			done(GroupAnswer{Err: errors.New("malformed offset commit response")})
			return
		}
		done(GroupAnswer{Code: r.Topics[0].Partitions[0].ErrorCode})
	})
}

// CommitType is how a commit ended, as the history records it: ok; fail
// when the coordinator refused it before writing it (the member is not
// in the group's current generation, or is not known, or the request
// never left); info whenever it may have been written (no answer, the
// coordinator moved or could not say the write was kept).
func CommitType(a GroupAnswer) history.Type {
	switch {
	case a.OK():
		return history.OK
	case errors.Is(a.Err, ErrNotSent):
		return history.Fail
	case a.Err != nil:
		return history.Info
	}
	switch a.Code {
	case kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code, kerr.RebalanceInProgress.Code, kerr.FencedInstanceID.Code,
		kerr.InvalidGroupID.Code, kerr.GroupAuthorizationFailed.Code, kerr.OffsetMetadataTooLarge.Code, kerr.InvalidCommitOffsetSize.Code:
		return history.Fail
	}
	return history.Info
}
