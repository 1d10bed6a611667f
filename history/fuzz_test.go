package history

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzRead: no input makes Read panic, what it reads survives a round
// trip through the writer's encoding (the ops Read returns are ones Read
// accepts again), its decoder reads each line as encoding/json does, and
// a line read as the chunks it came in means what it means read whole.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"history":"chaos","version":1}` + "\n" +
		`{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"a"}}` + "\n" +
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"a","offset":0}}` + "\n"))
	f.Add([]byte(`{"index":0,"time":1,"process":1,"type":"ok","f":"poll","value":{"topic":"t","partition":0,"from":-9223372036854775808,"records":[{"offset":-9223372036854775807,"value":"x"}],"hw":9223372036854775807}}`))
	f.Add([]byte(`{"index":0,"time":1,"process":3,"type":"ok","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"t","partition":1,"value":"a","offset":2},{"f":"poll","reads":[{"topic":"t","partition":0,"from":0,"records":[{"offset":0,"value":"b"}]}]}],"abort":true,"commit_time":1,"isolation":"read_committed"}}`))
	f.Add([]byte(`{"history":"chaos","version":1}` + "\n" + `{"index":0,"ti`))
	// A read's records after a header: streamed, in chunks of 7 bytes.
	f.Add([]byte(`{"history":"chaos","version":1}` + "\n" +
		`{"index":0,"time":1,"process":1,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"records":[{"offset":0,"value":"x"},{"offset":1,"value":"y\u00e9"}],"records":[{"offset":2,"value":"z"}],"hw":3}}` + "\n" +
		`{"index":1,"time":2,"process":3,"type":"ok","f":"txn","value":{"partition":0,"mops":[{"f":"poll","reads":[{"topic":"t","partition":0,"from":0,"records":[{"offset":0,"value":"b"}]}]}]}}`))
	f.Add([]byte("\n\n{}\n"))
	// Space that is not JSON's, a rune of it cut by a chunk's end: before
	// a line, and a line of it alone.
	f.Add([]byte("\u00a0\f\u0085" + `{"index":0,"time":1,"process":0,"type":"invoke","f":"send"}` + "\n\u00a0\u00a0\u00a0\n\v" + `{"index":1,"time":2,"process":0,"type":"info","f":"send"}` + "\u00a0\n\u00a0\u00a0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				agree(t, line)
			}
		}
		ops, err := Read(bytes.NewReader(data))
		// any error is fine; a panic is not
		// Read in chunks of a few bytes, every line is a long one, read
		// as its chunks and decoded from them: it means the same (the
		// text of an error aside).
		func() {
			defer func(c, a int) { chunkBytes, aheadBytes = c, a }(chunkBytes, aheadBytes)
			chunkBytes, aheadBytes = 7, 64
			small, serr := Read(bytes.NewReader(data))
			if (err == nil) != (serr == nil) || errors.Is(err, ErrTornTail) != errors.Is(serr, ErrTornTail) || !reflect.DeepEqual(ops, small) {
				t.Fatalf("read whole: %d ops, %v; in chunks of 7 bytes: %d ops, %v", len(ops), err, len(small), serr)
			}
			// ScanAt, with the records of the long lines it gives
			// streamed (ScanAtReads), gives the same ops at the same
			// positions: a blank long line takes none.
			every := func(p int) bool { return p%2 == 0 }
			want, werr := scanAtAll(bytes.NewReader(data), every, false)
			got, gerr := scanAtAll(bytes.NewReader(data), every, true)
			if errors.Is(gerr, ErrMergedRecords) {
				// A line a stream cannot mean the same by: refused.
				return
			}
			if (werr == nil) != (gerr == nil) || errors.Is(werr, ErrTornTail) != errors.Is(gerr, ErrTornTail) || !reflect.DeepEqual(want, got) {
				t.Fatalf("ScanAt: %v, %v; ScanAtReads: %v, %v", want, werr, got, gerr)
			}
			// And with the long lines' records streamed (ScanReads).
			streamed, _, serr := readStreamed(bytes.NewReader(data))
			if errors.Is(serr, ErrMergedRecords) {
				return
			}
			if (err == nil) != (serr == nil) || errors.Is(err, ErrTornTail) != errors.Is(serr, ErrTornTail) || !reflect.DeepEqual(noEmpty(ops), noEmpty(streamed)) {
				t.Fatalf("read whole: %d ops, %v; streamed in chunks of 7 bytes: %d ops, %v", len(ops), err, len(streamed), serr)
			}
		}()
		var buf bytes.Buffer
		for _, op := range ops {
			if err := encodeLine(&buf, op); err != nil {
				t.Fatalf("op %+v read but not encodable: %v", op, err)
			}
		}
		again, err := Read(&buf)
		if err != nil || len(again) != len(ops) {
			t.Fatalf("re-reading %d ops: %d, %v", len(ops), len(again), err)
		}
	})
}

// readStreamed reads a history with ScanReads as a caller of it sees the
// ops: each op's streamed records put back before its own (those given
// since the last nil). It also says what was streamed.
func readStreamed(r io.Reader) ([]Op, streamedStats, error) {
	var ops []Op
	var st streamedStats
	var pending []Record
	err := ScanReads(r, func(op *Op) error {
		if op.Value != nil && len(op.Value.Records) > 0 && op.F == FinalRead {
			st.whole = append(st.whole, op.Index)
		}
		if op.Value != nil && pending != nil {
			op.Value.Records = append(pending, op.Value.Records...)
		}
		pending = nil
		ops = append(ops, *op)
		return nil
	}, func(k Key, hinted bool, rs []Record) error {
		if rs == nil {
			pending = pending[:0]
			return nil
		}
		if st.chunks++; hinted {
			st.hints = append(st.hints, k)
		}
		pending = append(pending, rs...)
		return nil
	})
	return ops, st, err
}

// streamedStats are what ScanReads streamed: chunks of records, the
// partitions they were hinted to be of, and the final reads that came
// with records of their own.
type streamedStats struct {
	chunks int
	hints  []Key
	whole  []int64
}

// noEmpty is ops with an empty list of records made nil (a streamed line
// has none left, where read whole it has an empty one).
func noEmpty(ops []Op) []Op {
	out := make([]Op, len(ops))
	for i, op := range ops {
		if op.Value != nil && op.Value.Records != nil && len(op.Value.Records) == 0 {
			v := *op.Value
			v.Records = nil
			op.Value = &v
		}
		out[i] = op
	}
	return out
}

// scanAtAll is what ScanAt gives (ScanAtReads if streamed, the records
// put back), by position, with an empty list of records made nil.
func scanAtAll(r io.Reader, at func(int) bool, streamed bool) (map[int]Op, error) {
	got := map[int]Op{}
	var pending []Record
	fn := func(p int, op *Op) error {
		if op.Value != nil && pending != nil {
			op.Value.Records = append(pending, op.Value.Records...)
		}
		pending = nil
		got[p] = noEmpty([]Op{*op})[0]
		return nil
	}
	if !streamed {
		return got, ScanAt(r, at, fn)
	}
	return got, ScanAtReads(r, at, fn, func(_ Key, _ bool, rs []Record) error {
		if rs == nil {
			pending = pending[:0]
		}
		pending = append(pending, rs...)
		return nil
	})
}
