package report

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/history"
)

// Plots are drawn in Go and written out by one generic SVG template: a
// plot is a frame (axes, ticks, fault bands, event markers) plus lists of
// rectangles, lines, point marks and labels, all in viewBox coordinates.
// Every plot of a report shares the same width and x scale, so a time is
// at the same horizontal place in each.
const (
	plotW      = 1200.0
	plotLeft   = 112.0 // room for lane labels and y ticks
	plotRight  = 16.0
	plotTop    = 22.0 // room for fault labels
	plotBottom = 26.0 // room for x tick labels
	// xBuckets is how many columns a plot's time axis is cut into when
	// downsampling: about one per 2.7 viewBox units, finer than the eye
	// needs, coarse enough to bound the output.
	xBuckets = 400
)

// plotView is one plot, ready for the template.
type plotView struct {
	ID, Title, Caption string
	// Empty, if set, replaces the plot with this sentence.
	Empty  string
	W, H   float64
	X0, X1 float64 // plot area, horizontally
	Y0, Y1 float64 // plot area, vertically (Y0 top)
	XTicks []tick
	YTicks []tick
	YLabel string
	// XLabel names the x axis; empty: the time since the test started.
	XLabel  string
	Bands   []band
	Markers []marker
	Rects   []rect
	Lines   []line
	Marks   []mark
	Texts   []label
	Legend  []legendItem
	// Note says what was left out (downsampling, caps).
	Note string
}

type tick struct {
	Pos   float64 // x or y
	Label string
}

// band is a fault window, shaded over the plot's height.
type band struct {
	X, W         float64
	Label, Title string
	Class        string
}

// marker is an instant, a vertical line over the plot's height.
type marker struct {
	X            float64
	Label, Title string
	Class        string
	Anchor       string // of the label: start (right of the line) or end
}

type rect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type line struct {
	D     string // SVG path data
	Class string
	Title string
}

// mark is one point. Shape "circle" is drawn at X, Y; the other shapes
// are paths with D already computed.
type mark struct {
	Shape string
	X, Y  float64
	D     string
	Class string
	Title string
}

type label struct {
	X, Y   float64
	Text   string
	Class  string
	Anchor string // start, middle, end
	Title  string
}

// legendItem is a swatch and its meaning; the swatch repeats the plot's
// shape or line style, so the legend does not rely on colour alone.
type legendItem struct {
	Class string
	Shape string // circle, tri, cross, square, line, dash, dot, band
	Text  string
}

// r1 rounds to one decimal: the output stays short and exact enough for a
// 1200-unit-wide picture.
func r1(x float64) float64 { return math.Round(x*10) / 10 }

// xScale maps history times (ns) onto the shared time axis.
type xScale struct {
	t1     int64
	x0, x1 float64
}

func newXScale(end int64) xScale {
	return xScale{t1: max(end, 1), x0: plotLeft, x1: plotW - plotRight}
}

func (s xScale) x(t int64) float64 {
	t = min(max(t, 0), s.t1)
	return r1(s.x0 + float64(t)/float64(s.t1)*(s.x1-s.x0))
}

// bucket is t's column among n equal ones.
func (s xScale) bucket(t int64, n int) int {
	b := int(float64(max(t, 0)) / float64(s.t1) * float64(n))
	return min(max(b, 0), n-1)
}

// secs formats a history time in seconds since the start.
func secs(t int64) string {
	s := float64(t) / 1e9
	switch {
	case s >= 100:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s >= 10:
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 3, 64) + " s"
}

// dur formats a duration in ns for humans.
func dur(ns int64) string {
	switch d := float64(ns); {
	case d >= 1e9:
		return strconv.FormatFloat(d/1e9, 'f', 2, 64) + " s"
	case d >= 1e6:
		return strconv.FormatFloat(d/1e6, 'f', 1, 64) + " ms"
	case d >= 1e3:
		return strconv.FormatFloat(d/1e3, 'f', 0, 64) + " µs"
	}
	return strconv.FormatInt(ns, 10) + " ns"
}

