package history

import (
	"bytes"
	"strings"
	"testing"
)

// TestTxnLines: a transaction's invoke and completion, and a poll with
// its isolation level, read and write back as docs/history.md shows
// them; a queue's operations carry none of their fields.
func TestTxnLines(t *testing.T) {
	lines := `{"index":40,"time":9100000,"process":3,"type":"invoke","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"chaos","partition":1,"value":"3-17"},{"f":"poll"},{"f":"send","topic":"chaos","partition":1,"value":"3-18"}],"isolation":"read_committed"}}
{"index":45,"time":12400000,"process":3,"type":"ok","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"chaos","partition":1,"value":"3-17","offset":212},{"f":"poll","reads":[{"topic":"chaos","partition":0,"from":96,"records":[{"offset":96,"value":"1-40"},{"offset":98,"value":"2-33"}]}]},{"f":"send","topic":"chaos","partition":1,"value":"3-18","offset":213}],"commit_time":12100000,"isolation":"read_committed"}}
{"index":46,"time":12500000,"process":4,"type":"invoke","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"chaos","partition":2,"value":"4-9"}],"abort":true,"isolation":"read_committed"}}
{"index":49,"time":13900000,"process":4,"type":"fail","f":"txn","value":{"partition":0,"mops":[{"f":"send","topic":"chaos","partition":2,"value":"4-9","offset":77}],"abort":true,"isolation":"read_committed"},"error":"aborted"}
{"index":50,"time":14000000,"process":7,"type":"ok","f":"poll","value":{"topic":"chaos","partition":1,"from":210,"records":[{"offset":210,"value":"5-2"}],"hw":215,"isolation":"read_committed"}}
{"index":51,"time":14100000,"process":0,"type":"ok","f":"send","value":{"topic":"chaos","partition":0,"value":"0-1","offset":0}}
`
	ops, err := Read(strings.NewReader(lines))
	if err != nil || len(ops) != 6 {
		t.Fatalf("%d ops, %v", len(ops), err)
	}
	inv, ok := ops[0].Value.Transaction(), ops[1].Value.Transaction()
	if inv == nil || len(inv.Mops) != 3 || inv.Mops[0].F != Send || inv.Mops[0].Key() != (Key{"chaos", 1}) || inv.Mops[0].Offset != nil ||
		inv.Mops[1].F != Poll || inv.Mops[1].MopSend != nil || inv.Abort || !ops[0].Value.ReadCommitted() {
		t.Fatalf("invoke %+v", inv)
	}
	reads := ok.Mops[1].Reads
	if *ok.Mops[0].Offset != 212 || *ok.Mops[2].Offset != 213 || len(reads) != 1 || reads[0].Key() != (Key{"chaos", 0}) ||
		*reads[0].From != 96 || len(reads[0].Records) != 2 || reads[0].Records[1] != (Record{98, "2-33"}) || *ok.CommitTime != 12100000 {
		t.Fatalf("completion %+v", ok)
	}
	if a := ops[3].Value.Transaction(); !a.Abort || ops[3].Error != TxnAborted || *a.Mops[0].Offset != 77 {
		t.Fatalf("aborted %+v", a)
	}
	if p := ops[4].Value; !p.ReadCommitted() || p.Transaction().Mops != nil || len(p.Records) != 1 {
		t.Fatalf("poll %+v", p)
	}
	if s := ops[5].Value; s.Transaction() != nil || s.ReadCommitted() {
		t.Fatalf("send %+v", s)
	}
	if got := ops[1].String(); got != "#45 0.012s p3 ok txn 3 mops" {
		t.Errorf("String %q", got)
	}
	var buf bytes.Buffer
	for _, op := range ops {
		if err := encodeLine(&buf, op); err != nil {
			t.Fatal(err)
		}
	}
	if buf.String() != lines {
		t.Fatalf("re-encoded:\n%s\nwant:\n%s", buf.String(), lines)
	}
	// What the workload builds is what the invoke above reads as.
	built := Op{Index: 40, Time: 9100000, Process: 3, Type: Invoke, F: Txn, Value: &Value{TxnInfo: &TxnInfo{
		Mops:      []Mop{SendMop(Key{"chaos", 1}, "3-17"), PollMop(), SendMop(Key{"chaos", 1}, "3-18")},
		Isolation: ReadCommitted}}}
	buf.Reset()
	if err := encodeLine(&buf, built); err != nil || buf.String() != strings.SplitAfter(lines, "\n")[0] {
		t.Fatalf("built %q, %v", buf.String(), err)
	}
}
