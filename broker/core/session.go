package core

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

type pendingCreate struct {
	conn  ConnID
	corr  int32
	resp  *kmsg.CreateTopicsResponse // holds the topics refused locally
	names []string                   // the topics sent to the controller
}

// controllerSession registers, then heartbeats every interval with one
// heartbeat in flight at most.
func (b *Broker) controllerSession() {
	if b.brokerEpoch == 0 {
		if !b.registering && b.now >= b.nextRegister {
			b.registering = true
			b.sendController("register", &control.RegisterRequest{
				ClusterID: b.clusterID(), BrokerID: b.cfg.BrokerID, Incarnation: b.cfg.Incarnation, Host: b.cfg.Host, Port: b.cfg.Port,
				PreviousBrokerEpoch: b.previousEpoch(),
			})
		}
		return
	}
	if !b.hbInFlight && b.now >= b.nextHeartbeat {
		b.heartbeat()
	}
}

func (b *Broker) heartbeat() {
	b.hbInFlight = true
	b.nextHeartbeat = b.now + b.cfg.HeartbeatIntervalMs
	var v int64
	if b.md != nil {
		v = b.md.Version
	}
	b.sendController("heartbeat", &control.HeartbeatRequest{BrokerID: b.cfg.BrokerID, BrokerEpoch: b.brokerEpoch, MetadataVersion: v})
}

func (b *Broker) controllerResponse(id uint64, what string, resp any, err error) {
	switch what {
	case "register":
		b.registering = false
		r, _ := resp.(*control.RegisterResponse)
		if err != nil || r == nil || r.Error != "" {
			if r != nil && r.Error != b.registerErr {
				b.registerErr = r.Error
				b.logf("controller refused registration: %s", r.Error)
			}
			b.nextRegister = b.now + b.cfg.RetryBackoffMs
			return
		}
		b.registerErr = ""
		b.brokerEpoch = r.BrokerEpoch
		b.logf("registered with broker epoch %d", r.BrokerEpoch)
		b.heartbeat()
	case "heartbeat":
		b.hbInFlight = false
		r, _ := resp.(*control.HeartbeatResponse)
		if err != nil || r == nil {
			return
		}
		if r.Error != "" {
			b.logf("controller says %s: registering again", r.Error)
			b.brokerEpoch = 0
			return
		}
		if r.Metadata != nil {
			b.applyMetadata(r.Metadata)
		}
	case "alter-isr":
		b.alterISRResponse(id, resp, err)
	case "create-topics":
		b.createTopicsResponse(id, resp, err)
	}
}

// applyMetadata adopts a newer snapshot and moves every local replica to the
// role it names.
func (b *Broker) applyMetadata(md *control.Snapshot) {
	if b.md != nil && md.Version <= b.md.Version {
		return
	}
	b.md = md
	for ti := range md.Topics {
		t := &md.Topics[ti]
		delete(b.creating, t.Name)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if !control.Contains(p.Replicas, b.cfg.BrokerID) {
				continue
			}
			r := b.replica(t.Name, p.Partition)
			if r == nil {
				log, err := b.logs.Open(t.Name, p.Partition)
				if err != nil {
					b.logf("%s-%d: cannot open log: %v", t.Name, p.Partition, err)
					continue
				}
				if r, ok := log.(interface{ Recovery() storage.Recovery }); ok {
					// What recovery cut or refused, for whoever reads the
					// log after a crash or a damaged disk.
					if rec := r.Recovery(); rec.TruncatedAt >= 0 || rec.HighWatermarkDamaged {
						b.logf("%s-%d: recovered: %s", t.Name, p.Partition, rec)
					}
				}
				r = &replica{key: tp{t.Name, p.Partition}, log: log, leaderEpoch: -1, partitionEpoch: -1, producers: producers{}}
				b.rebuildProducers(r)
				b.addReplica(r.key, r)
			}
			r.minISR, r.strictMinISR = t.MinInsyncReplicas, t.Election == control.ELR
			b.updateReplica(r, *p)
		}
	}
}

