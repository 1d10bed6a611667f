package workload

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/history"
)

// TestFinalReadRetry: a whole read refused by a broker that is no longer
// the leader is retried, one refused for a reason no new leader mends is
// not; the refusal reads in the history as before.
func TestFinalReadRetry(t *testing.T) {
	k := history.Key{Topic: "t", Partition: 0}
	for _, c := range []struct {
		code  int16
		retry bool
		text  string
	}{
		{kerr.NotLeaderForPartition.Code, true, "NOT_LEADER_FOR_PARTITION at offset 0"},
		{kerr.FencedLeaderEpoch.Code, true, "FENCED_LEADER_EPOCH at offset 0"},
		{kerr.CorruptMessage.Code, false, "CORRUPT_MESSAGE at offset 0"},
		{kerr.OffsetOutOfRange.Code, false, "OFFSET_OUT_OF_RANGE at offset 0"},
	} {
		done, _, err := NewFinalRead().Add(k, nil, 0, c.code, nil)
		if !done || err == nil || err.Error() != c.text || RetryFinalRead(err) != c.retry {
			t.Errorf("code %d: done %v, %v, retry %v", c.code, done, err, RetryFinalRead(err))
		}
	}
	if !RetryFinalRead(fmt.Errorf("%w: no leader for t-0", ErrNotSent)) || RetryFinalRead(errors.New("connection reset by peer")) {
		t.Error("no leader known is retried, a reset connection (the read may have happened) is not")
	}
}