// niceStep is the smallest 1, 2 or 5 times a power of ten at least raw.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// newPlot makes a plot's frame: the shared time axis with its ticks, the
// fault bands and the event markers.
func newPlot(id, title string, h float64, tl *timeline, xs xScale) *plotView {
	p := &plotView{ID: id, Title: title, W: plotW, H: h, X0: xs.x0, X1: xs.x1, Y0: plotTop, Y1: h - plotBottom}
	for _, s := range tickValues(0, float64(xs.t1)/1e9, niceStep(float64(xs.t1)/1e9/12)) {
		p.XTicks = append(p.XTicks, tick{Pos: xs.x(int64(math.Round(s * 1e9))), Label: strconv.FormatFloat(s, 'f', -1, 64) + " s"})
	}
	labelEnd := 0.0 // where the last label drawn ends
	for _, g := range bandGroups(tl.faults, xs) {
		first, last := tl.faults[g[0]], tl.faults[g[1]-1]
		x0, x1 := xs.x(first.Start), xs.x(last.End)
		b := band{X: x0, W: max(x1-x0, 1), Title: first.describe(), Class: "band " + faultFamily(first.Fault, tl.families)}
		label := first.Fault
		if n := g[1] - g[0]; n > 1 && overlapping(tl.faults[g[0]:g[1]]) {
			// Faults that held at once (a composite, --nemesis-overlap):
			// one band, named by the kinds in the order they started.
			var kinds, parts []string
			for _, f := range tl.faults[g[0]:g[1]] {
				kinds, parts = append(kinds, f.Fault), append(parts, f.describe())
			}
			b.Title, label = "overlapping: "+strings.Join(parts, "; "), strings.Join(kinds, "+")
		} else if n > 1 {
			b.Title, label = groupTitle(tl.faults[g[0]:g[1]]), fmt.Sprintf("%d faults", n)
			p.Note = "Fault windows too close together to draw apart at this scale are shaded as one band; the faults table lists each."
		}
		// Labels that would overlap the previous one are left to the
		// band's hover title and the faults table.
		if x0 >= labelEnd {
			b.Label = label
			labelEnd = x0 + 6.5*float64(len(label)) + 6
		}
		p.Bands = append(p.Bands, b)
	}
	for _, h := range tl.heals {
		p.Markers = append(p.Markers, marker{X: xs.x(h), Title: "heal: every fault undone at " + secs(h), Class: "heal"})
	}
	if tl.finalAt >= 0 {
		p.Markers = append(p.Markers, marker{X: xs.x(tl.finalAt), Label: "final reads ", Anchor: "end", Title: "the final phase (final and replica reads) starts at " + secs(tl.finalAt), Class: "final"})
	}
	return p
}

// maxBands is how many fault windows a plot draws one by one: a day-long
// run with a fault every ten seconds would otherwise draw thousands, so
// beyond it windows less than a column of the time axis apart are drawn
// as one band.
const maxBands = 500

// bandGroups returns [first, end) ranges of faults to draw as one band
// each: one window a band, unless there are more than maxBands, when
// windows less than a time column apart share one. At most xBuckets + 1
// bands result.
func bandGroups(fs []faultWindow, xs xScale) [][2]int {
	var out [][2]int
	gap := int64(-1)
	if len(fs) > maxBands {
		gap = xs.t1 / xBuckets
	}
	for i, f := range fs {
		if n := len(out); n > 0 && f.Start-fs[out[n-1][1]-1].End < gap {
			out[n-1][1] = i + 1
			continue
		}
		out = append(out, [2]int{i, i + 1})
	}
	return out
}

// overlapping says whether each window of fs starts before the one
// before it ends: faults that held at once, not windows merely drawn
// together at a coarse scale.
func overlapping(fs []faultWindow) bool {
	for i := 1; i < len(fs); i++ {
		if fs[i].Start >= fs[i-1].End {
			return false
		}
	}
	return true
}

