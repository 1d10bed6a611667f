package checker

import "hash/maphash"

// valueIDs finds a value's id (its index in History.vals) by its string:
// an open-addressing table of ids, at most half full, whose strings are
// the values' own. A history writes a new value with nearly every send,
// and a map would hold each string's header a second time, with its
// overhead: about 45 bytes a value, where this takes 8 to 16.
type valueIDs struct {
	seed  maphash.Seed
	slots []int32 // id+1; 0 is empty
	n     int
}

// slot is where s is in the table, or the empty slot where it belongs.
func (t *valueIDs) slot(s string, vals []valueInfo) int {
	if t.slots == nil {
		t.seed = maphash.MakeSeed()
		t.slots = make([]int32, 1024)
	}
	mask := uint64(len(t.slots) - 1)
	for i := maphash.String(t.seed, s) & mask; ; i = (i + 1) & mask {
		if id := t.slots[i]; id == 0 || vals[id-1].str == s {
			return int(i)
		}
	}
}

// put records id, whose string is not in the table, at slot i (from
// slot), growing the table to keep it at most half full.
func (t *valueIDs) put(i int, id int32, vals []valueInfo) {
	t.slots[i] = id + 1
	t.n++
	if 2*t.n <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]int32, 2*len(old))
	mask := uint64(len(t.slots) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		j := maphash.String(t.seed, vals[v-1].str) & mask
		for t.slots[j] != 0 {
			j = (j + 1) & mask
		}
		t.slots[j] = v
	}
}
