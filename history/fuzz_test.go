package history

import (
	"bytes"
	"errors"
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
