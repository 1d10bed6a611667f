package memdriver

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
)

// roundTripReq encodes and decodes a peer request, as the wire would: the
// receiver shares no memory with the sender and encoding bugs show up here.
func roundTripReq(r kmsg.Request) kmsg.Request {
	out := kmsg.RequestForKey(r.Key())
	out.SetVersion(r.GetVersion())
	if err := out.ReadFrom(r.AppendTo(nil)); err != nil {
		panic(fmt.Sprintf("memdriver: request %T does not round-trip: %v", r, err))
	}
	return out
}

func roundTrip(r kmsg.Response) kmsg.Response {
	out := kmsg.ResponseForKey(r.Key())
	out.SetVersion(r.GetVersion())
	if err := out.ReadFrom(r.AppendTo(nil)); err != nil {
		panic(fmt.Sprintf("memdriver: response %T does not round-trip: %v", r, err))
	}
	return out
}

func toResponse(v any) kmsg.Response {
	r, _ := v.(kmsg.Response)
	return r
}

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if ok := asKerr(e, &ke); ok {
			return ke.Message
		}
		return e.Error()
	}
	return fmt.Sprintf("error %d", code)
}

func asKerr(err error, out **kerr.Error) bool {
	ke, ok := err.(*kerr.Error)
	if ok {
		*out = ke
	}
	return ok
}

// describe summarizes a request for the trace.
func describe(req any) string {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				producer := ""
				if h, err := batch.Parse(p.Records); err == nil && h.ProducerID >= 0 {
					producer = fmt.Sprintf(" pid=%d e%d seq=%d", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
				}
				parts = append(parts, fmt.Sprintf("%s-%d(%dB%s)", t.Topic, p.Partition, len(p.Records), producer))
			}
		}
		return fmt.Sprintf("Produce acks=%d %s", r.Acks, strings.Join(parts, " "))
	case *kmsg.FetchRequest:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d@%d/e%d", t.Topic, p.Partition, p.FetchOffset, p.CurrentLeaderEpoch))
			}
		}
		return fmt.Sprintf("Fetch replica=%d %s", r.ReplicaID, strings.Join(parts, " "))
	case *kmsg.OffsetForLeaderEpochRequest:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d epoch=%d current=%d", t.Topic, p.Partition, p.LeaderEpoch, p.CurrentLeaderEpoch))
			}
		}
		return "OffsetForLeaderEpoch " + strings.Join(parts, " ")
	case kmsg.Request:
		return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", r), "*kmsg."), "Request")
	case *control.RegisterRequest:
		return fmt.Sprintf("Register %s", r.Incarnation)
	case *control.HeartbeatRequest:
		return fmt.Sprintf("Heartbeat epoch=%d md=%d", r.BrokerEpoch, r.MetadataVersion)
	case *control.AlterISRRequest:
		return fmt.Sprintf("AlterISR %s-%d %v le=%d pe=%d", r.Topic, r.Partition, r.ISR, r.LeaderEpoch, r.PartitionEpoch)
	case *control.CreateTopicsRequest:
		var names []string
		for _, t := range r.Topics {
			names = append(names, t.Name)
		}
		return fmt.Sprintf("CreateTopics %v", names)
	}
	return fmt.Sprintf("%T", req)
}

// describeResp summarizes an answer for the trace.
func describeResp(resp any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	switch r := resp.(type) {
	case nil:
		return "(none)"
	case *kmsg.ProduceResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d %s@%d", t.Topic, p.Partition, errName(p.ErrorCode), p.BaseOffset))
			}
		}
		return "Produce " + strings.Join(parts, " ")
	case *kmsg.FetchResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d %s hw=%d %dB", t.Topic, p.Partition, errName(p.ErrorCode), p.HighWatermark, len(p.RecordBatches)))
			}
		}
		return "Fetch " + strings.Join(parts, " ")
	case *kmsg.OffsetForLeaderEpochResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d %s epoch=%d end=%d", t.Topic, p.Partition, errName(p.ErrorCode), p.LeaderEpoch, p.EndOffset))
			}
		}
		return "OffsetForLeaderEpoch " + strings.Join(parts, " ")
	case kmsg.Response:
		return strings.TrimPrefix(fmt.Sprintf("%T", r), "*kmsg.")
	case *control.RegisterResponse:
		return fmt.Sprintf("Register epoch=%d %s", r.BrokerEpoch, r.Error)
	case *control.HeartbeatResponse:
		if r.Metadata != nil {
			return fmt.Sprintf("Heartbeat md=%d %s", r.Metadata.Version, r.Error)
		}
		return "Heartbeat " + r.Error
	case *control.AlterISRResponse:
		if r.State != nil {
			return fmt.Sprintf("AlterISR %q isr=%v pe=%d", r.Error, r.State.ISR, r.State.PartitionEpoch)
		}
		return fmt.Sprintf("AlterISR %q", r.Error)
	case *control.CreateTopicsResponse:
		var parts []string
		for _, t := range r.Results {
			parts = append(parts, fmt.Sprintf("%s:%s", t.Name, errName(t.ErrorCode)))
		}
		return "CreateTopics " + strings.Join(parts, " ")
	}
	return fmt.Sprintf("%T", resp)
}
