package report

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// maxLanes caps the partitions drawn as lanes (ISR, unavailability) and
// as lines (HW): beyond a couple of dozen a lane is too thin to read.
const maxLanes = 24

// The latency plot's marks: the shape says the outcome and the fill the
// kind of operation, so colour is never the only clue.
var typeShape = [3]string{kOK: "circle", kInfo: "tri", kFail: "cross"}
var typeName = [3]string{kOK: "ok", kInfo: "info", kFail: "fail"}

// latency is the latency plot's points, downsampled, before it is drawn:
// the ops they stand for are fetched whole for their titles.
type latency struct {
	series      [2][3][]pt // [group][type]: group 0 sends, 1 reads
	lo, hi      int64
	total, kept int
}

func newLatency(tl *timeline, xs xScale) *latency {
	l := &latency{lo: math.MaxInt64}
	series := func(c clientOp) (g, k int) {
		done := tl.op(int(c.done))
		g = 1
		if tl.f(done) == history.Send {
			g = 0
		}
		return g, typeSlot(done.Type())
	}
	timing := func(c clientOp) (inv, lat int64) {
		inv = tl.time(int(c.inv))
		return inv, max(tl.time(int(c.done))-inv, 1)
	}
	// Each series is counted in one pass, then read again a span of
	// time at a time, never held whole (millions of points in a run of
	// hours): the table's positions of a span's ops are found from its
	// buckets', so a span reads its part of the table.
	var all [2][3]*scatter
	for g := range all {
		for k := range all[g] {
			all[g][k] = newScatter(xs, xBuckets, func(lo, hi int32) iter.Seq[pt] {
				return func(yield func(pt) bool) {
					for c := range tl.clientsIn(lo, hi) {
						if cg, ck := series(c); cg != g || ck != k {
							continue
						}
						inv, lat := timing(c)
						if !yield(pt{t: inv, v: float64(lat), pos: c.done}) {
							return
						}
					}
				}
			})
		}
	}
	for c := range tl.clientsIn(0, math.MaxInt32) {
		g, k := series(c)
		inv, lat := timing(c)
		all[g][k].count(pt{t: inv, pos: c.done})
		l.lo, l.hi = min(l.lo, lat), max(l.hi, lat)
	}
	for g := range l.series {
		for k := range l.series[g] {
			if s := all[g][k]; s.total > 0 {
				ps := s.downsample()
				l.total += s.total
				l.kept += len(ps)
				l.series[g][k] = ps
			}
		}
	}
	return l
}

// positions are the ops the drawn points stand for.
func (l *latency) positions() []int32 {
	var out []int32
	for g := range l.series {
		for _, ps := range l.series[g] {
			for _, q := range ps {
				out = append(out, q.pos)
			}
		}
	}
	return out
}

