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

// TestCommands: each command's example is of that command, and each is
// used by some script, so that no handler goes untested.
func TestCommands(t *testing.T) {
	used := map[string]bool{}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			used[d.Cmd] = true
			return d.Expected
		})
	})
	for name, c := range commands {
		if first, _, _ := strings.Cut(c.example, " "); first != name {
			t.Errorf("command %s: example %q is of %s", name, c.example, first)
		}
		if !used[name] {
			t.Errorf("command %s: no script in testdata uses it", name)
		}
	}
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

// command is one script command: its handler, an example of its use with
// the arguments it takes, and what it does.
type command struct {
	run          func(h *harness, d *datadriven.TestData, topic string, part int32) (string, error)
	example, doc string
}

// commands are the scripts' commands, one handler each. Every command
// takes topic= and partition= (default: the last topic created, partition
// 0).
var commands = map[string]command{
	"cluster":            {(*harness).cmdCluster, "cluster seed=1 brokers=3 lag-time=2000 lag-messages=4000 session=1000 bugs=NAME,...", "a new simulated cluster, run 500 ms so that its brokers register"},
	"create-topic":       {(*harness).cmdCreateTopic, "create-topic name=t partitions=1 rf=3 min-isr=2 election=clean", "a topic, which later commands default to; prints partition 0's state"},
	"produce":            {(*harness).cmdProduce, "produce acks=-1 values=a,b timeout=2000 producer=p seq=0 epoch=0 to=leader async=NAME as=NAME wait=3000", "one batch of values to the leader (or to=), from idempotent producer p if given; async= sends and returns, as= names it for resend"},
	"resend":             {(*harness).cmdProduce, "resend name=first", "the records of the produce named first sent again, as a producer retries"},
	"init-producer":      {(*harness).cmdInitProducer, "init-producer as=p broker=1", "an idempotent producer id asked of a broker, named p"},
	"producers":          {(*harness).cmdProducers, "producers broker=all", "what each replica knows of the producers: epoch and cached batches"},
	"await":              {(*harness).cmdAwait, "await name=NAME ms=5000", "the result of the async produce named NAME"},
	"run":                {(*harness).cmdRun, "run ms=500", "the simulation run for ms"},
	"state":              {(*harness).cmdState, "state partition=0", "the partition's state as the controller and each replica see it"},
	"values":             {(*harness).cmdValues, "values broker=leader", "each replica's values"},
	"consume":            {(*harness).cmdConsume, "consume offset=0", "a consumer Fetch to the leader"},
	"committed":          {(*harness).cmdCommitted, "committed", "the values below the high watermark"},
	"kill":               {(*harness).cmdProcess, "kill broker=2 lose-unsynced", "brokers killed (broker= names targets as every command does: ids, leader, followers, all, or a name saved with as=)"},
	"restart":            {(*harness).cmdProcess, "restart broker=old", "killed brokers restarted"},
	"pause":              {(*harness).cmdProcess, "pause broker=followers as=slow", "brokers paused"},
	"resume":             {(*harness).cmdProcess, "resume broker=slow", "paused brokers resumed"},
	"isolate":            {(*harness).cmdIsolate, "isolate node=2", "a node cut from every other"},
	"cut":                {(*harness).cmdCut, "cut from=2 to=1 as=NAME", "the links from each of from to each of to cut, one way"},
	"heal":               {(*harness).cmdHeal, "heal", "every cut link restored"},
	"kill-controller":    {(*harness).cmdKillController, "kill-controller", "the controller killed"},
	"restart-controller": {(*harness).cmdRestartController, "restart-controller", "the controller restarted"},
	"wait-leader":        {(*harness).cmdWaitLeader, "wait-leader not=1 ms=5000", "run until the partition has a leader (not broker not) that knows it leads"},
	"wait-isr":           {(*harness).cmdWaitIsr, "wait-isr size=1 ms=10000", "run until the ISR has size members"},
	"log":                {(*harness).cmdLog, "log grep=t-0", "the broker and controller log lines since the last log that contain grep"},
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	if d.Cmd != "cluster" && h.c == nil {
		return "", fmt.Errorf("start with a cluster command")
	}
	c, ok := commands[d.Cmd]
	if !ok {
		return "", fmt.Errorf("unknown command %q", d.Cmd)
	}
	return c.run(h, d, arg(d, "topic", h.topic), int32(num(d, "partition", 0)))
}

func (h *harness) cmdCluster(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdCreateTopic(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.topic = arg(d, "name", "t")
	err := h.c.CreateTopic(control.TopicSpec{
		Name: h.topic, Partitions: int32(num(d, "partitions", 1)), ReplicationFactor: int16(num(d, "rf", 3)),
		MinInsyncReplicas: int32(num(d, "min-isr", 1)), Election: arg(d, "election", control.Clean),
	})
	if err != nil {
		return "", err
	}
	return h.c.State(h.topic, 0), nil
}

func (h *harness) cmdProduce(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdInitProducer(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdProducers(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdAwait(d *datadriven.TestData, topic string, part int32) (string, error) {
	call := h.calls[arg(d, "name", "")]
	if call == nil {
		return "", fmt.Errorf("no call named %q", arg(d, "name", ""))
	}
	h.c.Await(call, num(d, "ms", 5000))
	return ProduceResult(call) + "\n", nil
}

func (h *harness) cmdRun(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.c.Run(num(d, "ms", 1000))
	return "", nil
}

func (h *harness) cmdState(d *datadriven.TestData, topic string, part int32) (string, error) {
	return h.c.State(topic, part), nil
}

func (h *harness) cmdValues(d *datadriven.TestData, topic string, part int32) (string, error) {
	var out []string
	for _, id := range h.targets(d, topic, part) {
		out = append(out, fmt.Sprintf("b%d: %s", id, strings.Join(h.c.Values(id, topic, part), " ")))
	}
	return strings.Join(out, "\n") + "\n", nil
}

func (h *harness) cmdConsume(d *datadriven.TestData, topic string, part int32) (string, error) {
	// A real consumer Fetch to the leader, from offset.
	vals, hw, err := h.c.Consume(topic, part, num(d, "offset", 0))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("hw=%d values=%s\n", hw, strings.Join(vals, " ")), nil
}

func (h *harness) cmdCommitted(d *datadriven.TestData, topic string, part int32) (string, error) {
	return strings.Join(h.c.Committed(topic, part), " ") + "\n", nil
}

func (h *harness) cmdProcess(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdIsolate(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.c.Isolate(nodeID(arg(d, "node", "")))
	return "", nil
}

func (h *harness) cmdCut(d *datadriven.TestData, topic string, part int32) (string, error) {
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
	return "", nil
}

func (h *harness) cmdHeal(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.c.Heal()
	return "", nil
}

func (h *harness) cmdKillController(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.c.KillController()
	return "", nil
}

func (h *harness) cmdRestartController(d *datadriven.TestData, topic string, part int32) (string, error) {
	h.c.RestartController()
	return "", nil
}

func (h *harness) cmdWaitLeader(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdWaitIsr(d *datadriven.TestData, topic string, part int32) (string, error) {
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
}

func (h *harness) cmdLog(d *datadriven.TestData, topic string, part int32) (string, error) {
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
