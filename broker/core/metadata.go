package core

import (
	"cmp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
)

func (b *Broker) clusterID() string { return cmp.Or(b.cfg.ClusterID, control.DefaultClusterID) }

func (b *Broker) handleMetadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(req.Version)
	cluster := b.clusterID()
	resp.ClusterID = &cluster
	resp.ControllerID = b.cfg.BrokerID // every broker forwards admin requests to the real controller
	md := b.md
	if md == nil {
		md = &control.Snapshot{}
	}
	for _, br := range md.Brokers {
		if br.Fenced {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.ID, br.Host, br.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	if md.BrokerByID(b.cfg.BrokerID) == nil {
		// Before the first heartbeat answer, clients still need to find us.
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.cfg.BrokerID, b.cfg.Host, b.cfg.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for i := range md.Topics {
			resp.Topics = append(resp.Topics, b.topicMetadata(md, &md.Topics[i]))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	var create []control.TopicSpec
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if t, _ := md.Lookup(name, -1); t != nil {
			resp.Topics = append(resp.Topics, b.topicMetadata(md, t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = &name
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if autoCreate && control.ValidTopicName(name) == nil {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
			if !b.creating[name] && b.brokerEpoch != 0 {
				b.creating[name] = true
				create = append(create, control.TopicSpec{Name: name})
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	if len(create) > 0 {
		b.logf("auto-creating topics %v", topicNames(create))
		b.sendController("create-topics", &control.CreateTopicsRequest{Topics: create})
	}
	return resp
}

func (b *Broker) topicMetadata(md *control.Snapshot, t *control.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID = &name, t.ID
	mt.IsInternal = name == OffsetsTopic
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR = p.Replicas, p.ISR
		mp.OfflineReplicas = []int32{}
		for _, id := range p.Replicas {
			if br := md.BrokerByID(id); br == nil || br.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, id)
			}
		}
		if p.Leader == control.NoLeader {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func topicNames(specs []control.TopicSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}
