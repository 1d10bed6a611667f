package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"
)

func TestWriteReadAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ops := []Op{
		{Time: 1, Process: 0, Type: Invoke, F: Send, Value: &Value{Topic: "t", Partition: 1, Value: "0-1"}},
		{Time: 2, Process: 0, Type: OK, F: Send, Value: &Value{Topic: "t", Partition: 1, Value: "0-1", Offset: Int64(7)}},
		{Time: 3, Process: NemesisProcess, Type: Info, F: "start-kill", Value: &Value{FaultInfo: &FaultInfo{Fault: "kill", Targets: []string{"broker-2"}}}},
	}
	for _, op := range ops {
		if _, err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].Index != 1 || *got[1].Value.Offset != 7 || got[2].Value.Targets[0] != "broker-2" {
		t.Fatalf("read back %+v", got)
	}
	// A writer killed mid-line leaves a torn tail: the prefix still reads.
	data, _ := os.ReadFile(path)
	torn := string(data) + `{"index":3,"time":4,"proc`
	got, err = Read(strings.NewReader(torn))
	if !errors.Is(err, ErrTornTail) || len(got) != 3 {
		t.Fatalf("torn tail: %d ops, err %v", len(got), err)
	}
	// A bad line in the middle is an error with its line number.
	bad := strings.Replace(string(data), `"type":"ok"`, `"type":"maybe"`, 1)
	if _, err := Read(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad type: %v", err)
	}
	// Bare ops without a header are accepted (another tool's history).
	lines := strings.SplitN(string(data), "\n", 2)
	if got, err := Read(strings.NewReader(lines[1])); err != nil || len(got) != 3 {
		t.Fatalf("headerless: %d ops, %v", len(got), err)
	}
}

func TestPairs(t *testing.T) {
	ops := []Op{
		{Process: 0, Type: Invoke, F: Send},
		{Process: 1, Type: Invoke, F: Poll},
		{Process: 0, Type: Info, F: Send},
		{Process: 0, Type: Invoke, F: Send},
	}
	p, err := Pairs(ops)
	if err != nil {
		t.Fatal(err)
	}
	if p[0] != 2 || p[2] != 0 || p[1] != -1 || p[3] != -1 {
		t.Fatalf("pairs %v", p)
	}
	if _, err := Pairs(append(ops, Op{Process: 0, Type: Invoke, F: Send})); err == nil {
		t.Fatal("two open ops on one process accepted")
	}
	if _, err := Pairs([]Op{{Process: 3, Type: OK, F: Send}}); err == nil {
		t.Fatal("completion without invoke accepted")
	}
}

// TestEmbeddedPartsStayFlat: monitor, nemesis and crash fields live in
// structs of their own, yet read and write as top-level fields of the JSON
// object, as docs/history.md describes them; a client operation carries
// none of them.
func TestEmbeddedPartsStayFlat(t *testing.T) {
	line := `{"index":0,"time":1,"process":-2,"type":"ok","f":"monitor","value":{"topic":"t","partition":1,"hw":5,"leader":2,"epoch":3,"isr":[1,2],"replicas":[1,2,3]}}` + "\n" +
		`{"index":1,"time":2,"process":-1,"type":"info","f":"start-kill","value":{"partition":0,"fault":"kill","targets":["broker-2"]}}` + "\n" +
		`{"index":2,"time":3,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"a"}}` + "\n" +
		`{"index":3,"time":4,"process":-3,"type":"info","f":"crash","value":{"partition":0,"broker":2,"node":"broker-2","exit":"exit status 2","panic":"runtime error: index out of range [3] with length 3","log":"panic: x\ngoroutine 1"}}` + "\n"
	ops, err := Read(strings.NewReader(line))
	if err != nil || len(ops) != 4 {
		t.Fatalf("%d ops, %v", len(ops), err)
	}
	m, n, c := ops[0].Value, ops[1].Value, ops[2].Value
	if m.Sample == nil || *m.Leader != 2 || *m.Epoch != 3 || len(m.ISR) != 2 || len(m.Replicas) != 3 || m.FaultInfo != nil {
		t.Fatalf("monitor value %+v", m)
	}
	if n.FaultName() != "kill" || n.FaultTargets()[0] != "broker-2" || n.Sample != nil {
		t.Fatalf("nemesis value %+v", n)
	}
	if c.Sample != nil || c.FaultInfo != nil || c.FaultName() != "" || c.FaultTargets() != nil || c.Crashed() != nil {
		t.Fatalf("client value %+v", c)
	}
	if x := ops[3].Value; x.Crashed() == nil || x.Node != "broker-2" || *x.Broker != 2 || x.Exit != "exit status 2" ||
		!strings.HasPrefix(x.Panic, "runtime error") || x.Log != "panic: x\ngoroutine 1" || x.Stack != "" || x.FaultInfo != nil {
		t.Fatalf("crash value %+v", x)
	}
	var buf bytes.Buffer
	for _, op := range ops {
		if err := encodeLine(&buf, op); err != nil {
			t.Fatal(err)
		}
	}
	if buf.String() != line {
		t.Fatalf("re-encoded:\n%s\nwant:\n%s", buf.String(), line)
	}
}

