package history

import (
	"bytes"
	"testing"
)

// FuzzRead: no input makes Read panic, what it reads survives a round
// trip through the writer's encoding (the ops Read returns are ones Read
// accepts again), and its decoder reads each line as encoding/json does.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"history":"chaos","version":1}` + "\n" +
		`{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"a"}}` + "\n" +
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"a","offset":0}}` + "\n"))
	f.Add([]byte(`{"index":0,"time":1,"process":1,"type":"ok","f":"poll","value":{"topic":"t","partition":0,"from":-9223372036854775808,"records":[{"offset":-9223372036854775807,"value":"x"}],"hw":9223372036854775807}}`))
	f.Add([]byte(`{"index":0,"time":1,"process":3,"type":"ok","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"t","partition":1,"value":"a","offset":2},{"f":"poll","reads":[{"topic":"t","partition":0,"from":0,"records":[{"offset":0,"value":"b"}]}]}],"abort":true,"commit_time":1,"isolation":"read_committed"}}`))
	f.Add([]byte(`{"history":"chaos","version":1}` + "\n" + `{"index":0,"ti`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				agree(t, line)
			}
		}
		ops, err := Read(bytes.NewReader(data))
		_ = err // any error is fine; a panic is not
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
