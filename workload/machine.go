package workload

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// Client is one logical process's client of the cluster, as a machine:
// everything a Kafka client decides (which broker leads a partition, when
// its metadata is too old, when a send is tried again and with which
// producer id and sequence number, how an answer is classified) and no
// I/O. Its requests go out through its Wire and its waits through its
// Env, and each operation ends by calling the done it was given, on the
// driver's loop. Both drivers run this one Client: the TCP driver in real
// time and package sim on a simulated cluster, so a simulated history
// means what a real one does.
//
// It knows what a client can know (the metadata it heard, the brokers'
// addresses) and nothing of the cluster it did not hear through the
// protocol. Operations may overlap: the lanes of a producer session with
// several requests in flight send through one Client at once.
type Client struct {
	env            Env
	wire           Wire
	bootstrap      []string
	produceTimeout time.Duration
	addrs          map[int32]string
	parts          map[history.Key]PartitionState
	epochs         map[history.Key]int32 // the highest leader epoch heard of each partition (Learn)
	refreshed      time.Duration
	producer       *Producer
	// opts are the client's options, for the connection a held request
	// is finally delivered on; holds, if set, the brokers whose requests
	// are held on their way (Holds).
	opts  ClientOptions
	holds *Holds
	// closed: the process was replaced or stopped; answers and timers
	// still on their way are dropped.
	closed bool
}

// NewClient is a client of the cluster at bootstrap, in env.
func NewClient(env Env, bootstrap []string, o ClientOptions) *Client {
	return &Client{
		env: env, wire: env.NewWire(o), bootstrap: bootstrap, produceTimeout: o.ProduceTimeout,
		addrs: map[int32]string{}, parts: map[history.Key]PartitionState{}, epochs: map[history.Key]int32{},
		refreshed: env.Now() - MetadataMaxAge - 1, producer: NewProducer(o.Retries, o.Idempotent), opts: o,
	}
}

// Close drops the client's connections; nothing it started calls back
// after this.
func (c *Client) Close() {
	c.closed = true
	c.wire.Close()
}

// after calls fn after d, unless the client is closed by then.
func (c *Client) after(d time.Duration, fn func()) {
	c.env.After(d, func() {
		if !c.closed {
			fn()
		}
	})
}

// Call sends req to broker id on the client's connection to it: an error
// wrapping ErrNotSent if the client knows no address for it.
func (c *Client) Call(id int32, req kmsg.Request, done func(kmsg.Response, error)) {
	addr, ok := c.addrs[id]
	if !ok {
		done(nil, fmt.Errorf("%w: broker %d unknown", ErrNotSent, id))
		return
	}
	if c.holds.holds(id) {
		c.hold(addr, req, done)
		return
	}
	c.wire.Call(id, addr, req, func(resp kmsg.Response, err error) {
		if !c.closed {
			done(resp, err)
		}
	})
}

// Brokers are the brokers the client knows, by id.
func (c *Client) Brokers() []int32 { return slices.Sorted(maps.Keys(c.addrs)) }

// Metadata asks for the brokers and topic's partitions (none for "") the
// addresses in turn, each once on a connection of its own, until one
// answers; with no addresses, the brokers it knows by id, then its
// bootstrap brokers. The answer also becomes where later calls send their
// requests.
func (c *Client) Metadata(topic string, addrs []string, done func(Metadata, error)) {
	if len(addrs) == 0 {
		// Known brokers first (by id, so that the order tried is the
		// same every time), then the bootstrap list.
		for _, id := range c.Brokers() {
			addrs = append(addrs, c.addrs[id])
		}
		addrs = append(addrs, c.bootstrap...)
	}
	c.metadata(topic, addrs, func(md *kmsg.MetadataResponse, from string, err error) {
		if err != nil {
			done(Metadata{}, err)
			return
		}
		c.refreshed = c.env.Now()
		done(MetadataAnswer(md, topic, from), nil)
	})
}

