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
	case *kmsg.CreateTopicsRequest:
		if len(r.Topics) == 1 && r.Topics[0].NumPartitions == 5 && r.Topics[0].ReplicationFactor == 3 {
			return r.Topics[0].Topic
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
	case 18:
		resp = ApiVersionsResponse(version)
	case 19:
		r := kmsg.NewPtrCreateTopicsResponse()
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = sampleTopic
		t.NumPartitions = 5
		r.Topics = append(r.Topics, t)
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
		if len(r.ApiKeys) == len(supported) && r.ApiKeys[4].ApiKey == 18 && r.ApiKeys[4].MaxVersion == 4 {
			return sampleTopic
		}
	case *kmsg.CreateTopicsResponse:
		if len(r.Topics) == 1 {
			return r.Topics[0].Topic
		}
	case *kmsg.InitProducerIDResponse:
		if r.ProducerID == 42 && r.ErrorCode == 0 {
			return sampleTopic
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].EndOffset == 42 {
			return r.Topics[0].Topic
		}
	case *kmsg.DescribeConfigsResponse:
		if len(r.Resources) == 1 && len(r.Resources[0].Configs) == 1 && r.Resources[0].Configs[0].Value != nil && *r.Resources[0].Configs[0].Value == "2" {
			return r.Resources[0].ResourceName
		}
	}
	return ""
}