func latencyPlot(tl *timeline, l *latency, lost []checker.LostAck, xs xScale) *plotView {
	p := newPlot("plot-latency", "Latency over time", 360, tl, xs)
	p.Caption = "Each client operation at the time it was invoked, at the height of how long it took (log scale). " +
		"ok: it happened; info: unknown (timeout, connection lost); fail: it definitely did not happen. " +
		"Sends are filled, reads hollow. Shaded bands are fault windows; ▼ on top marks when a write that was later lost was acknowledged."
	lo, hi := l.lo, l.hi
	if hi == 0 {
		p.Empty = "No completed client operation in this history: nothing to plot."
		return p
	}
	ls := logScale{lo: math.Floor(math.Log10(float64(lo))), hi: math.Ceil(math.Log10(float64(hi))), y0: p.Y0 + 10, y1: p.Y1}
	if ls.hi <= ls.lo {
		ls.hi = ls.lo + 1
	}
	for d := ls.lo; d <= ls.hi; d++ {
		p.YTicks = append(p.YTicks, tick{Pos: ls.y(int64(math.Pow(10, d))), Label: dur(int64(math.Pow(10, d)))})
	}
	p.YLabel = "latency"
	for g := range l.series {
		for k, ps := range l.series[g] {
			cls := typeName[k]
			if g == 1 {
				cls += " read"
			}
			for i, q := range ps {
				if i%pointsMapped == pointsMapped-1 {
					// Each point's op is on a page of its own: the
					// kernel maps the pages around it too (64 KB a
					// point), and a 2-hour run's points counted 0.2
					// GB in the report's RSS at once.
					tl.giveBack()
				}
				o := tl.op(int(q.pos))
				m := mark{Shape: typeShape[k], X: xs.x(q.t), Y: ls.y(int64(q.v)), Class: cls,
					Title: fmt.Sprintf("op %d: %s %s, %s, invoked at %s%s", tl.index(int(q.pos)), tl.f(o), o.Type(), dur(int64(q.v)), secs(q.t), opWhere(tl, q.pos))}
				if m.Shape != "circle" {
					m.D = shapeD(m.Shape, m.X, m.Y)
				}
				p.Marks = append(p.Marks, m)
			}
		}
	}
	if l.kept < l.total {
		p.Note = strings.TrimSpace(p.Note + fmt.Sprintf(" %d of %d operations are drawn: of each sliver of time and kind, the fastest, the quartiles, the 95th percentile and the slowest.", l.kept, l.total))
	}
	p.Marks = append(p.Marks, lostMarks(lost, xs, p.Y0+4)...)
	p.Legend = []legendItem{
		{"ok", "circle", "send ok"}, {"info", "tri", "send info (unknown)"}, {"fail", "cross", "send fail"},
		{"ok read", "circle", "read ok"}, {"info read", "tri", "read info"}, {"fail read", "cross", "read fail"},
	}
	if len(lost) > 0 {
		p.Legend = append(p.Legend, legendItem{"lost", "tridown", "a lost write was acknowledged"})
	}
	return p
}

// pointsMapped is how many points the latency plot reads the ops of
// before it gives their pages back (timeline.giveBack).
const pointsMapped = 256

// opWhere names the partition of an op, for titles.
func opWhere(tl *timeline, pos int32) string {
	op := tl.full(pos)
	if op == nil {
		return ""
	}
	v := op.Value
	if v == nil || v.Topic == "" {
		return ""
	}
	s := fmt.Sprintf(", %s-%d", v.Topic, v.Partition)
	if v.Value != "" {
		s += fmt.Sprintf(" value %q", clip(v.Value, 40))
	}
	if v.Offset != nil {
		s += fmt.Sprintf(" at offset %d", *v.Offset)
	}
	return s
}

// lostMarks draws the acknowledgements of lost writes as ▼ at height y,
// one mark per column of the time axis, its title naming the values.
func lostMarks(lost []checker.LostAck, xs xScale, y float64) []mark {
	var out []mark
	byBucket := map[int][]int{}
	var order []int
	for i, l := range lost {
		b := xs.bucket(l.Time, xBuckets)
		if _, ok := byBucket[b]; !ok {
			order = append(order, b)
		}
		byBucket[b] = append(byBucket[b], i)
	}
	slices.Sort(order)
	for _, b := range order {
		idx := byBucket[b]
		first := lost[idx[0]]
		var vals []string
		for _, i := range idx[:min(len(idx), 5)] {
			vals = append(vals, fmt.Sprintf("%q (%s-%d@%d)", clip(lost[i].Value, 30), lost[i].Topic, lost[i].Partition, lost[i].Offset))
		}
		title := fmt.Sprintf("lost write acknowledged at %s: %s", secs(first.Time), strings.Join(vals, ", "))
		if len(idx) > 1 {
			title = fmt.Sprintf("%d lost writes acknowledged from %s to %s: %s", len(idx), secs(first.Time), secs(lost[idx[len(idx)-1]].Time), strings.Join(vals, ", "))
			if len(idx) > 5 {
				title += ", …"
			}
		}
		x := xs.x(first.Time)
		out = append(out, mark{Shape: "tridown", X: x, Y: y, D: shapeD("tridown", x, y), Class: "lost", Title: title})
	}
	return out
}

