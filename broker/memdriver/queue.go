package memdriver

// msgHeap is the event queue: a binary min-heap ordered by (at, seq), so
// that messages due at the same time come out in the order they were
// queued. (at, seq) is a total order, so the heap pops exactly the
// sequence a sorted list would; it only costs O(log n) per message
// instead of a shift of the whole queue, which matters once a simulated
// test keeps thousands of messages and timeouts in flight.
type msgHeap []*msg

func (h msgHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *msgHeap) push(m *msg) {
	*h = append(*h, m)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

// pop removes and returns the first message; the heap must not be empty.
func (h *msgHeap) pop() *msg {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = nil
	q = q[:last]
	for i := 0; ; {
		l, r, least := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, least) {
			least = l
		}
		if r < len(q) && q.less(r, least) {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	*h = q
	return top
}
