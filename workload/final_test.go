package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
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
		done, _, err := NewFinalRead().Add(k, nil, 0, 0, c.code, nil)
		if !done || err == nil || err.Error() != c.text || RetryFinalRead(err) != c.retry {
			t.Errorf("code %d: done %v, %v, retry %v", c.code, done, err, RetryFinalRead(err))
		}
	}
	if !RetryFinalRead(fmt.Errorf("%w: no leader for t-0", ErrNotSent)) || RetryFinalRead(errors.New("connection reset by peer")) {
		t.Error("no leader known is retried, a reset connection (the read may have happened) is not")
	}
}

// TestLeaderReads: the final phase reads the partitions round robin, each
// again while it fails retriably or has not reached its acknowledged probe,
// until its own deadline; a stuck read extends that deadline until its
// stall outlasts the bound; a corrupt read is not read again.
func TestLeaderReads(t *testing.T) {
	cfg := Config{Workload: results.Workload{Partitions: 3, RequestTimeout: time.Second}, LivenessBound: 10 * time.Second}
	// Healed at 0, reads begin at 1s: the phase tries until 10s + 5s.
	l := NewLeaderReads(cfg, 0, time.Second, map[int32]int64{2: 7})
	now := time.Second
	var order []int32
	read := func(r Read, err error) {
		t.Helper()
		p, wait, ok := l.Next(now)
		if !ok {
			t.Fatal("no read left")
		}
		now += wait
		order = append(order, p)
		l.Done(now, r, err)
	}
	read(Read{}, &StuckReadError{Offset: 3, HW: 9})      // 0 stuck: until 1s+10s+5s
	read(Read{HW: 4}, nil)                               // 1 done
	read(Read{HW: 7}, nil)                               // 2 has not reached its probe (7)
	read(Read{}, errors.New("CORRUPT_MESSAGE: bad crc")) // 0 corrupt: over
	read(Read{HW: 8}, nil)                               // 2 reached it: over
	if _, _, ok := l.Next(now); ok {
		t.Errorf("reads left after %v", order)
	}
	if want := []int32{0, 1, 2, 0, 2}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}

	l = NewLeaderReads(cfg, 0, time.Second, nil)
	now = time.Second
	n := 0
	for {
		p, wait, ok := l.Next(now)
		if !ok {
			break
		}
		now += wait + 10*time.Millisecond
		err := error(&StuckReadError{Offset: 0, HW: 5})
		if p != 0 {
			err = nil
		}
		l.Done(now, Read{HW: 5}, err)
		n++
	}
	// The first stuck read at 1.01s gives partition 0 until 1.01s+15s.
	if now < 16*time.Second || now > 16*time.Second+FinalReadBackoff+20*time.Millisecond {
		t.Errorf("a stuck partition was read until %s (%d reads), want about 16s", now, n)
	}
}

// TestWholeReadSized: a whole read makes room at its first fetch for the
// records up to the HW it reports (a replica's read, a little more; up to
// maxPresize), and gives what its
// fetches returned, in order, whether the HW was right, short (a replica
// read, to its log end) or far beyond any log.
func TestWholeReadSized(t *testing.T) {
	k := history.Key{Topic: "t", Partition: 0}
	recs := func(from, n int64) []history.Record {
		var rs []history.Record
		for o := from; o < from+n; o++ {
			rs = append(rs, history.Record{Offset: o, Value: fmt.Sprint(o)})
		}
		return rs
	}
	for _, c := range []struct {
		name    string
		read    *WholeRead
		hw      int64
		fetches int64 // of 100 records each
		room    int   // the capacity after the first fetch
	}{
		{"final read", NewFinalRead(), 1000, 10, 1000},
		{"replica read past the HW", NewReplicaRead(), 500, 8, 500 + 500/16 + 1024},
		{"a HW beyond any log", NewReplicaRead(), 1 << 40, 3, maxPresize},
	} {
		var got []history.Record
		var r Read
		for f := range c.fetches + 1 {
			n := int64(100)
			if f == c.fetches {
				n = 0 // the log's end
			}
			done, rd, err := c.read.Add(k, recs(100*f, n), c.hw, 100*f+n, 0, nil)
			if err != nil {
				t.Fatalf("%s: fetch %d: %v", c.name, f, err)
			}
			if f == 0 && cap(c.read.all) != c.room {
				t.Errorf("%s: room for %d records after the first fetch, want %d", c.name, cap(c.read.all), c.room)
			}
			if done {
				r = rd
				break
			}
		}
		got = r.Records
		if want := recs(0, min(100*c.fetches, max(c.hw, 0))); c.read.replica == consumerReplica && !slices.Equal(got, want) {
			t.Errorf("%s: read %d records, want %d", c.name, len(got), len(want))
		}
		if want := recs(0, 100*c.fetches); c.read.replica != consumerReplica && !slices.Equal(got, want) {
			t.Errorf("%s: read %d records, want %d", c.name, len(got), len(want))
		}
	}
}

