package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumed is one record a client read back.
type consumed struct {
	partition int32
	offset    int64
	value     string
}

// acked is where a producer was told a value landed.
type acked struct {
	partition int32
	offset    int64
}

// checkExactlyOnce asserts that every value sent was read exactly once,
// that nothing else was read, and that each value is where its
// acknowledgement said (for the acks that report an offset).
func checkExactlyOnce(t *testing.T, sent []string, got []consumed, acks map[string]acked) {
	t.Helper()
	want := map[string]bool{}
	for _, v := range sent {
		want[v] = true
	}
	seen := map[string][]consumed{}
	for _, c := range got {
		if !want[c.value] {
			t.Errorf("read a value nobody sent: %q at %d/%d", c.value, c.partition, c.offset)
			continue
		}
		seen[c.value] = append(seen[c.value], c)
	}
	missing := 0
	for _, v := range sent {
		switch cs := seen[v]; {
		case len(cs) == 0:
			missing++
			if missing <= 5 {
				t.Errorf("value %q was sent but never read", v)
			}
		case len(cs) > 1:
			t.Errorf("value %q read %d times: %v", v, len(cs), cs)
		default:
			if a, ok := acks[v]; ok && (a.partition != cs[0].partition || a.offset != cs[0].offset) {
				t.Errorf("value %q acknowledged at %d/%d but read at %d/%d", v, a.partition, a.offset, cs[0].partition, cs[0].offset)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d values never read", missing, len(sent))
	}
}

func acksName(acks int16) string {
	if acks == -1 {
		return "all"
	}
	return fmt.Sprint(acks)
}

func uniqueValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// endOffsets is the sum of a topic's high watermarks, and each of them.
func (tc *testCluster) endOffsets(topic string) (int64, map[int32]int64, error) {
	cl := tc.kgoClient()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	var total int64
	per := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		per[o.Partition] = o.Offset
	})
	return total, per, nil
}

// waitEnd waits until a topic holds at least n records, and returns the
// high watermarks. An acks=0 producer learns nothing, so this is how long
// its records take to appear; a topic just auto-created may also be unknown
// to some brokers for a heartbeat or two.
func (tc *testCluster) waitEnd(topic string, n int) map[int32]int64 {
	tc.t.Helper()
	var ends map[int32]int64
	waitFor(tc.t, 10*time.Second, fmt.Sprintf("%d records in %s", n, topic), func() (bool, string) {
		total, per, err := tc.endOffsets(topic)
		if err != nil {
			return false, err.Error()
		}
		ends = per
		return total >= int64(n), fmt.Sprintf("end offsets %v", per)
	})
	return ends
}

func TestClients(t *testing.T) {
	kcat := kcatPath(t)
	tc := startCluster(t, clusterOpts{})

	t.Run("kcat-metadata", func(t *testing.T) {
		tc := tc.with(t)
		tc.createTopic("meta", 3, 3, nil)
		testKcatMetadata(t, tc, kcat, "meta")
	})

	for _, acks := range []int16{0, 1, -1} {
		t.Run(fmt.Sprintf("kcat/acks=%d", acks), func(t *testing.T) {
			tc := tc.with(t)
			topic := "kcat-acks" + acksName(acks)
			tc.createTopic(topic, 3, 3, nil)
			sent := uniqueValues(topic, 60)
			kcatProduce(t, tc, kcat, topic, acks, sent)
			tc.waitEnd(topic, len(sent))
			checkExactlyOnce(t, sent, kcatConsume(t, tc, kcat, topic), nil)
		})
		t.Run(fmt.Sprintf("kgo/acks=%d", acks), func(t *testing.T) {
			tc := tc.with(t)
			// With acks 1 and -1 the topic is not created beforehand: kgo's
			// metadata request creates it with the controller's defaults
			// (3 partitions, rf 3), and kgo retries while the new leaders
			// learn of their leadership. With acks=0 nothing tells the
			// client of that race, and the records would vanish.
			topic := "kgo-acks" + acksName(acks)
			if acks == 0 {
				tc.createTopic(topic, 3, 3, nil)
			}
			sent := uniqueValues(topic, 60)
			offsets := kgoProduce(t, tc, topic, acks, sent)
			tc.waitEnd(topic, len(sent))
			s := tc.mustState(topic, 2)
			if len(s.isr) != 3 {
				t.Errorf("auto-created %s-2: %v, want 3 in-sync replicas", topic, s)
			}
			checkExactlyOnce(t, sent, kgoConsume(t, tc, topic), offsets)
		})
		t.Run(fmt.Sprintf("sarama/acks=%d", acks), func(t *testing.T) {
			tc := tc.with(t)
			topic := "sarama-acks" + acksName(acks)
			tc.createTopic(topic, 3, 3, nil)
			sent := uniqueValues(topic, 60)
			offsets := saramaProduce(t, tc, topic, acks, sent)
			tc.waitEnd(topic, len(sent))
			checkExactlyOnce(t, sent, saramaConsume(t, tc, topic), offsets)
		})
	}
}

