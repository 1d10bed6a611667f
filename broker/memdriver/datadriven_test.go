package memdriver

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// TestDataDriven runs the scripts in testdata/: each drives a simulated
// cluster and compares what it prints with the expected output. Regenerate
// expectations with -rewrite after checking that a change is intended.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{calls: map[string]*Call{}, names: map[string][]int32{}, producers: map[string]producer{}, sent: map[string]sentProduce{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type harness struct {
	c     *Cluster
	calls map[string]*Call
	names map[string][]int32 // targets remembered with as=NAME
	topic string
	mark  int // trace length at the last "log" command
	// producers are the idempotent producers made by init-producer, by
	// name; outputs name them rather than print ids, which depend on the
	// clock.
	producers map[string]producer
	// sent are the records of named produces, for resend.
	sent map[string]sentProduce
}

type producer struct {
	id    int64
	epoch int16
}

type sentProduce struct {
	topic     string
	partition int32
	acks      int16
	timeout   int32
	records   []byte
}

func arg(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return "true"
			}
			return strings.Join(a.Vals, ",")
		}
	}
	return def
}

func num(d *datadriven.TestData, key string, def int64) int64 {
	v := arg(d, key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d.Fatalf(nil, "%s=%q is not a number", key, v)
	}
	return n
}

func nodeID(s string) int32 {
	switch s {
	case "controller":
		return ControllerID
	case "client":
		return ClientID
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(s, "b"))
	return int32(n)
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	if d.Cmd != "cluster" && h.c == nil {
		return "", fmt.Errorf("start with a cluster command")
	}
	topic := arg(d, "topic", h.topic)
	part := int32(num(d, "partition", 0))
	switch d.Cmd {
	case "cluster":
		o := DefaultOptions(uint64(num(d, "seed", 1)))
		o.Brokers = int(num(d, "brokers", 3))
		o.Broker.ReplicaLagTimeMaxMs = num(d, "lag-time", o.Broker.ReplicaLagTimeMaxMs)
		o.Broker.ReplicaLagMaxMessages = num(d, "lag-messages", o.Broker.ReplicaLagMaxMessages)
		o.Controller.SessionTimeoutMs = num(d, "session", o.Controller.SessionTimeoutMs)
		if names := arg(d, "bugs", ""); names != "" {
			bugs, err := bug.ParseSet(strings.Split(names, ","))
			if err != nil {
				return "", err
			}
			o.Broker.Bugs, o.Controller.Bugs, o.StorageBugs = bugs.On(bug.Broker), bugs.On(bug.Controller), bugs.On(bug.Storage)
		}
		h.c = New(o)
		h.producers, h.sent = map[string]producer{}, map[string]sentProduce{}
		h.c.Run(500)
		return fmt.Sprintf("%d brokers registered\n", len(h.c.Metadata().Brokers)), nil
	case "create-topic":
		h.topic = arg(d, "name", "t")
		err := h.c.CreateTopic(control.TopicSpec{
			Name: h.topic, Partitions: int32(num(d, "partitions", 1)), ReplicationFactor: int16(num(d, "rf", 3)),
			MinInsyncReplicas: int32(num(d, "min-isr", 1)), Election: arg(d, "election", control.Clean),
		})
		if err != nil {
			return "", err
		}
		return h.c.State(h.topic, 0), nil
	case "produce", "resend":
		// produce sends values as one batch, from an idempotent producer
		// with producer=NAME (and seq=, epoch=, default its own); resend
		// sends the records of the produce named name= again, as a
		// producer retries. Both go to the leader, or to=.
		var s sentProduce
		if d.Cmd == "resend" {
			var ok bool
			if s, ok = h.sent[arg(d, "name", "")]; !ok {
				return "", fmt.Errorf("no produce named %q", arg(d, "name", ""))
			}
		} else {
			values := bytesOf(strings.Split(arg(d, "values", "x"), ","))
			s = sentProduce{topic: topic, partition: part, acks: int16(num(d, "acks", -1)), timeout: int32(num(d, "timeout", 2000))}
			if name := arg(d, "producer", ""); name != "" {
				p, ok := h.producers[name]
				if !ok {
					return "", fmt.Errorf("no producer named %q", name)
				}
				s.records = batch.BuildIdempotent(p.id, int16(num(d, "epoch", int64(p.epoch))), int32(num(d, "seq", 0)), h.c.Now(), values...)
			} else {
				s.records = batch.Build(h.c.Now(), values...)
			}
		}
		to := int32(1)
		if p := h.c.Partition(s.topic, s.partition); p != nil && p.Leader != control.NoLeader {
			to = p.Leader
		}
		if spec := arg(d, "to", ""); spec != "" {
			to = h.resolve(d, spec, s.topic, s.partition)[0]
		}
		call := h.c.ProduceRecords(to, s.topic, s.partition, s.acks, s.timeout, s.records)
		if name := arg(d, "async", ""); name != "" {
			h.calls[name] = call
			h.sent[name] = s
			return "sent\n", nil
		}
		if name := arg(d, "as", ""); name != "" {
			h.sent[name] = s
		}
		h.c.Await(call, num(d, "wait", int64(s.timeout)+1000))
		return ProduceResult(call) + "\n", nil
	case "init-producer":
		// An idempotent producer's id, asked of broker= (default b1),
		// remembered as as=NAME.
		via := int32(1)
		if spec := arg(d, "broker", ""); spec != "" {
			via = h.resolve(d, spec, topic, part)[0]
		}
		id, epoch, err := h.c.InitProducerID(via)
		if err != nil {
			return "", err
		}
		name := arg(d, "as", "p")
		for other, p := range h.producers {
			if p.id == id {
				return "", fmt.Errorf("producer id %d handed out to %s already", id, other)
			}
		}
		h.producers[name] = producer{id, epoch}
		return fmt.Sprintf("%s: epoch %d\n", name, epoch), nil
	case "producers":
		// What each replica of broker= knows of the producers: per
		// producer, its epoch and cached batches as
		// sequences@offsets.
		var out []string
		for _, id := range h.targets(d, topic, part) {
			b := h.c.Node(id)
			if b == nil {
				out = append(out, fmt.Sprintf("b%d: down", id))
				continue
			}
			line := fmt.Sprintf("b%d:", id)
			for _, p := range b.Producers(topic, part) {
				line += fmt.Sprintf(" %s e%d", h.producerName(p.ProducerID), p.Epoch)
				for _, x := range p.Batches {
					line += fmt.Sprintf(" %d-%d@%d-%d", x.FirstSequence, x.LastSequence, x.FirstOffset, x.LastOffset)
				}
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n") + "\n", nil
	case "await":
		call := h.calls[arg(d, "name", "")]
		if call == nil {
			return "", fmt.Errorf("no call named %q", arg(d, "name", ""))
		}
		h.c.Await(call, num(d, "ms", 5000))
		return ProduceResult(call) + "\n", nil
	case "run":
		h.c.Run(num(d, "ms", 1000))
		return "", nil
	case "state":
		return h.c.State(topic, part), nil
	case "values":
		var out []string
		for _, id := range h.targets(d, topic, part) {
			out = append(out, fmt.Sprintf("b%d: %s", id, strings.Join(h.c.Values(id, topic, part), " ")))
		}
		return strings.Join(out, "\n") + "\n", nil
	case "consume":
		// A real consumer Fetch to the leader, from offset.
		vals, hw, err := h.c.Consume(topic, part, num(d, "offset", 0))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("hw=%d values=%s\n", hw, strings.Join(vals, " ")), nil
	case "committed":
		return strings.Join(h.c.Committed(topic, part), " ") + "\n", nil
	case "kill", "restart", "pause", "resume":
		ids := h.targets(d, topic, part)
		for _, id := range ids {
			switch d.Cmd {
			case "kill":
				h.c.Kill(id, arg(d, "lose-unsynced", "") == "true")
			case "restart":
				h.c.Restart(id)
			case "pause":
				h.c.Pause(id)
			case "resume":
				h.c.Resume(id)
			}
		}
		return fmt.Sprintf("%s %v\n", d.Cmd, ids), nil
	case "isolate":
		h.c.Isolate(nodeID(arg(d, "node", "")))
	case "cut":
		// from and to are node lists like broker=: ids, leader, followers,
		// controller, client, or a saved name; as= names the from side.
		from := h.resolve(d, arg(d, "from", ""), topic, part)
		to := h.resolve(d, arg(d, "to", ""), topic, part)
		if as := arg(d, "as", ""); as != "" {
			h.names[as] = from
		}
		for _, a := range from {
			for _, b := range to {
				h.c.Cut(a, b)
			}
		}
	case "heal":
		h.c.Heal()
	case "kill-controller":
		h.c.KillController()
	case "restart-controller":
		h.c.RestartController()
	case "wait-leader":
		not := int32(num(d, "not", -1))
		start := h.c.Now()
		ok := h.c.RunUntil(num(d, "ms", 5000), func() bool {
			p := h.c.Partition(topic, part)
			if p == nil || p.Leader == control.NoLeader || p.Leader == not {
				return false
			}
			b := h.c.Node(p.Leader)
			if b == nil {
				return false
			}
			info, _ := b.Replica(topic, part)
			return info.Role == "leader" && info.LeaderEpoch == p.LeaderEpoch
		})
		if !ok {
			return "no leader\n" + h.c.State(topic, part), nil
		}
		return fmt.Sprintf("leader after %s\n", roundTime(h.c.Now()-start)) + h.c.State(topic, part), nil
	case "wait-isr":
		size := int(num(d, "size", 3))
		start := h.c.Now()
		ok := h.c.RunUntil(num(d, "ms", 10000), func() bool {
			p := h.c.Partition(topic, part)
			return p != nil && len(p.ISR) == size
		})
		if !ok {
			return fmt.Sprintf("isr never reached size %d\n", size) + h.c.State(topic, part), nil
		}
		return fmt.Sprintf("isr size %d after %s\n", size, roundTime(h.c.Now()-start)) + h.c.State(topic, part), nil
	case "log":
		// Decisions (broker and controller log lines) since the last "log"
		// that contain grep, without their timestamps.
		grep := arg(d, "grep", "")
		tr := h.c.Trace()
		var out []string
		for _, line := range strings.Split(tr[h.mark:], "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || !strings.HasSuffix(f[1], ":") || !strings.Contains(line, grep) {
				continue
			}
			out = append(out, strings.Join(f[1:], " "))
		}
		h.mark = len(tr)
		if len(out) == 0 {
			return "(nothing)\n", nil
		}
		return strings.Join(out, "\n") + "\n", nil
	default:
		return "", fmt.Errorf("unknown command %q", d.Cmd)
	}
	return "", nil
}

// producerName is the init-producer name of producer id, or the id.
func (h *harness) producerName(id int64) string {
	for name, p := range h.producers {
		if p.id == id {
			return name
		}
	}
	return fmt.Sprint(id)
}

// targets resolves broker=...: ids, "leader" and "followers" of the
// partition (as the controller sees it now), "all", or a name saved with
// as=NAME by an earlier command.
func (h *harness) targets(d *datadriven.TestData, topic string, part int32) []int32 {
	ids := h.resolve(d, arg(d, "broker", ""), topic, part)
	if as := arg(d, "as", ""); as != "" {
		h.names[as] = ids
	}
	return ids
}

func (h *harness) resolve(d *datadriven.TestData, spec, topic string, part int32) []int32 {
	var ids []int32
	for _, t := range strings.Split(spec, ",") {
		p := h.c.Partition(topic, part)
		switch {
		case h.names[t] != nil:
			ids = append(ids, h.names[t]...)
		case t == "leader" && p != nil:
			ids = append(ids, p.Leader)
		case t == "followers" && p != nil:
			for _, r := range p.Replicas {
				if r != p.Leader {
					ids = append(ids, r)
				}
			}
		case t == "all":
			for _, n := range h.c.nodes {
				ids = append(ids, n.id)
			}
		case t == "controller" || t == "client":
			ids = append(ids, nodeID(t))
		default:
			if id := nodeID(t); id > 0 {
				ids = append(ids, id)
			} else {
				d.Fatalf(nil, "unknown target %q", t)
			}
		}
	}
	return ids
}

// roundTime buckets a duration so expectations do not pin exact timings
// that depend on tick phase.
func roundTime(ms int64) string {
	switch {
	case ms < 1000:
		return "<1s"
	case ms < 2000:
		return "1-2s"
	case ms < 3000:
		return "2-3s"
	case ms < 5000:
		return "3-5s"
	}
	return ">5s"
}
