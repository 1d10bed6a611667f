package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The samples fill the fields that matter to the broker, at any version, so
// that round trips would notice a field read at the wrong offset.

const sampleTopic = "jepsen"

var sampleRecords = []byte("not-a-real-batch-but-opaque-to-wire")

func sampleRequest(key, version int16) kmsg.Request {
	var req kmsg.Request
	switch key {
	case 0:
		r := kmsg.NewPtrProduceRequest()
		r.Acks = -1
		r.TimeoutMillis = 1234
		t := kmsg.NewProduceRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = 7
		p.Records = sampleRecords
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 1:
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID = 2
		r.MaxWaitMillis = 500
		r.MinBytes = 1
		r.MaxBytes = 1 << 20
		t := kmsg.NewFetchRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = 7
		p.FetchOffset = 42
		p.CurrentLeaderEpoch = 3
		p.LastFetchedEpoch = 2
		p.PartitionMaxBytes = 1 << 16
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 2:
		r := kmsg.NewPtrListOffsetsRequest()
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition = 7
		p.Timestamp = -1
		p.CurrentLeaderEpoch = 3
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 3:
		r := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(sampleTopic)
		r.Topics = append(r.Topics, t)
		req = r
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation, r.MemberID = sampleTopic, 3, "m-1"
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 7, 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		if version >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = sampleTopic
			r.Groups = append(r.Groups, g)
		} else {
			r.Group = sampleTopic
		}
		req = r
	case 10:
		r := kmsg.NewPtrFindCoordinatorRequest()
		if version >= 4 {
			r.CoordinatorKeys = []string{sampleTopic}
		} else {
			r.CoordinatorKey = sampleTopic
		}
		req = r
	case 11:
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = sampleTopic, 6000, 9000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{1, 2, 3}
		r.Protocols = append(r.Protocols, p)
		req = r
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID = sampleTopic, 3, "m-1"
		req = r
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group = sampleTopic
		if version >= 3 {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m-1"
			r.Members = append(r.Members, m)
		} else {
			r.MemberID = "m-1"
		}
		req = r
	case 14:
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = sampleTopic, 3, "m-1"
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = "m-1", []byte{4, 5}
		r.GroupAssignment = append(r.GroupAssignment, a)
		req = r
	case 15:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{sampleTopic}
		req = r
	case 16:
		r := kmsg.NewPtrListGroupsRequest()
		req = r
	case 18:
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName = "wire-test"
		r.ClientSoftwareVersion = "1.0"
		req = r
	case 19:
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 999
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = sampleTopic
		t.NumPartitions = 5
		t.ReplicationFactor = 3
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = "min.insync.replicas"
		c.Value = kmsg.StringPtr("2")
		t.Configs = append(t.Configs, c)
		r.Topics = append(r.Topics, t)
		req = r
	case 24:
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = sampleTopic, 99, 3
		r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: sampleTopic, Partitions: []int32{7}}}
		req = r
	case 25:
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 99, 3, sampleTopic
		req = r
	case 28:
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", "g", 99, 3
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 7, 12
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 26:
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = sampleTopic, 99, 3, true
		req = r
	case 27:
		r := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = 99, 3, true
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: sampleTopic, Partitions: []int32{7}}}
		r.Markers = append(r.Markers, m)
		req = r
	case 22:
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionTimeoutMillis = 1234
		r.ProducerID, r.ProducerEpoch = 99, 3
		req = r
	case 23:
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = 2
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = sampleTopic
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.Partition = 7
		p.CurrentLeaderEpoch = 4
		p.LeaderEpoch = 3
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		req = r
	case 32:
		r := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeTopic
		res.ResourceName = sampleTopic
		res.ConfigNames = []string{"min.insync.replicas"}
		r.Resources = append(r.Resources, res)
		req = r
	default:
		panic(fmt.Sprintf("no sample request for key %d", key))
	}
	req.SetVersion(version)
	return req
}

