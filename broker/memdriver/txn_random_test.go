package memdriver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
)

// txnOutcome is what the client knows of one transaction's end.
type txnOutcome int

const (
	txnCommitted txnOutcome = iota // EndTxn(commit) answered ok
	txnAborted                     // EndTxn(abort) answered ok, or never asked to commit
	txnUnknown                     // the commit's answer was lost or an error
)

// faultyTxns runs transactions of one transactional id against a
// simulated cluster whose brokers are killed and restarted one at a time,
// and returns each transaction's acknowledged values and outcome.
func faultyTxns(t *testing.T, seed uint64, n int) (c *Cluster, values [][]string, outcomes []txnOutcome) {
	t.Helper()
	opts := DefaultOptions(seed)
	opts.OnLog = func(node int32, line string) {
		if strings.Contains(line, "transaction") || strings.Contains(line, "marker") || strings.Contains(line, "leader") {
			t.Logf("%6d b%d %s", c.Now(), node, line)
		}
	}
	c = New(opts)
	c.Run(500)
	if err := c.CreateTopic(control.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: control.Clean}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 27))
	down := int32(0)
	fault := func() {
		switch {
		case down != 0 && rng.IntN(2) == 0:
			c.Restart(down)
			down = 0
		case down == 0 && rng.IntN(4) == 0:
			down = 1 + rng.Int32N(3)
			t.Logf("%6d kill b%d", c.Now(), down)
			c.Kill(down, false)
		}
	}
	// try sends req to the coordinator of the transactional id (found
	// again each time) until an answer that is not transient, or gives
	// up: ok is false when no answer came.
	id := "tx"
	try := func(req kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, bool) {
		for range 50 {
			coord := findFaulty(c, id)
			if coord < 0 {
				c.Run(200)
				continue
			}
			call := c.Send(coord, req)
			if !c.Await(call, 10_000) || call.Err != nil || call.Resp == nil {
				c.Run(200)
				continue
			}
			switch code(call.Resp) {
			case kerr.ConcurrentTransactions.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
				kerr.NotCoordinator.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
				c.Run(200)
				continue
			}
			return call.Resp, true
		}
		return nil, false
	}
	var pid int64
	epoch := int16(-1)
	seq := map[int32]int32{}
	initTxn := func() {
		for {
			init := kmsg.NewPtrInitProducerIDRequest()
			init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 3, kmsg.StringPtr(id), 5_000
			resp, ok := try(init, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode })
			if ok && resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 {
				ir := resp.(*kmsg.InitProducerIDResponse)
				pid, epoch, seq = ir.ProducerID, ir.ProducerEpoch, map[int32]int32{}
				return
			}
			fault()
		}
	}
	initTxn()
	for i := range n {
		fault()
		var acked []string
		parts := rng.Perm(3)[:1+rng.IntN(3)]
		healthy := true
		for _, p := range parts {
			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, pid, epoch
			add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{int32(p)}}}
			resp, ok := try(add, func(r kmsg.Response) int16 {
				return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			})
			if !ok || resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode != 0 {
				healthy = false
				break
			}
			v := fmt.Sprintf("v%d-%d", i, p)
			raw := batch.BuildTransactional(pid, epoch, seq[int32(p)], c.Now(), []byte(v))
			call := c.ProduceRecords(c.Partition("t", int32(p)).Leader, "t", int32(p), -1, 3000, raw)
			c.Await(call, 10_000)
			if res := ProduceResult(call); len(res) < 3 || res[:3] != "ok@" {
				// Perhaps written: a retry of the same sequence would
				// settle it; a new epoch is simpler, and aborts it.
				healthy = false
				break
			}
			seq[int32(p)]++
			acked = append(acked, v)
		}
		commit := healthy && rng.IntN(3) != 0
		end := kmsg.NewPtrEndTxnRequest()
		end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, pid, epoch, commit
		resp, ok := try(end, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode })
		switch {
		case ok && resp.(*kmsg.EndTxnResponse).ErrorCode == 0 && commit:
			outcomes = append(outcomes, txnCommitted)
		case !commit:
			// Never asked to commit: aborted whatever the answer (a
			// new epoch aborts it if the abort did not).
			outcomes = append(outcomes, txnAborted)
		default:
			outcomes = append(outcomes, txnUnknown)
		}
		values = append(values, acked)
		t.Logf("%6d client: transaction %d %v commit %v: %v outcome %d", c.Now(), i, acked, commit, resp, outcomes[len(outcomes)-1])
		if !ok || resp.(*kmsg.EndTxnResponse).ErrorCode != 0 || !healthy {
			initTxn()
		}
	}
	if down != 0 {
		c.Restart(down)
	}
	c.Run(10_000)
	return c, values, outcomes
}

