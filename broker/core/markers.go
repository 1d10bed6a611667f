package core

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The partition side of transactions (KIP-98): a transactional producer's
// batches are written as an idempotent producer's are, and hold the
// partition's last stable offset (replica.lastStable) at the first of them
// until a marker ends the transaction. A marker is a control batch the
// transaction coordinator has each partition's leader write
// (WriteTxnMarkers), as an acks=-1 write: commit or abort. A
// read_committed consumer reads up to the last stable offset and is told
// the aborted transactions among what it read (replica.abortedIn), whose
// records it drops; a read_uncommitted one reads up to the high watermark,
// as before. Every replica learns the transactions from its log, as it
// learns the producers (producers.go): the state is replicated with the
// log, read back at open and after a truncation.

// markerTimeoutMs bounds the wait for a marker's high watermark: what
// Kafka's coordinator gives a WriteTxnMarkers request.
const markerTimeoutMs = 30_000

// handleWriteTxnMarkers writes the markers a coordinator asks for, each
// partition of each as its leader, and answers once every one is
// committed or has failed.
func (b *Broker) handleWriteTxnMarkers(conn ConnID, corr int32, req *kmsg.WriteTxnMarkersRequest) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.SetVersion(req.Version)
	type slot struct{ m, t, p int }
	var slots []slot
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for ti, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for pi, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
				slots = append(slots, slot{mi, ti, pi})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	left := len(slots)
	if left == 0 {
		b.reply(conn, corr, resp)
		return
	}
	for _, s := range slots {
		m := req.Markers[s.m]
		t := m.Topics[s.t]
		p := t.Partitions[s.p]
		b.writeMarker(b.replica(t.Topic, p), m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion >= 2, m.CoordinatorEpoch, func(code int16) {
			resp.Markers[s.m].Topics[s.t].Partitions[s.p].ErrorCode = code
			if left--; left == 0 {
				b.reply(conn, corr, resp)
			}
		})
	}
}
