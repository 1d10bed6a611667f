package sim

import (
	goruntime "runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// clientWorld is a simulated cluster with topic t (one partition,
// min.insync.replicas 2) and a client that has learnt its leader.
func clientWorld(t *testing.T) (*world, *workload.Client, int32) {
	t.Helper()
	s := spec(t, 1)
	opts, err := clusterOptions(s, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(s, opts)
	w.c.Run(1000)
	if err := w.c.CreateTopic(control.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: control.Clean}); err != nil {
		t.Fatal(err)
	}
	cl := workload.NewClient(w, w.bootstrap(), workload.ClientOptions{ID: "test", Timeout: 3 * time.Second, ProduceTimeout: 2 * time.Second})
	if o := send(t, w, cl, "warm-up"); o.Type != history.OK {
		t.Fatalf("first send: %+v", o)
	}
	return w, cl, w.c.Partition("t", 0).Leader
}

// send sends value with acks=-1 and runs the cluster until the outcome.
func send(t *testing.T, w *world, cl *workload.Client, value string) workload.Outcome {
	t.Helper()
	var got *workload.Outcome
	cl.Send(history.Key{Topic: "t", Partition: 0}, value, -1, func(o workload.Outcome) { got = &o })
	if !w.c.RunUntil(60_000, func() bool { return got != nil }) {
		t.Fatalf("no outcome for %s", value)
	}
	return *got
}

// TestClientOutcomes: the simulated client classifies what happens to a
// send as the TCP client does, from what a socket would tell it: fail
// only when the record cannot have been written, info whenever it may
// have been.
func TestClientOutcomes(t *testing.T) {
	t.Run("leader killed while the send waits for the ISR", func(t *testing.T) {
		w, cl, leader := clientWorld(t)
		for f := int32(1); f <= 3; f++ {
			if f != leader {
				w.c.Block(f, leader) // the followers' fetches wait: no acknowledgement
			}
		}
		var got *workload.Outcome
		cl.Send(history.Key{Topic: "t", Partition: 0}, "v", -1, func(o workload.Outcome) { got = &o })
		w.c.Run(100)
		runtime{w}.Kill(int(leader))
		w.c.RunUntil(10_000, func() bool { return got != nil })
		if got == nil || got.Type != history.Info || !strings.Contains(got.Error, "connection reset") {
			t.Fatalf("outcome %+v: want info, connection reset", got)
		}
	})
	t.Run("leader down before the send", func(t *testing.T) {
		w, cl, leader := clientWorld(t)
		runtime{w}.Kill(int(leader))
		// The client's connection died with the process: the first send
		// on it may have been written before the reset.
		if o := send(t, w, cl, "a"); o.Type != history.Info {
			t.Fatalf("on the dead connection: %+v, want info", o)
		}
		// Its next one dials: refused, never sent, unless it has learnt
		// of a new leader meanwhile.
		o := send(t, w, cl, "b")
		if o.Type == history.Info || (o.Type == history.Fail && !strings.Contains(o.Error, "not sent")) {
			t.Fatalf("after the reset: %+v, want a fail that was never sent, or ok", o)
		}
	})
	t.Run("leader paused", func(t *testing.T) {
		w, cl, leader := clientWorld(t)
		runtime{w}.Pause(int(leader))
		start := w.c.Now()
		o := send(t, w, cl, "p")
		if o.Type != history.Info || !strings.Contains(o.Error, "i/o timeout") || w.c.Now()-start < 3000 {
			t.Fatalf("%+v after %dms: want info, an i/o timeout after the client's 3s", o, w.c.Now()-start)
		}
	})
	t.Run("too few in-sync replicas", func(t *testing.T) {
		w, cl, leader := clientWorld(t)
		for f := int32(1); f <= 3; f++ {
			if f != leader {
				runtime{w}.Kill(int(f))
			}
		}
		if !w.c.RunUntil(20_000, func() bool { return len(w.c.Partition("t", 0).ISR) == 1 }) {
			t.Fatal("the ISR did not shrink")
		}
		w.c.Run(1000) // the leader hears the controller's answer
		if o := send(t, w, cl, "n"); o.Type != history.Fail || o.Error != "NOT_ENOUGH_REPLICAS" {
			t.Fatalf("%+v: want fail NOT_ENOUGH_REPLICAS (refused before the append)", o)
		}
	})
}

// TestAnsweredCallLetsGo: once a read is answered, what its callbacks
// hold can be collected, though the events of its fetches' timeouts stay
// queued until due. A final read's fetches each reached the whole read's
// records through their callbacks: a 2-hour simulated run's final phase,
// a few virtual seconds, held its reads at once (its peak RSS fell from
// 1.5 to 1.1 GB without them).
func TestAnsweredCallLetsGo(t *testing.T) {
	w, cl, leader := clientWorld(t)
	var got *workload.Read
	// What the callback holds is made in a function of its own, so that
	// nothing but the callback refers to it.
	gone := func() weak.Pointer[[1 << 16]byte] {
		held := new([1 << 16]byte)
		cl.ReplicaRead(history.Key{Topic: "t", Partition: 0}, leader, func(r workload.Read, err error) {
			if err != nil {
				t.Errorf("replica read: %v", err)
			}
			got = &r
			held[0]++
		})
		return weak.Make(held)
	}()
	start := w.c.Now()
	if !w.c.RunUntil(60_000, func() bool { return got != nil }) || len(got.Records) == 0 {
		t.Fatalf("the read: %+v", got)
	}
	if took := w.c.Now() - start; took >= 3000 {
		t.Fatalf("the read took %d ms: its fetch's timeout (3 s) is no longer queued", took)
	}
	goruntime.GC()
	if gone.Value() != nil {
		t.Error("an answered read's callback is still reachable")
	}
	// The cluster, and its queue of events, must outlive the check.
	goruntime.KeepAlive(w)
	goruntime.KeepAlive(cl)
}
