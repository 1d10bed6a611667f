package intern

import (
	"encoding/binary"
	"slices"
)

// Lists holds lists of int32 once each. The zero Lists is empty.
type Lists struct {
	ids map[string]uint32
	all [][]int32
	key []byte
}

// ID is the id of the list l, adding a copy of it if it is new. Lists
// with the same elements in the same order have the same id (nil and
// empty too).
func (ls *Lists) ID(l []int32) uint32 {
	ls.key = ls.key[:0]
	for _, v := range l {
		ls.key = binary.LittleEndian.AppendUint32(ls.key, uint32(v))
	}
	if id, ok := ls.ids[string(ls.key)]; ok {
		return id
	}
	if ls.ids == nil {
		ls.ids = map[string]uint32{}
	}
	id := uint32(len(ls.all))
	ls.ids[string(ls.key)] = id
	ls.all = append(ls.all, slices.Clone(l))
	return id
}

// Of is the list with id; the caller must not change it.
func (ls *Lists) Of(id uint32) []int32 { return ls.all[id] }