func throughputPlot(tl *timeline, xs xScale) *plotView {
	p := newPlot("plot-throughput", "Throughput", 260, tl, xs)
	width := int64(niceStep(float64(xs.t1)/1e9/150) * 1e9)
	width = max(width, 100_000_000)
	n := int(xs.t1/width) + 1
	// counts[b]: send ok, info, fail, reads ok, reads not ok.
	counts := make([][5]int, n)
	for c := range tl.clients() {
		o := tl.op(int(c.done))
		b := min(int(max(tl.time(int(c.done)), 0)/width), n-1)
		switch {
		case tl.f(o) == history.Send:
			counts[b][typeSlot(o.Type())]++
		case o.Type() == history.OK:
			counts[b][3]++
		default:
			counts[b][4]++
		}
	}
	if tl.nclients == 0 {
		p.Empty = "No completed client operation in this history: nothing to plot."
		return p
	}
	per := float64(width) / 1e9
	peak := 0.0
	for _, c := range counts {
		for _, v := range c {
			peak = max(peak, float64(v)/per)
		}
	}
	ys := linScale{lo: 0, hi: max(peak*1.05, 1), y0: p.Y0 + 4, y1: p.Y1}
	p.YTicks = ys.ticks(5, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "/s" })
	p.YLabel = "operations per second"
	p.Caption = fmt.Sprintf("Completed operations per second, counted in %s buckets by completion time: sends by outcome, and reads (polls, end offsets, final reads).", dur(width))
	series := []struct {
		slot  int
		class string
		text  string
	}{{0, "ok", "sends ok"}, {1, "info", "sends info (unknown)"}, {2, "fail", "sends fail"}, {3, "reads", "reads ok"}}
	for _, s := range series {
		var xy [][2]float64
		for b, c := range counts {
			y := ys.y(float64(c[s.slot]) / per)
			xy = append(xy, [2]float64{xs.x(int64(b) * width), y}, [2]float64{xs.x(int64(b+1) * width), y})
		}
		p.Lines = append(p.Lines, line{D: pathD(xy), Class: "tp " + s.class, Title: s.text})
		p.Legend = append(p.Legend, legendItem{Class: "tp " + s.class, Shape: "line", Text: s.text})
	}
	// A transparent column per bucket carries the numbers on hover.
	for b, c := range counts {
		if c == [5]int{} {
			continue
		}
		x0, x1 := xs.x(int64(b)*width), xs.x(int64(b+1)*width)
		p.Rects = append(p.Rects, rect{X: x0, Y: p.Y0, W: max(x1-x0, 0.5), H: p.Y1 - p.Y0, Class: "hover",
			Title: fmt.Sprintf("%s to %s: sends %d ok, %d info, %d fail; reads %d ok, %d not ok",
				secs(int64(b)*width), secs(int64(b+1)*width), c[0], c[1], c[2], c[3], c[4])})
	}
	return p
}

// lanes returns how many partitions get a lane, and a note if some do not.
func lanes(tl *timeline) (int, string) {
	n := min(len(tl.parts), maxLanes)
	if n < len(tl.parts) {
		return n, fmt.Sprintf(" Only the first %d of %d partitions are drawn.", n, len(tl.parts))
	}
	return n, ""
}

