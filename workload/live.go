package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// Live runs a test's Phases against a real cluster over TCP, on a loop of
// its own, with the wall clock as the history's (the Recorder's). Its
// methods block until the phase they start is over; they may be called
// from any goroutine. Close ends it.
type Live struct {
	l      *loop
	ph     *Phases
	cfg    Config
	failed chan struct{} // closed when a history write fails
}

// NewLive is workload w of cfg against the cluster at cfg.Bootstrap,
// recorded by rec.
func NewLive(cfg Config, rec *Recorder, w Workload) *Live {
	l := newLoop(rec.Since)
	lv := &Live{l: l, cfg: cfg, ph: NewPhases(l, cfg, rec, w), failed: make(chan struct{})}
	lv.ph.EndAtLimit = true
	lv.ph.onErr = func() { close(lv.failed) }
	return lv
}

// Close stops whatever still runs and closes every connection.
func (lv *Live) Close() { lv.l.close() }

// err is the phases' history write error, read on the loop.
func (lv *Live) err() error {
	var err error
	lv.l.do(func() { err = lv.ph.Err() })
	return err
}

// Run drives the producers and consumers until the time limit or ctx
// ends. It returns the first history write error: a history that cannot
// be written makes the test meaningless. At the time limit an operation
// in flight runs to its honest outcome; the end of ctx (an interrupt, or a
// fault command that failed) abandons it, its invoke left open.
func (lv *Live) Run(ctx context.Context) error {
	if err := lv.cfg.Validate(); err != nil {
		return err
	}
	finished := make(chan struct{})
	lv.l.post(func() { lv.ph.StartWorkers(func() { close(finished) }) })
	select {
	case <-finished:
	case <-lv.failed:
	case <-ctx.Done():
		lv.l.do(lv.ph.StopWorkers)
	}
	return lv.err()
}

// StartMonitor samples the partitions every interval, each request
// waiting up to timeout, until StopMonitor.
func (lv *Live) StartMonitor(interval, timeout time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("monitor interval must be positive, got %s", interval)
	}
	lv.l.post(func() { lv.ph.StartMonitor(interval, timeout) })
	return nil
}

// StopMonitor ends the monitor (a sample in flight keeps its open invoke)
// and returns the phases' history write error, if any.
func (lv *Live) StopMonitor() error {
	lv.l.do(lv.ph.StopMonitor)
	return lv.err()
}

// Final runs the final phase (Phases.Final) and says how the wait for
// convergence ended. The end of ctx abandons it: the reads in flight keep
// their open invokes, and the error is ctx's.
func (lv *Live) Final(ctx context.Context, timeout time.Duration) (Convergence, error) {
	got := make(chan Convergence, 1)
	lv.l.post(func() { lv.ph.Final(timeout, func(c Convergence) { got <- c }) })
	select {
	case c := <-got:
		return c, lv.err()
	case <-lv.failed:
		return Convergence{}, lv.err()
	case <-ctx.Done():
		lv.l.do(lv.ph.StopFinal)
		return Convergence{}, ctx.Err()
	}
}

// Consumers are the consumer group's members as the nemesis acts on them
// from a goroutine of its own (the Phases' GroupMembers, on the loop).
func (lv *Live) Consumers() GroupMembers { return liveClients{lv} }

type liveClients struct{ lv *Live }

// Clients are the workload's clients, for the nemesis's delay-client
// and pause-producer (nemesis.Clients, nemesis.Producers).
func (lv *Live) Clients() liveClients { return liveClients{lv} }

func (c liveClients) Hold(id int32) (how string, err error) {
	how, err = "", errors.New("the workload is over")
	c.lv.l.do(func() { how, err = c.lv.ph.Hold(id) })
	return how, err
}

func (c liveClients) Sessions() int {
	n := 0
	c.lv.l.do(func() { n = c.lv.ph.Sessions() })
	return n
}

func (c liveClients) Zombie(i int) (name string, err error) {
	name, err = "", errors.New("the workload is over")
	c.lv.l.do(func() { name, err = c.lv.ph.Zombie(i) })
	return name, err
}

func (c liveClients) Wake(i int) (err error) {
	c.lv.l.do(func() { err = c.lv.ph.Wake(i) })
	return err
}

func (c liveClients) Release(id int32) (err error) {
	c.lv.l.do(func() { err = c.lv.ph.Release(id) })
	return err
}

func (c liveClients) Coordinator() (id int32, err error) {
	id, err = -1, errors.New("the workload is over")
	c.lv.l.do(func() { id, err = c.lv.ph.Coordinator() })
	return id, err
}

func (c liveClients) Members() int {
	n := 0
	c.lv.l.do(func() { n = c.lv.ph.Members() })
	return n
}

func (c liveClients) Crash(i int) (name string, err error) {
	c.lv.l.do(func() { name, err = c.lv.ph.Crash(i) })
	return name, err
}

func (c liveClients) Pause(i int) (name string, err error) {
	c.lv.l.do(func() { name, err = c.lv.ph.Pause(i) })
	return name, err
}

func (c liveClients) Resume(i int) (err error) {
	c.lv.l.do(func() { err = c.lv.ph.Resume(i) })
	return err
}

