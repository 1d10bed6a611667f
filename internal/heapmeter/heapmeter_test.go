package heapmeter

import (
	"runtime"
	"testing"
)

// TestPeakSeesWhatWasFreed: a buffer held for a while and dropped is in
// the peak, not in the live heap after it.
func TestPeakSeesWhatWasFreed(t *testing.T) {
	const size = 64 << 20
	base := Live()
	stop := Peak()
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range 20 {
		runtime.Gosched()
	}
	runtime.KeepAlive(buf)
	buf = nil
	after := Live()
	peak := stop()
	if peak < base+size {
		t.Errorf("peak %d, want at least %d (the base %d and the buffer)", peak, base+size, base)
	}
	if after > base+size/2 {
		t.Errorf("live %d after the buffer was dropped, base %d", after, base)
	}
}