func isrPlot(tl *timeline, xs xScale, rf, minISR int) *plotView {
	const laneH = 54.0
	n, capNote := lanes(tl)
	p := newPlot("plot-isr", "In-sync replicas per partition", plotTop+plotBottom+laneH*float64(max(n, 1)), tl, xs)
	p.Caption = "One lane per partition: the ISR size the monitor sampled (solid line; dashed: min.insync.replicas). " +
		"Ticks on top of a lane mark a new leader epoch; red: the partition had no leader; grey: the monitor got no answer. Hover for the ISR, leader and epoch."
	p.Note = strings.TrimSpace(p.Note + capNote)
	if !tl.sampled {
		p.Empty = "No monitor samples in this history (process -2, f \"monitor\"): the ISR was not observed during the run."
		return p
	}
	for i := range tl.samples {
		for s := range tl.samples[i].All() {
			rf = max(rf, int(s.replicas), int(s.isr))
		}
	}
	rf = max(rf, 1)
	for lane := range n {
		top := p.Y0 + float64(lane)*laneH
		ys := linScale{lo: 0, hi: float64(rf), y0: top + 10, y1: top + laneH - 8}
		p.Texts = append(p.Texts, label{X: p.X0 - 8, Y: top + laneH/2, Text: tl.parts[lane].String(), Class: "lane", Anchor: "end"})
		p.Texts = append(p.Texts, label{X: p.X0 - 8, Y: top + laneH/2 + 12, Text: fmt.Sprintf("ISR 0–%d", rf), Class: "lane small", Anchor: "end"})
		p.Lines = append(p.Lines, line{D: pathD([][2]float64{{p.X0, top + laneH}, {p.X1, top + laneH}}), Class: "lanesep"})
		p.Lines = append(p.Lines, line{D: pathD([][2]float64{{p.X0, ys.y(float64(rf))}, {p.X1, ys.y(float64(rf))}}), Class: "grid", Title: fmt.Sprintf("%d replicas", rf)})
		if minISR > 0 && minISR <= rf {
			p.Lines = append(p.Lines, line{D: pathD([][2]float64{{p.X0, ys.y(float64(minISR))}, {p.X1, ys.y(float64(minISR))}}), Class: "minisr", Title: fmt.Sprintf("min.insync.replicas = %d", minISR)})
		}
		ss := &tl.samples[lane]
		leaderless, blind := noLeader(ss, tl.end)
		leaderless, blind = mergeWindows(leaderless, xs), mergeWindows(blind, xs)
		for _, w := range leaderless {
			x0, x1 := xs.x(w.start), xs.x(w.end)
			p.Rects = append(p.Rects, rect{X: x0, Y: top + 2, W: max(x1-x0, 1.5), H: laneH - 4, Class: "noleader",
				Title: fmt.Sprintf("%s had no leader from %s to %s (%s)", tl.parts[lane], secs(w.start), secs(w.end), dur(w.end-w.start))})
		}
		for _, w := range blind {
			x0, x1 := xs.x(w.start), xs.x(w.end)
			p.Rects = append(p.Rects, rect{X: x0, Y: top + 2, W: max(x1-x0, 1.5), H: laneH - 4, Class: "blind",
				Title: fmt.Sprintf("the monitor got no answer about %s from %s to %s", tl.parts[lane], secs(w.start), secs(w.end))})
		}
		th := stepThinner{xs: xs, buckets: xBuckets}
		for s := range ss.All() {
			v := math.NaN()
			if s.ok {
				v = float64(s.isr)
			}
			th.add(pt{t: s.t, v: v, pos: s.pos})
		}
		p.Lines = append(p.Lines, line{D: stepPath(th.points(), xs, ys.y), Class: "isr", Title: tl.parts[lane].String() + ": ISR size"})
		p.Rects = append(p.Rects, isrSegments(tl, lane, xs, top, laneH)...)
		p.Marks = append(p.Marks, epochMarks(tl, lane, xs, top)...)
	}
	p.Legend = []legendItem{{"isr", "line", "ISR size"}, {"minisr", "dash", "min.insync.replicas"},
		{"epoch", "tick", "new leader epoch"}, {"noleader", "band", "no leader"}, {"blind", "band", "monitor got no answer"}}
	return p
}

// stepPath draws a series as steps: each value holds until the next one.
// NaN values (no answer) break the line.
func stepPath(ps []pt, xs xScale, y func(float64) float64) string {
	var xy [][2]float64
	for i, q := range ps {
		x := xs.x(q.t)
		if math.IsNaN(q.v) {
			xy = append(xy, [2]float64{x, math.NaN()})
			continue
		}
		if i > 0 && !math.IsNaN(ps[i-1].v) {
			xy = append(xy, [2]float64{x, y(ps[i-1].v)})
		}
		xy = append(xy, [2]float64{x, y(q.v)})
	}
	return pathD(xy)
}

// maxSegments caps the hover rectangles of one lane.
const maxSegments = 400

// isrSegments are transparent rectangles over the intervals in which a
// partition's ISR, leader and epoch stayed the same, titled with them.
func isrSegments(tl *timeline, lane int, xs xScale, top, h float64) []rect {
	ss := &tl.samples[lane]
	var out []rect
	for i := 0; i < ss.Len() && len(out) < maxSegments; {
		s := ss.At(i)
		j := i + 1
		for j < ss.Len() && sameState(s, ss.At(j)) {
			j++
		}
		end := tl.end
		if j < ss.Len() {
			end = ss.At(j).t
		} else if j > 0 {
			end = ss.At(j - 1).t
		}
		x0, x1 := xs.x(s.t), xs.x(end)
		var what string
		if s.ok {
			what = fmt.Sprintf("ISR %v (%d of %d replicas), leader %s, epoch %d", tl.lists.Of(s.isrList), s.isr, s.replicas, leaderName(s.leader), s.epoch)
			if s.hw >= 0 {
				what += fmt.Sprintf(", HW %d at first", s.hw)
			}
		} else {
			what = "no answer: " + tl.errs[s.err]
		}
		out = append(out, rect{X: x0, Y: top, W: max(x1-x0, 0.5), H: h, Class: "hover",
			Title: fmt.Sprintf("%s, %s to %s: %s", tl.parts[lane], secs(s.t), secs(end), what)})
		i = j
	}
	return out
}