// TestDetached: a detached op equals the original and shares no memory
// with it: changing what the copy points to leaves the original as it was.
func TestDetached(t *testing.T) {
	op := &Op{Index: 1, Type: OK, F: "start-kill", Error: "e", Value: &Value{Topic: "t", Offset: Int64(3),
		Records:   []Record{{Offset: 1, Value: "a"}},
		FaultInfo: &FaultInfo{Fault: "kill", Targets: []string{"broker-1"}, Commands: []Command{{Node: "n"}}},
		TxnInfo:   &TxnInfo{Mops: []Mop{{F: Send, MopSend: &MopSend{Topic: "t", Value: "v"}}}},
	}}
	want := fmt.Sprintf("%+v %+v %+v", *op.Value, *op.Value.FaultInfo, *op.Value.TxnInfo.Mops[0].MopSend)
	c := Detached(op)
	if !reflect.DeepEqual(c, op) {
		t.Fatalf("copy %+v differs from %+v", c, op)
	}
	*c.Value.Offset = 9
	c.Value.Records[0].Value = "b"
	c.Value.Targets[0] = "x"
	c.Value.Commands[0].Node = "y"
	c.Value.Mops[0].Value = "w"
	if got := fmt.Sprintf("%+v %+v %+v", *op.Value, *op.Value.FaultInfo, *op.Value.TxnInfo.Mops[0].MopSend); got != want {
		t.Fatalf("changing the copy changed the original:\n%s\n%s", got, want)
	}
	if unsafe.StringData(c.F) == unsafe.StringData(op.F) || unsafe.StringData(c.Value.Topic) == unsafe.StringData(op.Value.Topic) {
		t.Fatal("the copy's strings share memory with the original's")
	}
}

// TestScanAcrossChunks: lines cut by the reader's chunks (even lines longer
// than a chunk), blank lines and a torn tail read as they do whole.
func TestScanAcrossChunks(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"history":"chaos","version":1}` + "\n\n")
	var want []Op
	for i := range 50 {
		op := Op{Index: int64(i), Time: int64(i), Type: OK, F: Poll, Value: &Value{Topic: "t"}}
		for j := range i % 7 {
			op.Value.Records = append(op.Value.Records, Record{Offset: int64(j), Value: strings.Repeat("v", i)})
		}
		want = append(want, op)
		if err := encodeLine(&buf, op); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			buf.WriteString("  \r\n")
		}
	}
	buf.WriteString(`{"index":50,"ti`)
	defer func(n int) { chunkBytes = n }(chunkBytes)
	for _, n := range []int{1, 7, 64, 1000, 1 << 20} {
		chunkBytes = n
		got, err := Read(bytes.NewReader(buf.Bytes()))
		if !errors.Is(err, ErrTornTail) || !reflect.DeepEqual(got, want) {
			t.Fatalf("chunks of %d bytes: %d ops (want %d), %v", n, len(got), len(want), err)
		}
		bad := bytes.Replace(buf.Bytes(), []byte(`"index":30,`), []byte(`"index":"x",`), 1)
		if _, err := Read(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "history line 39:") {
			t.Fatalf("chunks of %d bytes: a bad line 39 read as %v", n, err)
		}
	}
}