// groupTitle describes fault windows drawn as one band.
func groupTitle(fs []faultWindow) string {
	count := map[string]int{}
	for _, f := range fs {
		count[f.Fault]++
	}
	var kinds []string
	for _, k := range sortedKeys(count) {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, count[k]))
	}
	return fmt.Sprintf("%d fault windows from %s to %s: %s (too close together to draw apart; the faults table lists them)",
		len(fs), secs(fs[0].Start), secs(fs[len(fs)-1].End), strings.Join(kinds, ", "))
}

func (f faultWindow) describe() string {
	var sb strings.Builder
	sb.WriteString(f.Fault)
	if len(f.Targets) > 0 {
		sb.WriteString(" on " + joinTargets(f.Targets))
	}
	fmt.Fprintf(&sb, ": %s to %s (%s)", secs(f.Start), secs(f.End), dur(f.End-f.Start))
	if f.Planned {
		sb.WriteString(", as planned by the schedule (the history records no nemesis operations)")
	} else if f.Open {
		sb.WriteString(", never stopped: shown until the next heal or the end of the history")
	}
	if f.Error != "" {
		sb.WriteString("; error: " + f.Error)
	}
	return sb.String()
}

// faultFamily classes a fault for its band's colour by the family
// test.json gives its kind (the nemesis's registry decides it), "other"
// for a run that recorded none; the label names it.
func faultFamily(fault string, families map[string]string) string {
	if f, ok := families[history.FaultKind(history.FaultParts(fault)[0])]; ok {
		return "f-" + f
	}
	return "f-other"
}

// logScale maps a latency (ns) onto a log axis spanning whole decades.
type logScale struct {
	lo, hi float64 // log10 of the decade bounds
	y0, y1 float64 // top and bottom pixels
}

func (s logScale) y(v int64) float64 {
	l := math.Log10(math.Max(float64(v), 1))
	l = math.Min(math.Max(l, s.lo), s.hi)
	return r1(s.y1 - (l-s.lo)/(s.hi-s.lo)*(s.y1-s.y0))
}

// linScale maps a value onto a linear axis.
type linScale struct {
	lo, hi float64
	y0, y1 float64
}

func (s linScale) y(v float64) float64 {
	if s.hi <= s.lo {
		return r1(s.y1)
	}
	v = math.Min(math.Max(v, s.lo), s.hi)
	return r1(s.y1 - (v-s.lo)/(s.hi-s.lo)*(s.y1-s.y0))
}

// ticks returns about n nice ticks from lo to hi.
func (s linScale) ticks(n int, format func(float64) string) []tick {
	var out []tick
	for _, v := range tickValues(s.lo, s.hi, niceStep((s.hi-s.lo)/float64(n))) {
		out = append(out, tick{Pos: s.y(v), Label: format(v)})
	}
	return out
}

// tickValues are the multiples of step from lo to hi, rounded to step's
// decimals: adding 0.1 three times gives 0.30000000000000004, which
// would be a tick's label.
func tickValues(lo, hi, step float64) []float64 {
	// Dividing by a whole power of ten rounds to the nearest float;
	// multiplying by 0.1 would not.
	scale := math.Pow(10, math.Max(-math.Floor(math.Log10(step)), 0))
	var out []float64
	for i := int64(math.Ceil(lo/step - 1e-9)); float64(i)*step <= hi+step*1e-9; i++ {
		out = append(out, math.Round(float64(i)*step*scale)/scale)
	}
	return out
}

// pt is a point of a series, with the op position it stands for.
type pt struct {
	t   int64
	v   float64
	pos int32
}

// scatterQuantiles are the points of a bucket a downsampled scatter plot
// keeps: the extremes, which are what the eye looks for, and quartiles and
// the 95th percentile, so the cloud still shows where most points lie.
var scatterQuantiles = []float64{0, 0.25, 0.5, 0.75, 0.95, 1}