// requestTopic pulls the sample's distinguishing field back out of a decoded
// request, so a test can check more than "it decoded".
func requestTopic(req kmsg.Request) string {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && string(r.Topics[0].Partitions[0].Records) == string(sampleRecords) {
			return r.Topics[0].Topic
		}
	case *kmsg.FetchRequest:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].FetchOffset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.ListOffsetsRequest:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Partition == 7 {
			return r.Topics[0].Topic
		}
	case *kmsg.MetadataRequest:
		if len(r.Topics) == 1 && r.Topics[0].Topic != nil {
			return *r.Topics[0].Topic
		}
	case *kmsg.ApiVersionsRequest:
		return sampleTopic // nothing version-independent to check
	case *kmsg.OffsetCommitRequest:
		if r.Group == sampleTopic && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Offset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.OffsetFetchRequest:
		if r.Group == sampleTopic || (len(r.Groups) == 1 && r.Groups[0].Group == sampleTopic) {
			return sampleTopic
		}
	case *kmsg.FindCoordinatorRequest:
		if r.CoordinatorKey == sampleTopic || (len(r.CoordinatorKeys) == 1 && r.CoordinatorKeys[0] == sampleTopic) {
			return sampleTopic
		}
	case *kmsg.JoinGroupRequest:
		if r.SessionTimeoutMillis == 6000 && len(r.Protocols) == 1 && string(r.Protocols[0].Metadata) == "\x01\x02\x03" {
			return r.Group
		}
	case *kmsg.HeartbeatRequest:
		if r.Generation == 3 && r.MemberID == "m-1" {
			return r.Group
		}
	case *kmsg.LeaveGroupRequest:
		if r.MemberID == "m-1" || (len(r.Members) == 1 && r.Members[0].MemberID == "m-1") {
			return r.Group
		}
	case *kmsg.SyncGroupRequest:
		if r.Generation == 3 && len(r.GroupAssignment) == 1 && string(r.GroupAssignment[0].MemberAssignment) == "\x04\x05" {
			return r.Group
		}
	case *kmsg.DescribeGroupsRequest:
		if len(r.Groups) == 1 {
			return r.Groups[0]
		}
	case *kmsg.ListGroupsRequest:
		return sampleTopic // it names nothing
	case *kmsg.CreateTopicsRequest:
		if len(r.Topics) == 1 && r.Topics[0].NumPartitions == 5 && r.Topics[0].ReplicationFactor == 3 {
			return r.Topics[0].Topic
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if r.ProducerID == 99 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			return r.Topics[0].Topic
		}
	case *kmsg.EndTxnRequest:
		if r.ProducerID == 99 && r.Commit {
			return r.TransactionalID
		}
	case *kmsg.AddOffsetsToTxnRequest:
		if r.ProducerID == 99 && r.ProducerEpoch == 3 {
			return r.Group
		}
	case *kmsg.TxnOffsetCommitRequest:
		if r.ProducerID == 99 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Offset == 12 {
			return r.Topics[0].Topic
		}
	case *kmsg.WriteTxnMarkersRequest:
		if len(r.Markers) == 1 && r.Markers[0].Committed && len(r.Markers[0].Topics) == 1 {
			return r.Markers[0].Topics[0].Topic
		}
	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID == nil && r.TransactionTimeoutMillis == 1234 {
			return sampleTopic // it names no topic
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].LeaderEpoch == 3 {
			return r.Topics[0].Topic
		}
	case *kmsg.DescribeConfigsRequest:
		if len(r.Resources) == 1 && r.Resources[0].ResourceType == kmsg.ConfigResourceTypeTopic && len(r.Resources[0].ConfigNames) == 1 {
			return r.Resources[0].ResourceName
		}
	}
	return ""
}