// afterReader fails the test if it is read once done is set.
type afterReader struct {
	r    io.Reader
	done atomic.Bool
	late atomic.Bool
}

func (a *afterReader) Read(p []byte) (int, error) {
	if a.done.Load() {
		a.late.Store(true)
	}
	return a.r.Read(p)
}

// TestScanStopsReading: once Scan returns, on fn's error, nothing reads
// its reader any more: the caller may close or reuse it.
func TestScanStopsReading(t *testing.T) {
	var buf bytes.Buffer
	for i := range 20_000 {
		if err := encodeLine(&buf, Op{Index: int64(i), Type: Invoke, F: Send, Value: &Value{Topic: "t", Value: "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int) { chunkBytes = n }(chunkBytes)
	chunkBytes = 1000
	r := &afterReader{r: &buf}
	stop := errors.New("enough")
	n := 0
	err := Scan(r, func(*Op) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	r.done.Store(true)
	time.Sleep(50 * time.Millisecond)
	if !errors.Is(err, stop) || n != 10 || r.late.Load() {
		t.Fatalf("Scan returned %v after %d ops; read after it returned: %v", err, n, r.late.Load())
	}
}

// TestLongReadDecodesInItsRoom: a read of thousands of records on a line
// of more than a MB decodes as any line does, into a slice of just its
// records' room (not one grown by doubling).
func TestLongReadDecodesInItsRoom(t *testing.T) {
	op := Op{Index: 7, Time: 9, Type: OK, F: FinalRead, Value: &Value{Topic: "t", HW: Int64(5000)}}
	for j := range 5000 {
		op.Value.Records = append(op.Value.Records, Record{Offset: int64(j), Value: strings.Repeat("v", 250)})
	}
	var buf bytes.Buffer
	if err := encodeLine(&buf, op); err != nil {
		t.Fatal(err)
	}
	if buf.Len() <= 1<<20 {
		t.Fatalf("a line of %d bytes is not long", buf.Len())
	}
	got, err := Read(&buf)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], op) {
		t.Fatalf("decoded as %d ops, %v", len(got), err)
	}
	if rs := got[0].Value.Records; cap(rs) != len(rs) {
		t.Fatalf("%d records decoded into room for %d", len(rs), cap(rs))
	}
}

// TestScanHoldsOneLongLine: while the caller holds a line longer than the
// read-ahead budget, the next long line is not read: a long run's final
// reads, lines of tens of MB, are held one at a time.
func TestScanHoldsOneLongLine(t *testing.T) {
	defer func(c, a int) { chunkBytes, aheadBytes = c, a }(chunkBytes, aheadBytes)
	chunkBytes, aheadBytes = 256, 1024
	var buf bytes.Buffer
	long := func(i int) {
		op := Op{Index: int64(i), Type: OK, F: FinalRead, Value: &Value{Topic: "t"}}
		for j := range 400 {
			op.Value.Records = append(op.Value.Records, Record{Offset: int64(j), Value: "v"})
		}
		if err := encodeLine(&buf, op); err != nil {
			t.Fatal(err)
		}
	}
	long(0)
	first := buf.Len()
	long(1)
	long(2)
	r := &countingReader{r: &buf}
	n := 0
	err := Scan(r, func(op *Op) error {
		if n++; n == 1 {
			// Time for a reader that does not wait to read on.
			time.Sleep(50 * time.Millisecond)
			// The chunk that held the first line holds at most as
			// much again of the next.
			if got := r.n.Load(); got > int64(2*first) {
				t.Errorf("%d bytes read while the caller held a line of %d (budget %d)", got, first, aheadBytes)
			}
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("%d ops, %v", n, err)
	}
}

// TestScanAt: the operations ScanAt gives are those at the same positions
// in what Read returns, with and without a header, across chunk
// boundaries, and the lines it was not asked for are not decoded (a bad
// one goes unnoticed, a bad wanted one does not).
func TestScanAt(t *testing.T) {
	defer func(n int) { chunkBytes = n }(chunkBytes)
	for _, header := range []string{`{"history":"chaos","version":1}` + "\n\n", "\n"} {
		var buf bytes.Buffer
		buf.WriteString(header)
		for i := range 40 {
			op := Op{Index: int64(i), Time: int64(i), Type: OK, F: Send, Value: &Value{Topic: "t", Value: strings.Repeat("v", i%9)}}
			if err := encodeLine(&buf, op); err != nil {
				t.Fatal(err)
			}
			if i%6 == 0 {
				buf.WriteString(" \n")
			}
		}
		all, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		wanted := map[int]bool{0: true, 1: true, 17: true, 39: true}
		for _, n := range []int{1, 13, 1 << 20} {
			chunkBytes = n
			got := map[int]Op{}
			err := ScanAt(bytes.NewReader(buf.Bytes()), func(p int) bool { return wanted[p] }, func(p int, op *Op) error {
				got[p] = *op
				return nil
			})
			if err != nil || len(got) != len(wanted) {
				t.Fatalf("chunks of %d: %d ops, %v", n, len(got), err)
			}
			for p := range wanted {
				if !reflect.DeepEqual(got[p], all[p]) {
					t.Fatalf("chunks of %d: op at %d is %v, want %v", n, p, got[p], all[p])
				}
			}
			badSkipped := bytes.Replace(buf.Bytes(), []byte(`"index":25,`), []byte(`"index":"x",`), 1)
			if err := ScanAt(bytes.NewReader(badSkipped), func(p int) bool { return wanted[p] }, func(int, *Op) error { return nil }); err != nil {
				t.Fatalf("chunks of %d: a bad line nobody asked for: %v", n, err)
			}
			badWanted := bytes.Replace(buf.Bytes(), []byte(`"index":17,`), []byte(`"index":"x",`), 1)
			if err := ScanAt(bytes.NewReader(badWanted), func(p int) bool { return wanted[p] }, func(int, *Op) error { return nil }); err == nil {
				t.Fatalf("chunks of %d: a bad wanted line went unnoticed", n)
			}
		}
	}
}

// TestByteBudget: the read-ahead budget admits batches while they fit, a
// batch larger than the whole budget only when nothing else is held, and
// lets a waiting reader go when it is closed.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(10)
	if !b.take(6, 0) || !b.take(4, 0) {
		t.Fatal("batches that fit were refused")
	}
	got := make(chan bool)
	go func() { got <- b.take(25, 0) }() // larger than the budget: waits for all to be given back
	select {
	case <-got:
		t.Fatal("a batch larger than the budget was let in beside others")
	case <-time.After(20 * time.Millisecond):
	}
	b.give(6)
	select {
	case <-got:
		t.Fatal("a batch larger than the budget was let in while 4 bytes were held")
	case <-time.After(20 * time.Millisecond):
	}
	b.give(4)
	if ok := <-got; !ok {
		t.Fatal("the large batch was refused once nothing was held")
	}
	go func() { got <- b.take(1, 0) }()
	select {
	case <-got:
		t.Fatal("a batch was let in beside one larger than the budget")
	case <-time.After(20 * time.Millisecond):
	}
	b.close()
	if ok := <-got; ok {
		t.Fatal("a reader waiting on a closed budget was let in")
	}

	// A long line's reader holds its own chunks: past the budget, it
	// reads on once only they are held.
	b = newByteBudget(10)
	if !b.take(4, 0) || !b.take(6, 0) {
		t.Fatal("batches that fit were refused")
	}
	go func() { got <- b.take(2, 6) }()
	select {
	case <-got:
		t.Fatal("a long line read on past the budget while another batch was held")
	case <-time.After(20 * time.Millisecond):
	}
	b.give(4)
	if ok := <-got; !ok {
		t.Fatal("a long line could not read on once only its own chunks were held")
	}
}

// TestScanFreesLongChunk: once a long line is decoded, the chunks it was
// read in are not kept while the caller has the line, though the last of
// them also holds the start of the next line (which moves on to the next
// chunk).
func TestScanFreesLongChunk(t *testing.T) {
	defer func(c, a int) { chunkBytes, aheadBytes = c, a }(chunkBytes, aheadBytes)
	chunkBytes, aheadBytes = 1<<20, 1<<20
	const long = 12 << 20
	var buf bytes.Buffer
	for i := range 3 {
		if err := encodeLine(&buf, Op{Index: int64(i), Type: Fail, F: Send, Error: strings.Repeat("e", long)}); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	n := 0
	var held uint64
	before := heap() // the input is held throughout
	err := Scan(&buf, func(op *Op) error {
		if n++; n == 1 {
			held = heap() - before
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("%d ops, %v", n, err)
	}
	// What of the next line the last chunk held (under 1 MB) is held,
	// as a copy; the chunks are not. (The op itself is not held either:
	// this caller keeps nothing of it.) Chunks doubled to hold the line
	// held 3-4 MB here, and twice the line while it was decoded.
	if held > 3<<20 {
		t.Fatalf("%d MB held while the caller had a line of %d MB", held>>20, long>>20)
	}
}

// TestScanReadsStreams: a long read's records reach ScanReads' caller in
// chunks, hinted with their partition, and its op comes without them;
// put back, the ops are Read's, whatever form the line takes: records
// given twice (the last counts), in other letters, escaped, a
// transaction's (not streamed), a value given twice, or null at last.
func TestScanReadsStreams(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"history":"chaos","version":1}` + "\n")
	long := Op{Index: 1, Time: 5, Process: 2, Type: OK, F: FinalRead, Value: &Value{Topic: "t", Partition: 3, HW: Int64(12_000)}}
	for i := range 12_000 {
		long.Value.Records = append(long.Value.Records, Record{Offset: int64(i), Value: fmt.Sprintf("%d-%d", i%5, i)})
	}
	long.Value.Records[7].Value = "quote\" and \\ and \u00e9"
	if err := encodeLine(&buf, Op{Index: 0, Time: 1, Process: 2, Type: Invoke, F: FinalRead, Value: &Value{Topic: "t", Partition: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := encodeLine(&buf, long); err != nil {
		t.Fatal(err)
	}
	line := bytes.TrimSpace(bytes.SplitAfter(buf.Bytes(), []byte("\n"))[2])
	recs := line[bytes.Index(line, []byte(`"records":`)) : bytes.LastIndex(line, []byte("]"))+1]
	odd := []string{
		// records twice: the second counts
		strings.Replace(string(line), `"records":`, `"records":[{"offset":1,"value":"gone"}],"records":`, 1),
		// in other letters, and the partition after them (no hint)
		strings.TrimSuffix(strings.Replace(strings.Replace(string(line), `"records":`, `"RECORDS":`, 1), `"partition":3,`, ``, 1), `}}`) + `,"partition":3}}`,
		// a transaction's: read whole
		`{"index":2,"time":6,"process":3,"type":"ok","f":"txn","value":{"partition":0,"mops":[{"f":"poll","reads":[{"topic":"t","partition":0,"from":0,` + string(recs) + `}]}]}}`,
		// the value twice, the first without records: merged
		strings.Replace(string(line), `"value":{`, `"value":{"topic":"t"},"value":{`, 1),
		// records, then null: none
		strings.Replace(string(line), `,"hw":`, `,"records":null,"hw":`, 1),
		// null, then records
		strings.Replace(string(line), `"records":`, `"records":null,"records":`, 1),
		// the value null at last: no records
		string(line[:len(line)-1]) + `,"value":null}`,
	}
	for _, o := range odd {
		buf.WriteString(o + "\n")
	}
	defer func(n int) { chunkBytes = n }(chunkBytes)
	for _, n := range []int{1000, 1 << 20} {
		chunkBytes = n
		want, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := readStreamed(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if n == 1000 && len(st.whole) > 0 {
			t.Errorf("final reads %v came with their records", st.whole)
		}
		if !reflect.DeepEqual(noEmpty(got), noEmpty(want)) {
			t.Fatalf("chunks of %d bytes: streamed ops differ from Read's", n)
		}
		switch {
		case n == 1<<20 && st.chunks != 0:
			t.Fatalf("lines shorter than a chunk: %d chunks of records streamed", st.chunks)
		case n == 1000 && st.chunks < 5*12_000/streamChunk:
			t.Fatalf("%d chunks of records streamed, want at least %d", st.chunks, 5*12_000/streamChunk)
		case n == 1000 && (len(st.hints) == 0 || st.hints[0] != Key{Topic: "t", Partition: 3}):
			t.Fatalf("hints %v", st.hints)
		}
	}
	// Records given twice, the second with a record that lacks a field,
	// which encoding/json would fill in from the first: refused.
	chunkBytes = 1000
	partial := strings.Replace(string(line), `,"hw":`, `,"records":[{"offset":5}],"hw":`, 1)
	var whole bytes.Buffer
	whole.WriteString(`{"history":"chaos","version":1}` + "\n" + partial + "\n")
	if _, _, err := readStreamed(&whole); !errors.Is(err, ErrMergedRecords) {
		t.Fatalf("records given twice, the second partial: %v", err)
	}
}

// TestScanReadsFeedsLongLines: ScanReads decodes a long line as it is
// read: while the caller holds its first records, the reader has read
// what two chunks of records take and the budget, not the whole line. A blank long line is left
// out, a long last line that was cut short is a torn tail, and one that
// a read error cut ends the scan with that error.
func TestScanReadsFeedsLongLines(t *testing.T) {
	defer func(c, a int) { chunkBytes, aheadBytes = c, a }(chunkBytes, aheadBytes)
	chunkBytes, aheadBytes = 256, 2048
	var buf bytes.Buffer
	buf.WriteString(`{"history":"chaos","version":1}` + "\n")
	op := Op{Index: 0, Type: OK, F: FinalRead, Process: 1, Value: &Value{Topic: "t"}}
	const recs = 100_000
	for j := range recs {
		op.Value.Records = append(op.Value.Records, Record{Offset: int64(j), Value: "v"})
	}
	if err := encodeLine(&buf, op); err != nil {
		t.Fatal(err)
	}
	line := buf.Len()
	bound := 2*streamChunk*line/recs + peekBytes + 4*aheadBytes
	buf.WriteString(strings.Repeat(" ", 3000) + "\n")
	op.Index = 1
	if err := encodeLine(&buf, op); err != nil {
		t.Fatal(err)
	}
	whole := bytes.Clone(buf.Bytes())
	r := &countingReader{r: &buf}
	ops, n := 0, 0
	err := ScanReads(r, func(*Op) error { ops++; return nil }, func(_ Key, _ bool, rs []Record) error {
		if n += len(rs); n == len(rs) {
			time.Sleep(50 * time.Millisecond)
			if got := r.n.Load(); got > int64(bound) {
				t.Errorf("%d bytes read of a line of %d while the caller held its first records (at most %d)", got, line, bound)
			}
		}
		return nil
	})
	if err != nil || ops != 2 || n != 2*recs {
		t.Fatalf("%d ops, %d records, %v", ops, n, err)
	}
	// Cut short at the end: the ops before it, and a torn tail.
	ops = 0
	err = ScanReads(bytes.NewReader(whole[:len(whole)-5000]), func(*Op) error { ops++; return nil }, func(Key, bool, []Record) error { return nil })
	if !errors.Is(err, ErrTornTail) || ops != 1 {
		t.Fatalf("a torn long line: %d ops, %v", ops, err)
	}
	// Cut by a read error: that error.
	bad := errors.New("disk gone")
	ops = 0
	err = ScanReads(io.MultiReader(bytes.NewReader(whole[:len(whole)-5000]), iotest.ErrReader(bad)), func(*Op) error { ops++; return nil }, func(Key, bool, []Record) error { return nil })
	if !errors.Is(err, bad) || ops != 1 {
		t.Fatalf("a long line cut by a read error: %d ops, %v", ops, err)
	}
}
