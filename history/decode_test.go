package history

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// stdParse is parseLine with encoding/json: the reference the fast
// decoder is held to.
func stdParse(b []byte) (*Op, error) {
	var op Op
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return nil, err
	}
	return &op, nil
}

// agree fails t unless parseLine and encoding/json accept the same line
// and decode it into the same op.
func agree(t *testing.T, line []byte) {
	t.Helper()
	want, werr := stdParse(line)
	got, gerr := parseLine(line, false)
	if werr == nil && want.Type != Invoke && want.Type != OK && want.Type != Fail && want.Type != Info {
		werr = errBadType // parseLine refuses a type it does not know
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s\nencoding/json: %v\nparseLine: %v", line, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%s\nencoding/json: %#v\nparseLine: %#v", line, want, got)
	}
	// A line longer than a chunk is decoded from the chunks it was read
	// in: cut anywhere, with its newline, it means the same.
	for _, n := range []int{1, 7, len(line)/2 + 1} {
		var segs [][]byte
		rest := append(bytes.Clone(line), '\n')
		for len(rest) > 0 {
			k := min(n, len(rest))
			segs, rest = append(segs, rest[:k:k]), rest[k:]
		}
		got, gerr := parseLong(segs, false)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s\nencoding/json: %v\nparseLong (chunks of %d): %v", line, werr, n, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%s\nencoding/json: %#v\nparseLong (chunks of %d): %#v", line, want, n, got)
		}
	}
}

var errBadType = &json.UnsupportedValueError{}

// TestDecoderAgrees holds the history reader's decoder to encoding/json's
// on lines with every field of every kind of operation, and on lines it
// must refuse.
func TestDecoderAgrees(t *testing.T) {
	full := Op{Index: 7, Time: -3, Process: 2, Type: OK, F: "x", Error: "E \u00e9\t\"q\"", Value: &Value{
		Topic: "t", Partition: -1, Value: "v\\n", Offset: Int64(-1), From: Int64(1 << 62), HW: Int64(0), Broker: Int32(3),
		Records:     []Record{{Offset: 1, Value: "a"}, {Offset: 2, Value: ""}},
		Unconverged: []int32{1, 2}, Producer: Int32(0),
		Sample: &Sample{Leader: Int32(1), Epoch: Int32(2), ISR: []int32{1}, Replicas: []int32{1, 2}},
		FaultInfo: &FaultInfo{Fault: "kill", Targets: []string{"broker-1"}, KilledBrokers: []int32{1}, DamagedBrokers: []int32{2},
			Commands: []Command{{Node: "n", Action: "kill", Cmd: "c", Exit: -1, Output: "o", Error: "e", Millis: 5}}},
		Attempts:  &Attempts{Retries: []string{"A", "B"}},
		CrashInfo: &CrashInfo{Node: "broker-2", Exit: "exit status 2", Panic: "p", Stack: "s", Log: "l"},
		GroupInfo: &GroupInfo{Group: "g", Generation: 3, Member: "m", Assigned: []int32{0}, Committed: []PartitionOffset{{Partition: 0, Offset: -1}}},
		TxnInfo: &TxnInfo{Abort: true, CommitTime: Int64(9), Isolation: ReadCommitted, Mops: []Mop{
			{F: Send, MopSend: &MopSend{Topic: "t", Partition: 1, Value: "a", Offset: Int64(2)}},
			{F: Poll, Reads: []PartitionRecords{{Topic: "t", Partition: 0, From: Int64(0), Records: []Record{{Offset: 0, Value: "b"}}}}},
		}},
	}}
	var buf bytes.Buffer
	if err := encodeLine(&buf, full); err != nil {
		t.Fatal(err)
	}
	lines := []string{strings.TrimSpace(buf.String())}
	// Each embedded part alone, and an op without a value.
	parts := []func(v *Value){
		func(v *Value) { v.Sample = full.Value.Sample },
		func(v *Value) { v.FaultInfo = full.Value.FaultInfo },
		func(v *Value) { v.Attempts = full.Value.Attempts },
		func(v *Value) { v.CrashInfo = full.Value.CrashInfo },
		func(v *Value) { v.GroupInfo = full.Value.GroupInfo },
		func(v *Value) { v.TxnInfo = full.Value.TxnInfo },
	}
	for _, set := range parts {
		v := &Value{Topic: "t", Partition: 1}
		set(v)
		buf.Reset()
		if err := encodeLine(&buf, Op{Index: 1, Type: Info, F: "f", Value: v}); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(buf.String()))
	}
	lines = append(lines,
		`{"index":1,"time":2,"process":0,"type":"invoke","f":"send"}`,
		`{"index":1,"type":"ok","f":"poll","value":null}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":null,"isr":null}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"leader":null,"fault":"","mops":[]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"partition":1,"partition":2}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"value":"\ud83d\ude00 \u0000"}}`,
		// Refused: unknown fields (at the top, in the value, in an
		// embedded part, in a micro-operation), wrong types, bad JSON.
		`{"index":1,"type":"ok","f":"poll","nope":1}`,
		`{"index":1,"type":"ok","f":"poll","value":{"nope":1}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"leader":1,"nope":[]}}`,
		`{"index":1,"type":"ok","f":"txn","value":{"mops":[{"f":"send","nope":1}]}}`,
		`{"index":"1","type":"ok","f":"poll"}`,
		`{"index":1,"type":"ok","f":"poll","value":{"partition":"0"}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[{"offset":1.5}]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"partition":2147483648}}`,
		`{"index":1,"type":"bad","f":"poll"}`,
		`{"index":1,"type":"ok","f":"poll"`,
		`[1,2]`,
		`nul`,
	)
	for _, l := range lines {
		agree(t, []byte(l))
	}
}

