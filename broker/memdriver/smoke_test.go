package memdriver

import (
	"testing"

	"github.com/chaos-isr/chaos/broker/control"
)

func TestSmoke(t *testing.T) {
	c := New(DefaultOptions(1))
	c.Run(500)
	if err := c.CreateTopic(control.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2}); err != nil {
		t.Log(c.Trace())
		t.Fatal(err)
	}
	call := c.Produce("t", 0, -1, 5000, "a", "b")
	c.Await(call, 5000)
	if got := ProduceResult(call); got != "ok@0" {
		t.Log(c.Trace())
		t.Fatalf("produce: %s", got)
	}
	c.Run(1000)
	t.Log(c.State("t", 0))
	for id := int32(1); id <= 3; id++ {
		if v := c.Values(id, "t", 0); len(v) != 2 {
			t.Fatalf("b%d has %v", id, v)
		}
	}
}