var (
	kcatBrokers   = regexp.MustCompile(`(?m)^\s*(\d+) brokers:`)
	kcatBroker    = regexp.MustCompile(`(?m)^\s*broker (\d+) at (\S+)`)
	kcatPartition = regexp.MustCompile(`(?m)^\s*partition (\d+), leader (-?\d+), replicas: ([\d,]*), isrs: ([\d,]*)`)
)

// testKcatMetadata checks what librdkafka makes of our Metadata: every
// broker at its address, and each partition's leader and ISR as the brokers
// themselves report them.
func testKcatMetadata(t *testing.T, tc *testCluster, kcat, topic string) {
	out, err := exec.Command(kcat, "-b", tc.Bootstrap(), "-L", "-t", topic, "-m", "10").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("kcat -L:\n%s", text)
	if m := kcatBrokers.FindStringSubmatch(text); m == nil || m[1] != "3" {
		t.Errorf("kcat -L does not list 3 brokers")
	}
	brokers := map[int32]string{}
	for _, m := range kcatBroker.FindAllStringSubmatch(text, -1) {
		id, _ := strconv.Atoi(m[1])
		brokers[int32(id)] = m[2]
	}
	for _, id := range tc.brokerIDs() {
		if brokers[id] != tc.addr(id) {
			t.Errorf("kcat -L shows broker %d at %q, want %q", id, brokers[id], tc.addr(id))
		}
	}
	parts := kcatPartition.FindAllStringSubmatch(text, -1)
	if len(parts) != 3 {
		t.Fatalf("kcat -L lists %d partitions of %s, want 3", len(parts), topic)
	}
	for _, m := range parts {
		p, _ := strconv.Atoi(m[1])
		leader, _ := strconv.Atoi(m[2])
		isr := parseIDs(m[4])
		want := tc.mustState(topic, int32(p))
		if int32(leader) != want.leader || !slices.Equal(isr, want.isr) {
			t.Errorf("kcat -L: partition %d leader %d isr %v; the brokers say %v", p, leader, isr, want)
		}
		if len(isr) != 3 || len(parseIDs(m[3])) != 3 {
			t.Errorf("kcat -L: partition %d replicas %q isrs %q, want 3 of each", p, m[3], m[4])
		}
	}
}

func parseIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return out
}

func kcatProduce(t *testing.T, tc *testCluster, kcat, topic string, acks int16, values []string) {
	cmd := exec.Command(kcat, "-b", tc.Bootstrap(), "-P", "-t", topic,
		"-X", fmt.Sprintf("acks=%d", acks), "-X", "message.timeout.ms=10000", "-X", "enable.idempotence=false")
	cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	// kcat reports failed deliveries on stderr but may still exit 0.
	if err != nil || bytes.Contains(out, []byte("ERROR")) || bytes.Contains(out, []byte("failed")) {
		t.Fatalf("kcat -P (acks=%d): %v\n%s", acks, err, out)
	}
}