func sameState(a, b sample) bool {
	return a.ok == b.ok && a.leader == b.leader && a.epoch == b.epoch && a.isrList == b.isrList
}

func leaderName(l int32) string {
	if l < 0 {
		return "none"
	}
	return strconv.Itoa(int(l))
}

// epochMarks put a tick on top of a lane where a leader took over: the
// leader or its epoch differs from the last one seen. (Losing the leader
// is the no-leader shading.)
func epochMarks(tl *timeline, lane int, xs xScale, top float64) []mark {
	var out []mark
	var prev sample
	seen := false
	for s := range tl.samples[lane].All() {
		if !s.ok || s.leader < 0 {
			continue
		}
		if seen && (s.epoch != prev.epoch || s.leader != prev.leader) && len(out) < maxSegments {
			x := xs.x(s.t)
			out = append(out, mark{Shape: "tick", X: x, Y: top, D: fmt.Sprintf("M%g %gv8", x, r1(top+1)), Class: "epoch",
				Title: fmt.Sprintf("%s at %s: leader %s → %s, epoch %d → %d", tl.parts[lane], secs(s.t),
					leaderName(prev.leader), leaderName(s.leader), prev.epoch, s.epoch)})
		}
		prev, seen = s, true
	}
	return out
}

func hwPlot(tl *timeline, xs xScale) *plotView {
	p := newPlot("plot-hw", "High watermark per partition", 300, tl, xs)
	n, capNote := lanes(tl)
	p.Note = strings.TrimSpace(p.Note + capNote)
	series := make([][]pt, len(tl.parts))
	source := "the monitor's samples (the leader's answer to ListOffsets)"
	if tl.sampled {
		// Thinned as they are read: drawn thinned the same (thinning
		// keeps each bucket's highest and the last point, which the
		// scale and the labels below read).
		for i := range tl.samples {
			th := stepThinner{xs: xs, buckets: xBuckets}
			for s := range tl.samples[i].All() {
				if s.ok && s.hw >= 0 {
					th.add(pt{t: s.t, v: float64(s.hw), pos: s.pos})
				}
			}
			series[i] = th.points()
		}
	} else {
		// Without a monitor, what consumers saw is the next best thing.
		source = "what consumers saw (the HW of polls and end-offset reads; there are no monitor samples)"
		series = tl.readHW
	}
	p.Caption = "The high watermark (the offset below which records are committed) of each partition over time, from " + source + ". A drop means the log was truncated."
	peak := 0.0
	any := false
	for _, s := range series {
		for _, q := range s {
			peak, any = max(peak, q.v), true
		}
	}
	if !any {
		p.Empty = "No high watermark was observed in this history: nothing to plot."
		return p
	}
	ys := linScale{lo: 0, hi: max(peak*1.05, 1), y0: p.Y0 + 4, y1: p.Y1}
	p.YTicks = ys.ticks(5, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) })
	p.YLabel = "offset"
	var ends []label
	for i := range n {
		s := series[i]
		if len(s) == 0 {
			continue
		}
		cls := fmt.Sprintf("hw p%d d%d", i%8, (i/8)%3)
		p.Lines = append(p.Lines, line{D: stepPath(downsampleSteps(s, xs, xBuckets), xs, ys.y), Class: cls, Title: tl.parts[i].String() + ": high watermark"})
		last := s[len(s)-1]
		ends = append(ends, label{X: min(xs.x(last.t)-3, p.X1-2), Y: ys.y(last.v) - 3, Text: fmt.Sprintf("%s: %d", tl.parts[i], int64(last.v)), Class: "hwlabel", Anchor: "end",
			Title: fmt.Sprintf("%s: HW %d at %s", tl.parts[i], int64(last.v), secs(last.t))})
		p.Legend = append(p.Legend, legendItem{Class: cls, Shape: "line", Text: tl.parts[i].String()})
	}
	p.Texts = append(p.Texts, spread(ends, 11)...)
	return p
}

