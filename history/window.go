package history

// Span is one operation as a history holds it: the positions of its
// invoke and its completion, each -1 where the history has none (an
// invoke it ended before completing, a completion recorded alone).
type Span struct{ Invoke, Done int32 }

// None is a Span of no operation.
var None = Span{-1, -1}

// At is the position the operation is first seen at: its invoke, or its
// completion if it stands alone; -1 for None.
func (s Span) At() int32 {
	if s.Invoke >= 0 {
		return s.Invoke
	}
	return s.Done
}

// Window is one fault window as the nemesis recorded it: the operation
// that started it, the one that stopped it, and what the start's
// completion said.
type Window struct {
	// Fault is what the window injects: the start's value names it
	// (FaultInfo.Fault), else its function (start-KIND); a bare start, as
	// other tools write, is "fault".
	Fault string
	// Start is the operation that opened the window. Stop is the first
	// stop of the same fault after it (None if none came); Heal the heal
	// that came first instead (None if none did), which ends every window
	// open.
	Start, Stop, Heal Span
}

// Opened says the window's start completed without an error: a start
// that reported one may not have taken effect.
func (w *Window) Opened(ops []Op) bool {
	return w.Start.Done >= 0 && ops[w.Start.Done].Error == ""
}

// Ended is the operation that ended the window, its stop or else its
// heal; None if the history ends inside it.
func (w *Window) Ended() Span {
	if w.Stop.At() >= 0 {
		return w.Stop
	}
	return w.Heal
}

// Windows reads the nemesis's operations into fault windows as a history
// streams past: each start opens a window, each stop ends the oldest of
// its fault still open, a heal ends every one open. The operations come
// with what a Pairer made of them, so that a completion finds its
// window.
type Windows struct {
	ws    []Window
	heals []Span
	open  map[string][]int // fault -> its windows open, oldest first
	// byInvoke finds the window (or heal, as ^index) whose start, stop or
	// heal an invoke began, for its completion.
	byInvoke map[int32]int
	healed   [][]int // per heal, the windows it ended
}

// Add reads the nemesis operation op at position pos, paired as st says;
// operations of other processes are ignored.
func (l *Windows) Add(op *Op, pos int32, st Step) {
	if op.Process != NemesisProcess {
		return
	}
	if op.Type != Invoke && st.Invoke >= 0 {
		k, ok := l.byInvoke[st.Invoke]
		if !ok {
			return
		}
		delete(l.byInvoke, st.Invoke)
		switch w := k; {
		case w < 0:
			l.heals[^w].Done = pos
			for _, k := range l.healed[^w] {
				l.ws[k].Heal.Done = pos
			}
		case l.ws[w].Start.Invoke == st.Invoke:
			l.ws[w].Start.Done = pos
		case l.ws[w].Stop.Invoke == st.Invoke:
			l.ws[w].Stop.Done = pos
		default:
			l.ws[w].Heal.Done = pos
		}
		return
	}
	// An invoke, or a completion alone: the event itself.
	span := Span{Invoke: pos, Done: -1}
	if op.Type != Invoke {
		span = Span{Invoke: -1, Done: pos}
	}
	remember := func(k int) {
		if op.Type == Invoke {
			if l.byInvoke == nil {
				l.byInvoke = map[int32]int{}
			}
			l.byInvoke[pos] = k
		}
	}
	if l.open == nil {
		l.open = map[string][]int{}
	}
	switch {
	case isStart(op.F):
		name := windowFault(op)
		l.open[name] = append(l.open[name], len(l.ws))
		remember(len(l.ws))
		l.ws = append(l.ws, Window{Fault: name, Start: span, Stop: None, Heal: None})
	case isStop(op.F):
		name := windowFault(op)
		if q := l.open[name]; len(q) > 0 {
			l.ws[q[0]].Stop = span
			l.open[name] = q[1:]
			remember(q[0])
		}
	case op.F == Heal:
		remember(^len(l.heals))
		l.heals = append(l.heals, span)
		var ended []int
		for name, q := range l.open {
			for _, w := range q {
				l.ws[w].Heal = span
				ended = append(ended, w)
			}
			delete(l.open, name)
		}
		l.healed = append(l.healed, ended)
	}
}

// Windows are the windows read so far, in the order they opened.
func (l *Windows) Windows() []Window { return l.ws }

// Heals are the heals read so far, in order.
func (l *Windows) Heals() []Span { return l.heals }

// Heal is the function of the nemesis operation that undoes every fault
// still in effect.
const Heal = "heal"

func isStart(f string) bool {
	_, ok := FaultStart(f)
	return ok || f == "start"
}

func isStop(f string) bool {
	_, ok := FaultStop(f)
	return ok || f == "stop"
}

// windowFault is the fault a start or stop is about: its value's name,
// else the kind its function names, else "fault" (a bare start or stop,
// or start- with no kind).
func windowFault(op *Op) string {
	if f := op.Value.FaultName(); f != "" {
		return f
	}
	k, ok := FaultStart(op.F)
	if !ok {
		k, ok = FaultStop(op.F)
	}
	if !ok || k == "" {
		return "fault"
	}
	return k
}
