// Package clockfault is how a node's clock is set wrong on purpose
// (chaos's clock-jump and clock-skew faults): the fault as a value, the
// time a node reads under it, and the file through which a tester sets it
// on a running process. The tester writes File in the node's data
// directory; the node reads it when it starts (a node restarted during
// the fault keeps its host's wrong clock) and looks for a change every
// 100 ms.
package clockfault

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/internal/atomicfile"
)

// File is the fault's file in a node's data directory: "OFFSET_MS RATE".
const File = "clock-fault"

// Fault is a clock stepped by Offset from the true time and running Rate
// times as fast from the moment it is set. The zero value is the true
// time.
type Fault struct {
	Offset time.Duration
	Rate   float64
}

// True says whether f is no fault at all.
func (f Fault) True() bool { return f.Offset == 0 && (f.Rate == 0 || f.Rate == 1) }

// Clock is a fault set at a true time.
type Clock struct {
	Since int64 // the true time it was set, in milliseconds
	Fault Fault
}

// Read is the time, in milliseconds, a node under the fault reads at the
// true time now.
func (c Clock) Read(now int64) int64 {
	if c.Fault.True() {
		return now
	}
	rate := c.Fault.Rate
	if rate == 0 {
		rate = 1
	}
	return c.Since + c.Fault.Offset.Milliseconds() + int64(rate*float64(now-c.Since))
}

// Write sets the fault in dir's File, atomically; the true time removes
// the file.
func Write(dir string, f Fault) error {
	path := filepath.Join(dir, File)
	if f.True() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.Write(path, []byte(fmt.Sprintf("%d %g\n", f.Offset.Milliseconds(), f.Rate)))
}

// Read reads dir's File: the true time when there is none.
func Read(dir string) (Fault, error) {
	data, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return Fault{}, nil
	}
	if err != nil {
		return Fault{}, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return Fault{}, fmt.Errorf("%s: %q is not OFFSET_MS RATE", File, data)
	}
	ms, err1 := strconv.ParseInt(fields[0], 10, 64)
	rate, err2 := strconv.ParseFloat(fields[1], 64)
	if err1 != nil || err2 != nil || rate <= 0 {
		return Fault{}, fmt.Errorf("%s: %q is not OFFSET_MS RATE (a positive rate)", File, data)
	}
	return Fault{Offset: time.Duration(ms) * time.Millisecond, Rate: rate}, nil
}