// handleCreateTopics forwards to the controller: it alone assigns replicas.
func (b *Broker) handleCreateTopics(conn ConnID, corr int32, r *kmsg.CreateTopicsRequest) {
	req := &control.CreateTopicsRequest{ValidateOnly: r.ValidateOnly}
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.SetVersion(r.Version)
	var bad []kmsg.CreateTopicsResponseTopic
	for _, t := range r.Topics {
		spec := control.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
		if len(t.ReplicaAssignment) > 0 {
			bad = append(bad, topicError(t.Topic, kerr.InvalidReplicaAssignment.Code, "manual replica assignment is not supported"))
			continue
		}
		if msg := applyTopicConfigs(&spec, t.Configs); msg != "" {
			bad = append(bad, topicError(t.Topic, kerr.InvalidConfig.Code, msg))
			continue
		}
		req.Topics = append(req.Topics, spec)
	}
	if len(req.Topics) == 0 {
		resp.Topics = bad
		b.reply(conn, corr, resp)
		return
	}
	resp.Topics = bad
	id := b.sendController("create-topics", req)
	pc := &pendingCreate{conn: conn, corr: corr, resp: resp}
	for _, t := range req.Topics {
		pc.names = append(pc.names, t.Name)
	}
	b.pendingCreates[id] = pc
}

func (b *Broker) createTopicsResponse(id uint64, resp any, err error) {
	pc := b.pendingCreates[id]
	delete(b.pendingCreates, id)
	r, _ := resp.(*control.CreateTopicsResponse)
	if r != nil && len(r.Results) > 0 {
		// Learn the new topics at once rather than a heartbeat later.
		b.nextHeartbeat = b.now
	}
	if pc == nil {
		return
	}
	out := pc.resp
	if err != nil || r == nil {
		msg := "controller unavailable"
		if err != nil {
			msg = err.Error()
		}
		// The request may or may not have been applied; Kafka says
		// REQUEST_TIMED_OUT in that case and so do we.
		for _, t := range pc.names {
			out.Topics = append(out.Topics, topicError(t, kerr.RequestTimedOut.Code, msg))
		}
	} else {
		for _, res := range r.Results {
			rt := topicError(res.Name, res.ErrorCode, res.Message)
			if res.ErrorCode == 0 {
				rt.ErrorMessage = nil
				if res.Topic != nil {
					rt.TopicID = res.Topic.ID
					rt.NumPartitions = int32(len(res.Topic.Partitions))
					if len(res.Topic.Partitions) > 0 {
						rt.ReplicationFactor = int16(len(res.Topic.Partitions[0].Replicas))
					}
				}
			}
			out.Topics = append(out.Topics, rt)
		}
	}
	b.reply(pc.conn, pc.corr, out)
}

func topicError(name string, code int16, msg string) kmsg.CreateTopicsResponseTopic {
	t := kmsg.NewCreateTopicsResponseTopic()
	t.Topic, t.ErrorCode = name, code
	if msg != "" {
		t.ErrorMessage = &msg
	}
	t.NumPartitions, t.ReplicationFactor = -1, -1
	return t
}

// applyTopicConfigs takes the topic configs this broker understands and
// ignores the rest (retention and the like have no meaning here). It returns
// a reason for a value it cannot accept.
func applyTopicConfigs(spec *control.TopicSpec, cfgs []kmsg.CreateTopicsRequestTopicConfig) string {
	for _, c := range cfgs {
		if c.Value == nil {
			continue
		}
		v := *c.Value
		switch c.Name {
		case "min.insync.replicas":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 1 {
				return fmt.Sprintf("min.insync.replicas must be a positive integer, got %q", v)
			}
			spec.MinInsyncReplicas = int32(n)
		case "unclean.leader.election.enable":
			switch v {
			case "true":
				spec.Election = control.Unclean
			case "false":
				spec.Election = control.Clean
			default:
				return fmt.Sprintf("unclean.leader.election.enable must be true or false, got %q", v)
			}
		}
	}
	return ""
}
