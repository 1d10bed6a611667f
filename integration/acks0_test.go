package integration

import (
	"fmt"
	"testing"
)

// TestAcksZeroErrorClosesConnection: an acks=0 produce has no response, so
// when it fails Kafka closes the connection; that close is the producer's
// only signal to refresh its metadata (KafkaApis.handleProduceRequest: "the
// server will close socket server so that the producer client will know that
// some error has happened and will refresh its metadata"). A broker that
// drops the error silently leaves an acks=0 producer writing into the void
// after every leader change, for as long as its cached metadata lives.
func TestAcksZeroErrorClosesConnection(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	const topic = "acks0"
	tc.createTopic(topic, 1, 3, nil)
	s := tc.mustState(topic, 0)
	var follower int32
	for _, id := range tc.brokerIDs() {
		if id != s.leader {
			follower = id
			break
		}
	}

	t.Run("raw", func(t *testing.T) {
		for _, c := range []struct{ what, topic string }{
			{fmt.Sprintf("to follower %d (NOT_LEADER_OR_FOLLOWER)", follower), topic},
			{"to an unknown topic (UNKNOWN_TOPIC_OR_PARTITION)", "no-such-topic"},
		} {
			c1 := dial(t, tc.addr(follower))
			w := &wireConn{c: c1, f: newFormatter()}
			if _, err := w.roundTrip(produceRequest(c.topic, 0, 0, recordBatch("lost")), rawTimeout); err != nil {
				t.Fatalf("acks=0 produce %s: %v", c.what, err)
			}
			expectClosed(t, c1, "a failed acks=0 produce "+c.what)
		}
	})
}