func (c liveClients) Restart(i int) (err error) {
	c.lv.l.do(func() { err = c.lv.ph.Restart(i) })
	return err
}

// Monitor samples every partition until ctx ends (see Phases.StartMonitor),
// on a Live of its own.
func Monitor(ctx context.Context, cfg Config, rec *Recorder, interval, timeout time.Duration) error {
	lv := NewLive(cfg, rec, nil)
	defer lv.Close()
	if err := lv.StartMonitor(interval, timeout); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-lv.failed:
	}
	return lv.StopMonitor()
}

// SyncClient is a Client on a loop of its own over TCP, whose operations
// block until they end or their context does, for what asks the cluster
// one thing at a time: creating and checking the topic, the nemesis's
// questions, tests. An operation whose context ended is abandoned: its
// answer, if one comes, changes what the client knows and nothing else.
type SyncClient struct {
	l  *loop
	cl *Client
}

// NewSyncClient is a client of the cluster at bootstrap.
func NewSyncClient(bootstrap []string, o ClientOptions) *SyncClient {
	start := time.Now()
	l := newLoop(func() time.Duration { return time.Since(start) })
	s := &SyncClient{l: l}
	l.do(func() { s.cl = NewClient(l, bootstrap, o) })
	return s
}

// Close drops the client's connections.
func (s *SyncClient) Close() { s.l.close() }

// await starts an operation on the loop and waits for its done, or for ctx.
func await[T any](ctx context.Context, l *loop, start func(done func(T))) (T, error) {
	got := make(chan T, 1)
	l.post(func() { start(func(v T) { got <- v }) })
	select {
	case v := <-got:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

type withErr[T any] struct {
	v   T
	err error
}

// await2 is await for an operation that ends with a value and an error.
func await2[T any](ctx context.Context, l *loop, start func(done func(T, error))) (T, error) {
	a, err := await(ctx, l, func(done func(withErr[T])) {
		start(func(v T, err error) { done(withErr[T]{v, err}) })
	})
	if err != nil {
		return a.v, err
	}
	return a.v, a.err
}

// Metadata is Client.Metadata.
func (s *SyncClient) Metadata(ctx context.Context, topic string, addrs ...string) (Metadata, error) {
	return await2(ctx, s.l, func(done func(Metadata, error)) { s.cl.Metadata(topic, addrs, done) })
}

// Send is Client.Send; an abandoned send's outcome is unknown.
func (s *SyncClient) Send(ctx context.Context, k history.Key, value string, acks int16) Outcome {
	o, err := await(ctx, s.l, func(done func(Outcome)) { s.cl.Send(k, value, acks, done) })
	if err != nil {
		return Outcome{Type: history.Info, Error: err.Error()}
	}
	return o
}

// Poll is Client.Poll.
func (s *SyncClient) Poll(ctx context.Context, k history.Key, from int64) (Read, error) {
	return await2(ctx, s.l, func(done func(Read, error)) { s.cl.Poll(k, from, done) })
}

// EndOffset is Client.EndOffset.
func (s *SyncClient) EndOffset(ctx context.Context, k history.Key) (int64, error) {
	return await2(ctx, s.l, func(done func(int64, error)) { s.cl.EndOffset(k, done) })
}

// FinalRead is Client.FinalRead.
func (s *SyncClient) FinalRead(ctx context.Context, k history.Key) (Read, error) {
	return await2(ctx, s.l, func(done func(Read, error)) { s.cl.FinalRead(k, done) })
}

// ReplicaRead is Client.ReplicaRead.
func (s *SyncClient) ReplicaRead(ctx context.Context, k history.Key, broker int32) (Read, error) {
	return await2(ctx, s.l, func(done func(Read, error)) { s.cl.ReplicaRead(k, broker, done) })
}

// CreateTopic is Client.CreateTopic.
func (s *SyncClient) CreateTopic(ctx context.Context, spec TopicSpec, timeout time.Duration) error {
	err, cerr := await(ctx, s.l, func(done func(error)) { s.cl.CreateTopic(spec, timeout, done) })
	return errors.Join(err, cerr)
}

// DescribeTopic is Client.DescribeTopic.
func (s *SyncClient) DescribeTopic(ctx context.Context, topic string) (TopicDescription, error) {
	return await2(ctx, s.l, func(done func(TopicDescription, error)) { s.cl.DescribeTopic(topic, done) })
}

// Call is Client.Call: req to broker id, which the client must know.
func (s *SyncClient) Call(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	return await2(ctx, s.l, func(done func(kmsg.Response, error)) { s.cl.Call(id, req, done) })
}

// Converged is Client.Converged: what keeps topic's partitions from being
// converged, "" when nothing does.
func (s *SyncClient) Converged(ctx context.Context, topic string, partitions int32, md *Metadata) string {
	// md is the loop's while the operation runs, the caller's after.
	var got Metadata
	if md != nil {
		got = *md
		got.Partitions = maps.Clone(md.Partitions)
	}
	type result struct {
		why string
		md  Metadata
	}
	r, err := await(ctx, s.l, func(done func(result)) {
		s.cl.Converged(topic, partitions, &got, func(why string) { done(result{why, got}) })
	})
	if err != nil {
		return err.Error()
	}
	if md != nil {
		*md = r.md
	}
	return r.why
}
