package results

import (
	"os"
	"strconv"
	"testing"
)

func TestRenderSample(t *testing.T) {
	out := os.Getenv("CHAOS_SAMPLE_REPORT")
	if out == "" {
		t.Skip("set CHAOS_SAMPLE_REPORT=FILE to write a sample report")
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := strconv.Atoi(os.Getenv("CHAOS_SAMPLE_OPS"))
	if err := RenderReport(f, synthReport(max(n, 1000), 1)); err != nil {
		t.Fatal(err)
	}
}