// spread moves labels apart vertically so that none is closer than gap to
// the next, keeping their order: the last values of several lines are
// often nearly equal.
func spread(ls []label, gap float64) []label {
	slices.SortStableFunc(ls, func(a, b label) int { return cmp.Compare(a.Y, b.Y) })
	for i := 1; i < len(ls); i++ {
		ls[i].Y = max(ls[i].Y, r1(ls[i-1].Y+gap))
	}
	return ls
}

func unavailabilityPlot(tl *timeline, lost []checker.LostAck, xs xScale) *plotView {
	const laneH = 26.0
	n, capNote := lanes(tl)
	p := newPlot("plot-unavailability", "Unavailability", plotTop+plotBottom+laneH*float64(n+1), tl, xs)
	p.Note = strings.TrimSpace(p.Note + capNote)
	p.Caption = "Upper half of a lane (orange): no send was acknowledged for at least ten typical gaps between acknowledgements, and at least a second, while sends were being made. " +
		"Lower half (red): the monitor saw no leader. ▼: a write that was later lost was acknowledged here."
	if !tl.anySendOK && tl.nclients > 0 {
		p.Caption += " No send was ever acknowledged in this history (under acks=0 none is), so the upper halves stay empty."
	}
	span := [2]int64{-1, -1}
	for _, s := range tl.sendSpan {
		if s[0] >= 0 {
			if span[0] < 0 || s[0] < span[0] {
				span[0] = s[0]
			}
			span[1] = max(span[1], s[1])
		}
	}
	lostBy := map[string][]checker.LostAck{}
	for _, l := range lost {
		k := history.Key{Topic: l.Topic, Partition: l.Partition}.String()
		lostBy[k] = append(lostBy[k], l)
	}
	lane := func(i int, name string, acked *ackLane, span [2]int64, part int, lost []checker.LostAck) {
		top := p.Y0 + float64(i)*laneH
		p.Texts = append(p.Texts, label{X: p.X0 - 8, Y: top + laneH/2 + 4, Text: name, Class: "lane", Anchor: "end"})
		p.Lines = append(p.Lines, line{D: pathD([][2]float64{{p.X0, top + laneH}, {p.X1, top + laneH}}), Class: "lanesep"})
		if acked.n > 0 && span[0] >= 0 {
			for _, w := range mergeWindows(acked.unavailable(span[0], span[1]), xs) {
				x0, x1 := xs.x(w.start), xs.x(w.end)
				p.Rects = append(p.Rects, rect{X: x0, Y: top + 2, W: max(x1-x0, 1), H: laneH/2 - 2, Class: "down",
					Title: fmt.Sprintf("%s: no send acknowledged from %s to %s (%s)", name, secs(w.start), secs(w.end), dur(w.end-w.start))})
			}
		}
		if part >= 0 {
			leaderless, _ := noLeader(&tl.samples[part], tl.end)
			leaderless = mergeWindows(leaderless, xs)
			for _, w := range leaderless {
				x0, x1 := xs.x(w.start), xs.x(w.end)
				p.Rects = append(p.Rects, rect{X: x0, Y: top + laneH/2, W: max(x1-x0, 1.5), H: laneH/2 - 2, Class: "noleader",
					Title: fmt.Sprintf("%s had no leader from %s to %s (%s)", name, secs(w.start), secs(w.end), dur(w.end-w.start))})
			}
		}
		p.Marks = append(p.Marks, lostMarks(lost, xs, top+laneH/2)...)
	}
	lane(0, "all partitions", &tl.ackedAll, span, -1, lost)
	for i := range n {
		lane(i+1, tl.parts[i].String(), &tl.acked[i], tl.sendSpan[i], i, lostBy[tl.parts[i].String()])
	}
	p.Legend = []legendItem{{"down", "band", "no send acknowledged"}, {"noleader", "band", "no leader (monitor)"}}
	if len(lost) > 0 {
		p.Legend = append(p.Legend, legendItem{"lost", "tridown", "lost write acknowledged"})
	}
	return p
}