// metadata asks each address in turn (each once) until one answers, and
// learns the answer.
func (c *Client) metadata(topic string, addrs []string, done func(*kmsg.MetadataResponse, string, error)) {
	tried := map[string]bool{}
	var lastErr error
	var try func(i int)
	try = func(i int) {
		for ; i < len(addrs) && tried[addrs[i]]; i++ {
		}
		if i == len(addrs) {
			if lastErr == nil {
				lastErr = errors.New("no address")
			}
			done(nil, "", fmt.Errorf("no broker answered a metadata request: %w", lastErr))
			return
		}
		addr := addrs[i]
		tried[addr] = true
		c.wire.CallAddr(addr, MetadataRequest(topic), func(resp kmsg.Response, err error) {
			if c.closed {
				return
			}
			if err != nil {
				lastErr = err
				try(i + 1)
				return
			}
			md := resp.(*kmsg.MetadataResponse)
			c.apply(topic, md)
			done(md, addr, nil)
		})
	}
	try(0)
}

// apply learns brokers' addresses and topic's partitions from md; a
// partition the answer leaves out keeps what was known of it.
func (c *Client) apply(topic string, md *kmsg.MetadataResponse) {
	got := MetadataAnswer(md, topic, "")
	maps.Copy(c.addrs, got.Brokers)
	for _, p := range slices.Sorted(maps.Keys(got.Partitions)) {
		Learn(c.parts, c.epochs, history.Key{Topic: topic, Partition: p}, got.Partitions[p])
	}
}

// Converged asks for topic's metadata, takes the answer into md, and
// calls done with what keeps the partitions from being converged (a
// leader and the whole replica set in the ISR each), "" when nothing does.
func (c *Client) Converged(topic string, partitions int32, md *Metadata, done func(why string)) {
	c.Metadata(topic, nil, func(got Metadata, err error) {
		if err != nil {
			done(err.Error())
			return
		}
		done(Unconverged(md, got, topic, partitions))
	})
}

// leader is the partition's leader as last known, asking for metadata if
// it is unknown or stale (older than MetadataMaxAge).
func (c *Client) leader(k history.Key, done func(int32, error)) {
	found := func() {
		p, ok := c.parts[k]
		if !ok || p.Leader < 0 {
			done(-1, fmt.Errorf("%w: no leader for %s", ErrNotSent, k))
			return
		}
		done(p.Leader, nil)
	}
	if p, ok := c.parts[k]; ok && p.Leader >= 0 && c.env.Now()-c.refreshed <= MetadataMaxAge {
		found()
		return
	}
	c.Metadata(k.Topic, nil, func(_ Metadata, err error) {
		if err != nil {
			done(-1, err)
			return
		}
		found()
	})
}

// forget drops what the client knows of a partition's leader, after an
// error that suggests it moved.
func (c *Client) forget(k history.Key) { delete(c.parts, k) }

// Send produces value to k with acks, trying again as the process's
// producer session decides (Producer), and classifies the outcome, which
// is all the checkers will know of it (see Outcome). Sends to a partition
// take their place in the session's order when Send is called.
func (c *Client) Send(k history.Key, value string, acks int16, done func(Outcome)) {
	c.attempt(c.producer.Send(k, value, acks), done)
}

// attempt sends d once, asking for a producer id first if the session
// needs one, and again after RetryBackoff while d says so; a send that
// must let an earlier one of its session go first waits PipelineWait and
// tries again.
func (c *Client) attempt(d *Delivery, done func(Outcome)) {
	next := func(again bool) {
		if !again {
			done(d.Outcome())
			return
		}
		c.after(RetryBackoff, func() { c.attempt(d, done) })
	}
	wait := func() { c.after(PipelineWait, func() { c.attempt(d, done) }) }
	k := d.Key()
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			next(d.NotSent(err))
			return
		}
		if !d.Ready() {
			wait()
			return
		}
		produce := func() {
			if !d.Ready() {
				wait()
				return
			}
			c.Call(leader, d.Request(c.produceTimeout, c.env.Stamp()), func(resp kmsg.Response, err error) {
				o, forget := SendOutcome(resp, err, d.Acks())
				if forget {
					c.forget(k)
				}
				next(d.Attempted(o, err))
			})
		}
		if !d.NeedsID() {
			produce()
			return
		}
		if !c.producer.AskID() {
			wait()
			return
		}
		c.Call(leader, InitProducerIDRequest(c.produceTimeout), func(resp kmsg.Response, err error) {
			if err := c.producer.SetID(resp, err); err != nil {
				next(d.NotSent(fmt.Errorf("%w: %v", ErrNotSent, err)))
				return
			}
			produce()
		})
	})
}