// downsampleScatter keeps, of each bucket's points (a bucket is about one
// pixel of the time axis), those at scatterQuantiles by value. The result
// has at most len(scatterQuantiles) * buckets points, in order of
// position (pt.pos), and always each bucket's lowest and highest.
func downsampleScatter(ps []pt, xs xScale, buckets int) []pt {
	s := newScatter(xs, buckets, func(lo, hi int32) iter.Seq[pt] { return slices.Values(ps) })
	for _, p := range ps {
		s.count(p)
	}
	return s.downsample()
}

// scatterHeld is how many points a scatter holds at once: a long run's
// series is millions of points, read a span of buckets at a time.
var scatterHeld = 1 << 19

// scatter downsamples a series too long to hold: it is told of each
// point once (count), then reads them again from points, a span of
// buckets at a time.
type scatter struct {
	xs      xScale
	buckets int
	n       []int   // points by bucket
	lo, hi  []int32 // by bucket, the least and greatest position
	total   int
	// points yields the series' points at positions lo to hi, at least,
	// in order of position.
	points func(lo, hi int32) iter.Seq[pt]
}

func newScatter(xs xScale, buckets int, points func(lo, hi int32) iter.Seq[pt]) *scatter {
	return &scatter{xs: xs, buckets: buckets, n: make([]int, buckets), lo: make([]int32, buckets), hi: make([]int32, buckets), points: points}
}

func (s *scatter) count(p pt) {
	b := s.xs.bucket(p.t, s.buckets)
	if s.n[b] == 0 || p.pos < s.lo[b] {
		s.lo[b] = p.pos
	}
	s.hi[b] = max(s.hi[b], p.pos)
	s.n[b]++
	s.total++
}

func (s *scatter) downsample() []pt {
	perBucket := len(scatterQuantiles)
	buckets := s.buckets
	if s.total <= perBucket*buckets {
		var out []pt
		for p := range s.points(math.MinInt32, math.MaxInt32) {
			out = append(out, p)
		}
		return out
	}
	var out []pt
	// The points of each bucket of the span, in order of position, in
	// one array: a bucket's are members[start[b-from]:start[b-from+1]].
	start := make([]int, buckets+1)
	var members []pt
	for from := 0; from < buckets; {
		to, held := from, 0
		lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
		for to < buckets && (to == from || held+s.n[to] <= scatterHeld) {
			if s.n[to] > 0 {
				lo, hi = min(lo, s.lo[to]), max(hi, s.hi[to])
			}
			held += s.n[to]
			to++
		}
		clear(start)
		for b := from; b < to; b++ {
			start[b-from+1] = start[b-from] + s.n[b]
		}
		members = slices.Grow(members[:0], held)[:held]
		next := slices.Clone(start[:to-from])
		if held > 0 {
			for p := range s.points(lo, hi) {
				if b := s.xs.bucket(p.t, buckets); b >= from && b < to && p.pos >= lo && p.pos <= hi {
					members[next[b-from]] = p
					next[b-from]++
				}
			}
		}
		for b := range to - from {
			g := members[start[b]:start[b+1]]
			if len(g) <= perBucket {
				out = append(out, g...)
				continue
			}
			// Stable, so equal values keep the earliest first.
			slices.SortStableFunc(g, func(x, y pt) int { return cmp.Compare(x.v, y.v) })
			n := len(out)
			for _, q := range scatterQuantiles {
				out = append(out, g[int(math.Round(q*float64(len(g)-1)))])
			}
			picked := out[n:]
			slices.SortFunc(picked, func(x, y pt) int { return cmp.Compare(x.pos, y.pos) })
			out = append(out[:n], slices.CompactFunc(picked, func(x, y pt) bool { return x.pos == y.pos })...)
		}
		from = to
	}
	slices.SortFunc(out, func(x, y pt) int { return cmp.Compare(x.pos, y.pos) })
	return out
}