// findFaulty asks the running brokers for id's transaction coordinator
// (-1 if none names one that runs).
func findFaulty(c *Cluster, id string) int32 {
	for via := int32(1); via <= 3; via++ {
		if !c.Up(via) {
			continue
		}
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.Version, find.CoordinatorKey, find.CoordinatorType = 3, id, 1
		call := c.Send(via, find)
		if !c.Await(call, 5000) || call.Err != nil {
			continue
		}
		if r := call.Resp.(*kmsg.FindCoordinatorResponse); r.ErrorCode == 0 && c.Up(r.NodeID) {
			return r.NodeID
		}
	}
	return -1
}

// TestTransactionsUnderFaults: a transactional producer against a cluster
// whose brokers (coordinators and partition leaders among them) are killed
// and restarted one at a time, over many seeds. Once the faults heal,
// read_committed on every partition reads each value of a transaction
// whose commit was acknowledged, no value of an aborted one, every value
// at most once, and a transaction whose outcome the client could not learn
// all or nothing; no transaction is left open (the last stable offset
// reaches the high watermark).
func TestTransactionsUnderFaults(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	committedSeen, abortedSeen := 0, 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, values, outcomes := faultyTxns(t, seed, 30)
		read := map[string]int{}
		for p := range int32(3) {
			vals, lso, hw := readCommitted(t, c, p)
			for _, v := range vals {
				read[v]++
			}
			if lso != hw {
				t.Fatalf("seed %d: partition %d: last stable offset %d below the high watermark %d: a transaction left open", seed, p, lso, hw)
			}
		}
		for i, vs := range values {
			present := 0
			for _, v := range vs {
				if read[v] > 1 {
					t.Fatalf("seed %d: %s read %d times", seed, v, read[v])
				}
				present += read[v]
			}
			switch outcomes[i] {
			case txnCommitted:
				committedSeen++
				if present != len(vs) {
					t.Fatalf("seed %d: committed transaction %d: %d of its values %v read", seed, i, present, vs)
				}
			case txnAborted:
				abortedSeen++
				if present != 0 {
					t.Fatalf("seed %d: aborted transaction %d: %d of its values %v read", seed, i, present, vs)
				}
			case txnUnknown:
				if present != 0 && present != len(vs) {
					t.Fatalf("seed %d: transaction %d of unknown outcome: %d of its values %v read: not atomic", seed, i, present, vs)
				}
			}
		}
		for v := range read {
			if !slices.ContainsFunc(values, func(vs []string) bool { return slices.Contains(vs, v) }) {
				t.Fatalf("seed %d: %s read but never acknowledged to the producer", seed, v)
			}
		}
	}
	if committedSeen == 0 || abortedSeen == 0 {
		t.Fatalf("%d committed and %d aborted transactions: the test did not exercise both", committedSeen, abortedSeen)
	}
}

// readCommitted reads partition p of t from its leader as a read_committed
// consumer does: up to the last stable offset, dropping the records of
// the aborted transactions the answer names (from each one's first offset
// to its producer's abort marker) and the markers. It returns the values
// kept, the last stable offset and the high watermark.
func readCommitted(t *testing.T, c *Cluster, p int32) (values []string, lso, hw int64) {
	t.Helper()
	rp := fetchWhole(t, c, p, 1)
	aborted := slices.Clone(rp.AbortedTransactions)
	slices.SortFunc(aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return int(a.FirstOffset - b.FirstOffset)
	})
	skipping := map[int64]bool{}
	_, err := batch.Walk(rp.RecordBatches, func(h batch.Header, one []byte) bool {
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			skipping[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if h.Control() {
			if commit, ok := batch.ControlCommit(one); ok && !commit {
				delete(skipping, h.ProducerID)
			}
			return true
		}
		if h.Transactional() && skipping[h.ProducerID] {
			return true
		}
		_, vals, err := batch.Values(one)
		if err != nil {
			t.Fatalf("t-%d: %v", p, err)
		}
		for _, v := range vals {
			values = append(values, string(v))
		}
		return true
	})
	if err != nil {
		t.Fatalf("t-%d: %v", p, err)
	}
	return values, rp.LastStableOffset, rp.HighWatermark
}
