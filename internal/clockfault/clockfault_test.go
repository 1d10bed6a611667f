package clockfault

import (
	"testing"
	"time"
)

func TestReadWrite(t *testing.T) {
	dir := t.TempDir()
	if f, err := Read(dir); err != nil || !f.True() {
		t.Fatalf("no file: %+v %v, want the true time", f, err)
	}
	want := Fault{Offset: -90 * time.Second, Rate: 0.125}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(dir); err != nil || f != want {
		t.Fatalf("read %+v %v, want %+v", f, err, want)
	}
	if err := Write(dir, Fault{Rate: 1}); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(dir); err != nil || !f.True() {
		t.Fatalf("set right: %+v %v", f, err)
	}
}

func TestClockRead(t *testing.T) {
	for _, c := range []struct {
		clock     Clock
		now, want int64
	}{
		{Clock{}, 5000, 5000},
		{Clock{Since: 1000, Fault: Fault{Offset: 30 * time.Second, Rate: 1}}, 2000, 32000},
		{Clock{Since: 1000, Fault: Fault{Offset: -time.Second, Rate: 1}}, 1500, 500},
		{Clock{Since: 1000, Fault: Fault{Rate: 4}}, 2000, 5000},
		{Clock{Since: 1000, Fault: Fault{Rate: 0.25}}, 5000, 2000},
	} {
		if got := c.clock.Read(c.now); got != c.want {
			t.Errorf("%+v at %d reads %d, want %d", c.clock, c.now, got, c.want)
		}
	}
}
