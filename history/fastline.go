package history

import "math"

// parseFast decodes a line written in the shape chaos's own writer gives
// the operations that make up nearly all of a history (sends, polls,
// end-offsets, reads: no sample, fault or other embedded part), and says
// false for any other line, which parseLine's general decoders then read.
// Decoding was most of what judging a history took, and most of that was
// the general decoder finding its way by reflection through an Op for
// each field.
//
// It reads only what it cannot read wrongly: exact lower-case names,
// each at most once; integers as JSON writes them, in range; strings of
// printable ASCII without escapes; no space, null, float or boolean. Any
// other byte is a false, never an error: errors, and what a line unlike
// chaos's means, are the general decoders' to say. TestDecoderAgrees and
// FuzzRead hold it to encoding/json as they hold them.
func parseFast(b []byte) (*Op, bool) {
	p := fastParser{b: b}
	var op Op
	var v Value
	var off, from, hw int64
	var broker, producer int32
	var seen, vseen uint16
	hasValue := false
	ok := p.object(func(key []byte) bool {
		var bit uint16
		ok := false
		switch string(key) {
		case "index":
			bit, ok = 1<<0, p.int64(&op.Index)
		case "time":
			bit, ok = 1<<1, p.int64(&op.Time)
		case "process":
			var n int64
			n, ok = p.int(math.MinInt, math.MaxInt)
			bit, op.Process = 1<<2, int(n)
		case "type":
			var s []byte
			if s, ok = p.str(); ok {
				bit, op.Type = 1<<3, internType(s)
			}
		case "f":
			var s []byte
			if s, ok = p.str(); ok {
				bit, op.F = 1<<4, internF(s)
			}
		case "error":
			bit, ok = 1<<5, p.string(&op.Error)
		case "value":
			bit, hasValue = 1<<6, true
			ok = p.object(func(key []byte) bool {
				var vbit uint16
				ok := false
				switch string(key) {
				case "topic":
					vbit, ok = 1<<0, p.string(&v.Topic)
				case "partition":
					vbit, ok = 1<<1, p.int32(&v.Partition)
				case "value":
					vbit, ok = 1<<2, p.string(&v.Value)
				case "offset":
					vbit, ok = 1<<3, p.int64(&off)
				case "from":
					vbit, ok = 1<<4, p.int64(&from)
				case "hw":
					vbit, ok = 1<<5, p.int64(&hw)
				case "broker":
					vbit, ok = 1<<6, p.int32(&broker)
				case "producer":
					vbit, ok = 1<<7, p.int32(&producer)
				case "records":
					vbit = 1 << 8
					v.Records, ok = p.records()
				}
				if !ok || vseen&vbit != 0 {
					return false
				}
				vseen |= vbit
				return true
			})
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok || p.i != len(b) {
		return nil, false
	}
	if !hasValue {
		o := new(Op)
		*o = op
		return o, true
	}
	// One allocation for the op, its value and its optional numbers,
	// where decoding by reflection made one for each.
	box := &struct {
		op               Op
		v                Value
		off, from, hw    int64
		broker, producer int32
	}{op: op, v: v, off: off, from: from, hw: hw, broker: broker, producer: producer}
	box.op.Value = &box.v
	if vseen&(1<<3) != 0 {
		box.v.Offset = &box.off
	}
	if vseen&(1<<4) != 0 {
		box.v.From = &box.from
	}
	if vseen&(1<<5) != 0 {
		box.v.HW = &box.hw
	}
	if vseen&(1<<6) != 0 {
		box.v.Broker = &box.broker
	}
	if vseen&(1<<7) != 0 {
		box.v.Producer = &box.producer
	}
	return &box.op, true
}

// fastParser is parseFast's place in its line.
type fastParser struct {
	b []byte
	i int
}

// object reads an object, giving member each key (the parser then at its
// value), which reads the value and says whether to go on.
func (p *fastParser) object(member func(key []byte) bool) bool {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	p.i++
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		key, ok := p.str()
		if !ok || p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		if !member(key) {
			return false
		}
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string of printable ASCII without escapes, and gives its
// bytes (in the line: copy what is kept).
func (p *fastParser) str() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// string reads a string into dst, a copy.
func (p *fastParser) string(dst *string) bool {
	s, ok := p.str()
	if ok {
		*dst = string(s)
	}
	return ok
}

// int64 reads an integer into dst.
func (p *fastParser) int64(dst *int64) bool {
	n, ok := p.int(math.MinInt64, math.MaxInt64)
	*dst = n
	return ok
}

// int32 reads an integer of int32's range into dst.
func (p *fastParser) int32(dst *int32) bool {
	n, ok := p.int(math.MinInt32, math.MaxInt32)
	*dst = int32(n)
	return ok
}

// int reads an integer as JSON writes one (no leading zero, fraction or
// exponent) within [lo, hi]. More than 19 digits is out of range: the
// digits past them, wrapped, are never used.
func (p *fastParser) int(lo, hi int64) (int64, bool) {
	j := p.i
	neg := j < len(p.b) && p.b[j] == '-'
	if neg {
		j++
	}
	start := j
	var u uint64
	for ; j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9'; j++ {
		u = u*10 + uint64(p.b[j]-'0')
	}
	digits := j - start
	if digits == 0 || digits > 19 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') {
		return 0, false
	}
	var n int64
	switch {
	case !neg && u <= math.MaxInt64:
		n = int64(u)
	case neg && u <= 1<<63:
		n = int64(-u) // -(1<<63) wraps to itself, MinInt64
	default:
		return 0, false
	}
	if n < lo || n > hi {
		return 0, false
	}
	p.i = j
	return n, true
}

// records reads an array of records, each an object of offset and value.
func (p *fastParser) records() ([]Record, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return nil, false
	}
	p.i++
	rs := []Record{}
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return rs, true
	}
	for {
		var r Record
		var seen uint8
		ok := p.object(func(key []byte) bool {
			var bit uint8
			ok := false
			switch string(key) {
			case "offset":
				bit, ok = 1, p.int64(&r.Offset)
			case "value":
				bit, ok = 2, p.string(&r.Value)
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			return true
		})
		if !ok || p.i >= len(p.b) {
			return nil, false
		}
		rs = append(rs, r)
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return rs, true
		default:
			return nil, false
		}
	}
}

// internType is s as one of the op types, without a copy for those.
func internType(s []byte) Type {
	switch string(s) {
	case string(Invoke):
		return Invoke
	case string(OK):
		return OK
	case string(Fail):
		return Fail
	case string(Info):
		return Info
	}
	return Type(string(s))
}

// internF is s as one of the functions chaos writes most, without a copy
// for those.
func internF(s []byte) string {
	switch string(s) {
	case Send:
		return Send
	case Poll:
		return Poll
	case EndOffset:
		return EndOffset
	case FinalRead:
		return FinalRead
	case ReplicaRead:
		return ReplicaRead
	case Monitor:
		return Monitor
	}
	return string(s)
}