func sampleResponse(key, version int16) kmsg.Response {
	var resp kmsg.Response
	switch key {
	case 0:
		r := kmsg.NewPtrProduceResponse()
		t := kmsg.NewProduceResponseTopic()
		t.Topic = sampleTopic
		p := kmsg.NewProduceResponseTopicPartition()
		p.Partition = 7
		p.BaseOffset = 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 1:
		r := kmsg.NewPtrFetchResponse()
		t := kmsg.NewFetchResponseTopic()
		t.Topic = sampleTopic
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = 7
		p.HighWatermark = 42
		p.RecordBatches = sampleRecords
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 2:
		r := kmsg.NewPtrListOffsetsResponse()
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = sampleTopic
		p := kmsg.NewListOffsetsResponseTopicPartition()
		p.Partition = 7
		p.Offset = 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 3:
		r := kmsg.NewPtrMetadataResponse()
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 1, "n1", 9092
		r.Brokers = append(r.Brokers, b)
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(sampleTopic)
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader = 7, 1
		p.Replicas, p.ISR = []int32{1, 2, 3}, []int32{1, 2}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 8:
		r := kmsg.NewPtrOffsetCommitResponse()
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic = sampleTopic
		p := kmsg.NewOffsetCommitResponseTopicPartition()
		p.Partition = 7
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 9:
		r := kmsg.NewPtrOffsetFetchResponse()
		if version >= 8 {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = sampleTopic
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = sampleTopic
			p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			p.Partition, p.Offset = 7, 42
			t.Partitions = append(t.Partitions, p)
			g.Topics = append(g.Topics, t)
			r.Groups = append(r.Groups, g)
		} else {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = sampleTopic
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset = 7, 42
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
		}
		resp = r
	case 10:
		r := kmsg.NewPtrFindCoordinatorResponse()
		if version >= 4 {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port = sampleTopic, 2, "n2", 9092
			r.Coordinators = append(r.Coordinators, c)
		} else {
			r.NodeID, r.Host, r.Port = 2, sampleTopic, 9092
		}
		resp = r
	case 11:
		r := kmsg.NewPtrJoinGroupResponse()
		r.Generation, r.LeaderID, r.MemberID, r.Protocol = 3, "m-1", sampleTopic, kmsg.StringPtr("range")
		resp = r
	case 12:
		r := kmsg.NewPtrHeartbeatResponse()
		r.ErrorCode = 27 // REBALANCE_IN_PROGRESS
		resp = r
	case 13:
		r := kmsg.NewPtrLeaveGroupResponse()
		r.ErrorCode = 25 // UNKNOWN_MEMBER_ID
		resp = r
	case 14:
		r := kmsg.NewPtrSyncGroupResponse()
		r.MemberAssignment = []byte(sampleTopic)
		resp = r
	case 15:
		r := kmsg.NewPtrDescribeGroupsResponse()
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.State = sampleTopic, "Stable"
		r.Groups = append(r.Groups, g)
		resp = r
	case 16:
		r := kmsg.NewPtrListGroupsResponse()
		g := kmsg.NewListGroupsResponseGroup()
		g.Group = sampleTopic
		r.Groups = append(r.Groups, g)
		resp = r
	case 18:
		resp = ApiVersionsResponse(version, nil)
	case 19:
		r := kmsg.NewPtrCreateTopicsResponse()
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = sampleTopic
		t.NumPartitions = 5
		r.Topics = append(r.Topics, t)
		resp = r
	case 24:
		r := kmsg.NewPtrAddPartitionsToTxnResponse()
		t := kmsg.NewAddPartitionsToTxnResponseTopic()
		t.Topic = sampleTopic
		t.Partitions = []kmsg.AddPartitionsToTxnResponseTopicPartition{{Partition: 7, ErrorCode: 51}}
		r.Topics = append(r.Topics, t)
		resp = r
	case 25:
		r := kmsg.NewPtrAddOffsetsToTxnResponse()
		r.ErrorCode = 51 // CONCURRENT_TRANSACTIONS
		resp = r
	case 28:
		r := kmsg.NewPtrTxnOffsetCommitResponse()
		t := kmsg.NewTxnOffsetCommitResponseTopic()
		t.Topic = sampleTopic
		t.Partitions = []kmsg.TxnOffsetCommitResponseTopicPartition{{Partition: 7, ErrorCode: 22}}
		r.Topics = append(r.Topics, t)
		resp = r
	case 26:
		r := kmsg.NewPtrEndTxnResponse()
		r.ErrorCode = 48 // INVALID_TXN_STATE
		resp = r
	case 27:
		r := kmsg.NewPtrWriteTxnMarkersResponse()
		m := kmsg.NewWriteTxnMarkersResponseMarker()
		m.ProducerID = 99
		t := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
		t.Topic = sampleTopic
		t.Partitions = []kmsg.WriteTxnMarkersResponseMarkerTopicPartition{{Partition: 7}}
		m.Topics = append(m.Topics, t)
		r.Markers = append(r.Markers, m)
		resp = r
	case 22:
		r := kmsg.NewPtrInitProducerIDResponse()
		r.ProducerID, r.ProducerEpoch = 42, 0
		resp = r
	case 23:
		r := kmsg.NewPtrOffsetForLeaderEpochResponse()
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = sampleTopic
		p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		p.Partition = 7
		p.EndOffset = 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		resp = r
	case 32:
		r := kmsg.NewPtrDescribeConfigsResponse()
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, sampleTopic
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr("2")
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		resp = r
	default:
		panic(fmt.Sprintf("no sample response for key %d", key))
	}
	resp.SetVersion(version)
	return resp
}