// TestWholeReadSpooled: a whole read given a spool holds at most spoolAt
// records in memory and spools the rest, and its completion, recorded,
// is the line the read held in memory gives; a read shorter than spoolAt
// makes no spool; a read that fails after spooling closes its spool.
func TestWholeReadSpooled(t *testing.T) {
	defer func(n int) { spoolAt = n }(spoolAt)
	spoolAt = 250
	k := history.Key{Topic: "t", Partition: 0}
	recs := func(from, n int64) []history.Record {
		var rs []history.Record
		for o := from; o < from+n; o++ {
			rs = append(rs, history.Record{Offset: o, Value: fmt.Sprintf("0-%d\"", o)})
		}
		return rs
	}
	dir := t.TempDir()
	lines := map[bool][]byte{}
	for _, spooled := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprint(spooled))
		w, err := history.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		var made []*history.Spool
		for _, n := range []int64{1000, 100} { // spooled, then too short to spool
			read := NewFinalRead()
			if spooled {
				read.newSpool = func() (*history.Spool, error) {
					sp, err := w.NewSpool()
					made = append(made, sp)
					return sp, err
				}
			}
			var r Read
			for f := int64(0); ; f++ {
				done, rd, err := read.Add(k, recs(100*f, min(100, n-100*f)), n, 0, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if spooled && len(read.all) >= spoolAt {
					t.Fatalf("spooled %v: %d records in memory", spooled, len(read.all))
				}
				if done {
					r = rd
					break
				}
			}
			inv := FinalRead{Key: k}.Invoke(1)
			if _, err := w.Append(ReadDone(inv, r, nil)); err != nil {
				t.Fatal(err)
			}
		}
		if spooled && len(made) != 1 {
			t.Errorf("%d spools made, want 1 (for the read past spoolAt)", len(made))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		lines[spooled], _ = os.ReadFile(path)
		ops, err := history.ReadFile(path)
		if err != nil || len(ops) != 2 || len(ops[0].Value.Records) != 1000 || len(ops[1].Value.Records) != 100 {
			t.Fatalf("spooled %v: read back %d ops, %v", spooled, len(ops), err)
		}
	}
	if !bytes.Equal(lines[false], lines[true]) {
		t.Error("a spooled read's history differs from the one held in memory")
	}

	// A read that fails once it has spooled closes its spool.
	w, err := history.Create(filepath.Join(dir, "failed"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var sp *history.Spool
	read := NewFinalRead()
	read.newSpool = func() (*history.Spool, error) { sp, err = w.NewSpool(); return sp, err }
	for f := int64(0); f < 3; f++ {
		if done, _, err := read.Add(k, recs(100*f, 100), 1000, 0, 0, nil); done || err != nil {
			t.Fatalf("fetch %d: done %v, %v", f, done, err)
		}
	}
	if done, _, err := read.Add(k, nil, 0, 0, kerr.NotLeaderForPartition.Code, nil); !done || err == nil || sp == nil {
		t.Fatalf("a refused fetch: done %v, %v, spool %v", done, err, sp)
	}
	if _, err := w.Append(history.Op{F: history.FinalRead, Value: &history.Value{Spool: sp}}); err == nil {
		t.Error("the failed read's spool is still open")
	}
}