// fetch sends req, a fetch from offset, to broker id, and reads the
// answer as FetchAnswer does.
func (c *Client) fetch(id int32, req *kmsg.FetchRequest, offset int64, done func([]history.Record, int64, int64, int16, error)) {
	c.Call(id, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, -1, offset, 0, err)
			return
		}
		done(FetchAnswer(resp, offset, req.IsolationLevel == 1))
	})
}

// Poll fetches k from offset from as a consumer, below the high
// watermark. A broker that refuses from as out of range answers with an
// *OutOfRangeError carrying its high watermark.
func (c *Client) Poll(k history.Key, from int64, done func(Read, error)) {
	c.poll(k, PollRequest(k, from), from, done)
}

// PollCommitted is Poll as a read_committed consumer: up to the last
// stable offset (the Read's HW), without the aborted transactions'
// records.
func (c *Client) PollCommitted(k history.Key, from int64, done func(Read, error)) {
	c.poll(k, CommittedPollRequest(k, from), from, done)
}

func (c *Client) poll(k history.Key, req *kmsg.FetchRequest, from int64, done func(Read, error)) {
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			done(Read{}, err)
			return
		}
		c.fetch(leader, req, from, func(recs []history.Record, hw, next int64, code int16, err error) {
			r, err, forget := PollOutcome(recs, hw, code, err)
			r.Next = next
			if forget {
				c.forget(k)
			}
			done(r, err)
		})
	})
}

// EndOffset is k's latest offset (ListOffsets -1) at its leader: the high
// watermark.
func (c *Client) EndOffset(k history.Key, done func(int64, error)) {
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			done(-1, err)
			return
		}
		c.Call(leader, ListOffsetsRequest(k), func(resp kmsg.Response, err error) {
			off, err, forget := EndOffsetAnswer(resp, err)
			if forget {
				c.forget(k)
			}
			done(off, err)
		})
	})
}

// FinalRead reads k from offset 0 to its high watermark at its leader,
// asking again with fresh metadata (up to FinalReadAttempts times, after
// FinalReadBackoff) while the leader is unknown or has moved.
func (c *Client) FinalRead(k history.Key, done func(Read, error)) {
	c.finalRead(k, NewFinalRead, done)
}

// FinalReadCommitted is FinalRead as a read_committed consumer: to the
// last stable offset, without the aborted transactions' records.
func (c *Client) FinalReadCommitted(k history.Key, done func(Read, error)) {
	c.finalRead(k, NewCommittedFinalRead, done)
}

func (c *Client) finalRead(k history.Key, read func() *WholeRead, done func(Read, error)) {
	var attempt func(n int)
	attempt = func(n int) {
		c.leader(k, func(leader int32, err error) {
			retry := func(r Read, err error) {
				if err == nil || !RetryFinalRead(err) || n == FinalReadAttempts {
					done(r, err)
					return
				}
				c.forget(k)
				c.after(FinalReadBackoff, func() { attempt(n + 1) })
			}
			if err != nil {
				retry(Read{}, err)
				return
			}
			c.readAll(leader, c.wholeRead(read()), k, retry)
		})
	}
	attempt(1)
}

// ReplicaRead reads broker's replica of k whole, to its log end, as the
// debug consumer (replica id -2), leader or not.
func (c *Client) ReplicaRead(k history.Key, broker int32, done func(Read, error)) {
	c.readAll(broker, c.wholeRead(NewReplicaRead()), k, done)
}

// wholeRead is r, spooling as the client's options say.
func (c *Client) wholeRead(r *WholeRead) *WholeRead {
	r.newSpool = c.opts.Spool
	return r
}

// readAll reads k from broker id, fetch by fetch, until r says it is over.
func (c *Client) readAll(id int32, r *WholeRead, k history.Key, done func(Read, error)) {
	req := r.Request(k)
	c.fetch(id, req, req.Topics[0].Partitions[0].FetchOffset, func(recs []history.Record, hw, next int64, code int16, err error) {
		if over, res, err := r.Add(k, recs, hw, next, code, err); over {
			done(res, err)
			return
		}
		c.readAll(id, r, k, done)
	})
}