// TestFastLine: the lines chaos writes for the operations that make up
// nearly all of a history are read by parseFast, to the op encoding/json
// reads; lines a step away from that shape are left to the general
// decoders, which agree with encoding/json on them too.
func TestFastLine(t *testing.T) {
	ops := []Op{
		{Index: 0, Time: 11000000, Process: 0, Type: Invoke, F: Send, Value: &Value{Topic: "chaos", Partition: 2, Value: "0-1"}},
		{Index: 1, Time: 12000000, Process: 0, Type: OK, F: Send, Value: &Value{Topic: "chaos", Partition: 2, Value: "0-1", Offset: Int64(0)}},
		{Index: 2, Time: 13000000, Process: 5, Type: OK, F: Poll, Value: &Value{Topic: "chaos", Partition: 0, From: Int64(3), HW: Int64(9),
			Records: []Record{{Offset: 3, Value: "a"}, {Offset: 4, Value: ""}}}},
		{Index: 3, Time: -1, Process: -2, Type: OK, F: Poll, Value: &Value{Partition: 0, From: Int64(0)}},
		{Index: math.MaxInt64, Time: math.MinInt64, Process: math.MinInt, Type: Fail, F: "poll", Error: "UNKNOWN_TOPIC_OR_PARTITION",
			Value: &Value{Topic: "t", Partition: math.MinInt32, From: Int64(math.MaxInt64)}},
		{Index: 5, Type: Info, F: "something-else", Value: &Value{Partition: math.MaxInt32, Broker: Int32(3), Producer: Int32(-7), Offset: Int64(math.MinInt64)}},
		{Index: 6, Type: OK, F: Converge},
		{Index: 7, Type: "bad", F: Send},
	}
	for _, op := range ops {
		var buf bytes.Buffer
		if err := encodeLine(&buf, op); err != nil {
			t.Fatal(err)
		}
		line := bytes.TrimSpace(buf.Bytes())
		got, ok := parseFast(line)
		if !ok {
			t.Fatalf("%s: not read by parseFast", line)
		}
		if !reflect.DeepEqual(*got, op) {
			t.Fatalf("%s: parseFast read %#v", line, got)
		}
		agree(t, line)
	}
	for _, line := range []string{
		` {"index":1,"type":"ok","f":"poll"}`,
		`{"index": 1,"type":"ok","f":"poll"}`,
		`{"index":1,"type":"ok","f":"poll"} `,
		`{"index":1,"type":"ok","f":"poll"}x`,
		`{"index":1,"type":"ok","f":"poll",}`,
		`{"index":01,"type":"ok","f":"poll"}`,
		`{"index":1.0,"type":"ok","f":"poll"}`,
		`{"index":1e3,"type":"ok","f":"poll"}`,
		`{"index":-,"type":"ok","f":"poll"}`,
		`{"index":9223372036854775808,"type":"ok","f":"poll"}`,
		`{"index":-9223372036854775809,"type":"ok","f":"poll"}`,
		`{"index":12345678901234567890123,"type":"ok","f":"poll"}`,
		`{"Index":1,"type":"ok","f":"poll"}`,
		`{"index":1,"index":2,"type":"ok","f":"poll"}`,
		`{"index":1,"type":"ok","f":"p\u006fll"}`,
		`{"index":1,"type":"ok","f":"poll","error":"\u00e9"}`,
		"{\"index\":1,\"type\":\"ok\",\"f\":\"poll\",\"error\":\"\xc3\xa9\"}",
		"{\"index\":1,\"type\":\"ok\",\"f\":\"poll\",\"error\":\"\xff\"}",
		"{\"index\":1,\"type\":\"ok\",\"f\":\"poll\",\"error\":\"a\tb\"}",
		`{"index":1,"type":"ok","f":"poll","value":null}`,
		`{"index":1,"type":"ok","f":null}`,
		`{"index":1,"type":"ok","f":"poll","value":{"partition":2147483648}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"partition":1,"partition":2}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"leader":1}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[{"offset":1,"offset":2}]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[{"offset":1,"value":"a","x":1}]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[{"offset":1},]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[1]}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":{}}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"topic":true}}`,
		`{"index":1,"type":"ok","f":"poll","value":{}`,
		`{"index":1,"type":"ok","f":"poll"`,
		`{"index":1,"type":"ok","f":"poll`,
		`{"index":1,"type":"ok","f":`,
		`{"index"`,
		`{`,
		`[]`,
	} {
		if op, ok := parseFast([]byte(line)); ok {
			t.Fatalf("%s: read by parseFast as %#v", line, op)
		}
		agree(t, []byte(line))
	}
	// Some lines a step away still read, as encoding/json reads them.
	for _, line := range []string{
		`{}`,
		`{"index":-0,"type":"ok","f":"poll","value":{}}`,
		`{"index":1,"type":"ok","f":"poll","value":{"records":[]}}`,
		`{"f":"poll","type":"ok","index":1,"value":{"records":[{"value":"b","offset":-0},{}],"hw":2}}`,
	} {
		if _, ok := parseFast([]byte(line)); !ok {
			t.Fatalf("%s: not read by parseFast", line)
		}
		agree(t, []byte(line))
	}
}
