package intern

import (
	"slices"
	"testing"
)

func TestLists(t *testing.T) {
	var ls Lists
	in := [][]int32{{1, 2, 3}, {2, 3}, nil, {1, 2, 3}, {}, {3, 2}, {-1}, {1 << 30, 2}}
	ids := make([]uint32, len(in))
	for i, l := range in {
		ids[i] = ls.ID(l)
	}
	for i, l := range in {
		if got := ls.Of(ids[i]); !slices.Equal(got, l) {
			t.Errorf("%v read back as %v", l, got)
		}
		for j := range in {
			if same := slices.Equal(in[i], in[j]); same != (ids[i] == ids[j]) {
				t.Errorf("%v and %v: ids %d and %d", in[i], in[j], ids[i], ids[j])
			}
		}
	}
	// A list changed by its caller after it was given keeps its id's.
	l := []int32{7, 8}
	id := ls.ID(l)
	l[0] = 9
	if got := ls.Of(id); !slices.Equal(got, []int32{7, 8}) {
		t.Errorf("the held list changed with its caller's: %v", got)
	}
}