// CreateTopic asks the cluster once to create spec's topic, letting it
// take up to timeout. An error wrapping ErrNotSent means the request never
// left: the topic was not created by it. The broker the metadata names as
// the controller takes it (a foreign cluster may not forward it, as
// franz-go's kfake does not); else the lowest id, so that retries go to
// the same one.
func (c *Client) CreateTopic(spec TopicSpec, timeout time.Duration, done func(error)) {
	c.Metadata(spec.Name, nil, func(md Metadata, err error) {
		if err != nil {
			done(fmt.Errorf("%w: %v", ErrNotSent, err))
			return
		}
		id := md.Controller
		if _, known := c.addrs[id]; !known {
			ids := c.Brokers()
			if len(ids) == 0 {
				done(fmt.Errorf("%w: the metadata names no broker", ErrNotSent))
				return
			}
			id = slices.Min(ids)
		}
		c.Call(id, CreateTopicsRequest(spec, timeout), func(resp kmsg.Response, err error) {
			if err != nil {
				done(err)
				return
			}
			done(CreateTopicsAnswer(resp))
		})
	})
}

// DescribeTopic is the topic's partitions and the configs its guarantees
// depend on, as the cluster describes them: the partitions from the
// bootstrap brokers' metadata, the configs (DescribeConfigs) from the
// brokers in turn until one answers.
func (c *Client) DescribeTopic(topic string, done func(TopicDescription, error)) {
	c.metadata(topic, c.bootstrap, func(md *kmsg.MetadataResponse, _ string, err error) {
		switch {
		case err != nil:
			done(TopicDescription{}, fmt.Errorf("describing topic %s: %w", topic, err))
			return
		case len(md.Topics) != 1 || md.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code:
			done(TopicDescription{}, fmt.Errorf("topic %s does not exist", topic))
			return
		}
		desc := TopicDescription{Replicas: map[int32][]int32{}}
		for _, p := range md.Topics[0].Partitions {
			desc.Replicas[p.Partition] = p.Replicas
		}
		c.describeConfigs(topic, func(configs map[string]string, err error) {
			if err != nil {
				done(TopicDescription{}, err)
				return
			}
			desc.Configs = configs
			c.elrFeature(func(elr bool, err error) {
				desc.ELR = elr
				done(desc, err)
			})
		})
	})
}

// elrFeature asks the brokers in turn (ApiVersions) whether the cluster
// runs KIP-966's eligible leader replicas, until one answers.
func (c *Client) elrFeature(done func(bool, error)) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "chaos", "1"
	brokers := c.Brokers()
	var lastErr error
	var try func(i int)
	try = func(i int) {
		if i == len(brokers) {
			done(false, fmt.Errorf("asking the cluster's features (ApiVersions): %w", lastErr))
			return
		}
		c.Call(brokers[i], req, func(resp kmsg.Response, err error) {
			if err == nil {
				if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
					err = kerr.ErrorForCode(code)
				}
			}
			if err != nil {
				lastErr = err
				try(i + 1)
				return
			}
			for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
				if f.Name == FeatureELR && f.MaxVersionLevel >= 1 {
					done(true, nil)
					return
				}
			}
			done(false, nil)
		})
	}
	try(0)
}

// describeConfigs asks the brokers in turn for the topic's
// min.insync.replicas and unclean.leader.election.enable, those it
// describes (topicDiffs decides what a missing one means).
func (c *Client) describeConfigs(topic string, done func(map[string]string, error)) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	res.ConfigNames = []string{"min.insync.replicas", "unclean.leader.election.enable"}
	req.Resources = append(req.Resources, res)
	brokers := c.Brokers()
	var lastErr error
	var try func(i int)
	try = func(i int) {
		if i == len(brokers) {
			done(nil, fmt.Errorf("describing topic %s's configs (DescribeConfigs): %w", topic, lastErr))
			return
		}
		c.Call(brokers[i], req, func(resp kmsg.Response, err error) {
			if err != nil {
				lastErr = err
				try(i + 1)
				return
			}
			r := resp.(*kmsg.DescribeConfigsResponse)
			if len(r.Resources) != 1 {
				done(nil, fmt.Errorf("describing topic %s's configs: %d resources in the answer", topic, len(r.Resources)))
				return
			}
			if err := kerr.ErrorForCode(r.Resources[0].ErrorCode); err != nil {
				done(nil, fmt.Errorf("describing topic %s's configs: %w", topic, err))
				return
			}
			out := map[string]string{}
			for _, cf := range r.Resources[0].Configs {
				if cf.Value != nil {
					out[cf.Name] = *cf.Value
				}
			}
			done(out, nil)
		})
	}
	try(0)
}