// downsampleSteps thins a time series drawn as a line: of each bucket it
// keeps the lowest, the highest and the last point, in time order, so the
// line keeps its extremes and ends each column at the right level. At most
// 3 * buckets points.
func downsampleSteps(ps []pt, xs xScale, buckets int) []pt {
	th := stepThinner{xs: xs, buckets: buckets}
	for _, p := range ps {
		th.add(p)
	}
	return th.points()
}

// stepThinner is downsampleSteps of points given one at a time, holding
// at most 3 * buckets of them: a day's run's monitor samples a partition
// a million times or so, which the plots drew from a list of them all.
type stepThinner struct {
	xs      xScale
	buckets int
	// few are the points while there are no more than 3 * buckets: a
	// series that short is drawn whole.
	few      []pt
	thinning bool
	out      []pt
	// The bucket being read (-1: none yet), its lowest, highest and last
	// point (the first lowest and highest), and their places.
	cb              int
	lo, hi, last    pt
	loI, hiI, lastI int
	n               int
}

func (th *stepThinner) add(p pt) {
	if !th.thinning {
		if th.few = append(th.few, p); len(th.few) <= 3*th.buckets {
			return
		}
		th.thinning, th.cb = true, -1
		few := th.few
		th.few = nil
		for _, q := range few {
			th.thin(q)
		}
		return
	}
	th.thin(p)
}

func (th *stepThinner) thin(p pt) {
	i := th.n
	th.n++
	if b := th.xs.bucket(p.t, th.buckets); b != th.cb {
		th.flush()
		th.cb = b
		th.lo, th.hi, th.last = p, p, p
		th.loI, th.hiI, th.lastI = i, i, i
		return
	}
	if p.v < th.lo.v {
		th.lo, th.loI = p, i
	}
	if p.v > th.hi.v {
		th.hi, th.hiI = p, i
	}
	th.last, th.lastI = p, i
}

// flush keeps the bucket's points, each once, in the order they came.
func (th *stepThinner) flush() {
	if th.cb < 0 {
		return
	}
	type placed struct {
		i int
		p pt
	}
	kept := [3]placed{{th.loI, th.lo}, {th.hiI, th.hi}, {th.lastI, th.last}}
	slices.SortFunc(kept[:], func(a, b placed) int { return cmp.Compare(a.i, b.i) })
	for k, e := range kept {
		if k == 0 || e.i != kept[k-1].i {
			th.out = append(th.out, e.p)
		}
	}
}

// points are the series thinned; the thinner is done with.
func (th *stepThinner) points() []pt {
	if !th.thinning {
		return th.few
	}
	th.flush()
	th.cb = -1
	return th.out
}

// shapeD is the path of a mark centred on x, y.
func shapeD(shape string, x, y float64) string {
	f := func(v float64) string { return strconv.FormatFloat(r1(v), 'f', -1, 64) }
	switch shape {
	case "tri": // point up
		return "M" + f(x) + " " + f(y-3.5) + "l3.5 6h-7z"
	case "tridown":
		return "M" + f(x) + " " + f(y+3.5) + "l3.5-6h-7z"
	case "cross":
		return "M" + f(x-3) + " " + f(y-3) + "l6 6m0-6l-6 6"
	case "square":
		return "M" + f(x-2.5) + " " + f(y-2.5) + "h5v5h-5z"
	}
	return ""
}

// pathD joins points into path data; a gap (NaN y) starts a new subpath.
func pathD(xy [][2]float64) string {
	var sb strings.Builder
	move := true
	for _, p := range xy {
		if math.IsNaN(p[1]) {
			move = true
			continue
		}
		if move {
			sb.WriteByte('M')
			move = false
		} else {
			sb.WriteByte('L')
		}
		sb.WriteString(strconv.FormatFloat(p[0], 'f', -1, 64))
		sb.WriteByte(' ')
		sb.WriteString(strconv.FormatFloat(p[1], 'f', -1, 64))
	}
	return sb.String()
}