func kcatConsume(t *testing.T, tc *testCluster, kcat, topic string) []consumed {
	out, err := exec.Command(kcat, "-b", tc.Bootstrap(), "-C", "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", `%p %o %s\n`).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("kcat -C: %v\n%s%s", err, out, stderr)
	}
	var got []consumed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var c consumed
		if _, err := fmt.Sscanf(line, "%d %d %s", &c.partition, &c.offset, &c.value); err != nil {
			t.Fatalf("kcat -C line %q: %v", line, err)
		}
		got = append(got, c)
	}
	return got
}

func kgoProduce(t *testing.T, tc *testCluster, topic string, acks int16, values []string) map[string]acked {
	opts := []kgo.Opt{kgo.AllowAutoTopicCreation(), kgo.RecordDeliveryTimeout(10 * time.Second)}
	switch acks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	cl := tc.kgoClient(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("kgo produce (acks=%d): %v", acks, err)
	}
	if acks == 0 {
		return nil // no response, so no offsets
	}
	out := map[string]acked{}
	for _, r := range res {
		out[string(r.Record.Value)] = acked{r.Record.Partition, r.Record.Offset}
	}
	return out
}

// kgoConsume reads a topic from the start to the high watermarks it has now.
func kgoConsume(t *testing.T, tc *testCluster, topic string) []consumed {
	ends := tc.waitEnd(topic, 0)
	cl := tc.kgoClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	var got []consumed
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kgo consume of %s: reached %v of %v before the deadline", topic, next, ends)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("kgo fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, consumed{r.Partition, r.Offset, string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

func saramaConfig(acks int16) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "integration-test"
	cfg.Producer.RequiredAcks = sarama.RequiredAcks(acks)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.DialTimeout = time.Second
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	return cfg
}

func saramaProduce(t *testing.T, tc *testCluster, topic string, acks int16, values []string) map[string]acked {
	return saramaProduceWith(t, tc, topic, saramaConfig(acks), values)
}

func saramaProduceWith(t *testing.T, tc *testCluster, topic string, cfg *sarama.Config, values []string) map[string]acked {
	acks := cfg.Producer.RequiredAcks
	p, err := sarama.NewSyncProducer(strings.Split(tc.Bootstrap(), ","), cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer p.Close()
	out := map[string]acked{}
	for _, v := range values {
		part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
		if err != nil {
			t.Fatalf("sarama produce %q (acks=%d, idempotent %v): %v", v, acks, cfg.Producer.Idempotent, err)
		}
		if acks != sarama.NoResponse {
			out[v] = acked{part, off}
		}
	}
	return out
}

func saramaConsume(t *testing.T, tc *testCluster, topic string) []consumed {
	client, err := sarama.NewClient(strings.Split(tc.Bootstrap(), ","), saramaConfig(1))
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer consumer.Close()
	parts, err := consumer.Partitions(topic)
	if err != nil {
		t.Fatalf("sarama partitions of %s: %v", topic, err)
	}
	var got []consumed
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("sarama end offset of %s-%d: %v", topic, p, err)
		}
		if end == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume %s-%d: %v", topic, p, err)
		}
		timeout := time.After(15 * time.Second)
	read:
		for {
			select {
			case m := <-pc.Messages():
				got = append(got, consumed{m.Partition, m.Offset, string(m.Value)})
				if m.Offset >= end-1 {
					break read
				}
			case err := <-pc.Errors():
				t.Errorf("sarama consume %s-%d: %v", topic, p, err)
			case <-timeout:
				pc.Close()
				t.Fatalf("sarama consume of %s-%d did not reach offset %d", topic, p, end)
			}
		}
		pc.Close()
	}
	return got
}
