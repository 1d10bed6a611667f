package history

// Index is a whole history read once, by the rules every reader shares
// (Pairer, Windows): the checker reads a history the same way as it
// streams past; the recovery table and the report read an Index.
type Index struct {
	Ops []Op
	// Pair is the position of each operation's invoke or completion, -1
	// where it has none.
	Pair []int32
	// Windows are the fault windows, in the order they opened; Heals the
	// nemesis's heals.
	Windows []Window
	Heals   []Span
	// Problems says where the history broke the pairing rule, at most
	// MaxProblems of them.
	Problems []string
}

// MaxProblems bounds the problems a reader lists: a history broken
// throughout says so in its first hundred.
const MaxProblems = 100

// NewIndex reads ops once.
func NewIndex(ops []Op) *Index {
	ix := &Index{Ops: ops, Pair: make([]int32, len(ops))}
	var p Pairer
	var w Windows
	for i := range ops {
		op, pos := &ops[i], int32(i)
		ix.Pair[i] = -1
		st := p.Add(op, pos)
		if st.Problem != "" && len(ix.Problems) < MaxProblems {
			ix.Problems = append(ix.Problems, st.Problem)
		}
		if st.Invoke >= 0 {
			ix.Pair[i], ix.Pair[st.Invoke] = st.Invoke, pos
		}
		w.Add(op, pos, st)
	}
	ix.Windows, ix.Heals = w.Windows(), w.Heals()
	return ix
}

// Time is the time of the operation at pos, -1 for a position of none.
func (ix *Index) Time(pos int32) int64 {
	if pos < 0 {
		return -1
	}
	return ix.Ops[pos].Time
}