// responseMarker pulls the sample's distinguishing field back out of a
// decoded response.
func responseMarker(resp kmsg.Response) string {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].BaseOffset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.FetchResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && string(r.Topics[0].Partitions[0].RecordBatches) == string(sampleRecords) {
			return r.Topics[0].Topic
		}
	case *kmsg.ListOffsetsResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Offset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.MetadataResponse:
		if len(r.Brokers) == 1 && r.Brokers[0].Port == 9092 && len(r.Topics) == 1 && r.Topics[0].Topic != nil &&
			len(r.Topics[0].Partitions) == 1 && len(r.Topics[0].Partitions[0].ISR) == 2 {
			return *r.Topics[0].Topic
		}
	case *kmsg.ApiVersionsResponse:
		for _, k := range r.ApiKeys {
			if len(r.ApiKeys) == len(supported) && k.ApiKey == 18 && k.MaxVersion == 4 {
				return sampleTopic
			}
		}
	case *kmsg.CreateTopicsResponse:
		if len(r.Topics) == 1 {
			return r.Topics[0].Topic
		}
	case *kmsg.AddPartitionsToTxnResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].ErrorCode == 51 {
			return r.Topics[0].Topic
		}
	case *kmsg.EndTxnResponse:
		if r.ErrorCode == 48 {
			return sampleTopic
		}
	case *kmsg.AddOffsetsToTxnResponse:
		if r.ErrorCode == 51 {
			return sampleTopic
		}
	case *kmsg.TxnOffsetCommitResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].ErrorCode == 22 {
			return r.Topics[0].Topic
		}
	case *kmsg.WriteTxnMarkersResponse:
		if len(r.Markers) == 1 && r.Markers[0].ProducerID == 99 && len(r.Markers[0].Topics) == 1 {
			return r.Markers[0].Topics[0].Topic
		}
	case *kmsg.InitProducerIDResponse:
		if r.ProducerID == 42 && r.ErrorCode == 0 {
			return sampleTopic
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].EndOffset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.OffsetCommitResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Partition == 7 {
			return r.Topics[0].Topic
		}
	case *kmsg.OffsetFetchResponse:
		if len(r.Groups) == 1 && len(r.Groups[0].Topics) == 1 && r.Groups[0].Topics[0].Partitions[0].Offset == 42 {
			return r.Groups[0].Group
		}
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Offset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.FindCoordinatorResponse:
		if len(r.Coordinators) == 1 && r.Coordinators[0].NodeID == 2 {
			return r.Coordinators[0].Key
		}
		if r.NodeID == 2 {
			return r.Host
		}
	case *kmsg.JoinGroupResponse:
		if r.Generation == 3 && r.LeaderID == "m-1" {
			return r.MemberID
		}
	case *kmsg.HeartbeatResponse:
		if r.ErrorCode == 27 {
			return sampleTopic
		}
	case *kmsg.LeaveGroupResponse:
		if r.ErrorCode == 25 {
			return sampleTopic
		}
	case *kmsg.SyncGroupResponse:
		return string(r.MemberAssignment)
	case *kmsg.DescribeGroupsResponse:
		if len(r.Groups) == 1 && r.Groups[0].State == "Stable" {
			return r.Groups[0].Group
		}
	case *kmsg.ListGroupsResponse:
		if len(r.Groups) == 1 {
			return r.Groups[0].Group
		}
	case *kmsg.DescribeConfigsResponse:
		if len(r.Resources) == 1 && len(r.Resources[0].Configs) == 1 && r.Resources[0].Configs[0].Value != nil && *r.Resources[0].Configs[0].Value == "2" {
			return r.Resources[0].ResourceName
		}
	}
	return ""
}
