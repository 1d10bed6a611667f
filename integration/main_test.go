package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/chaos-isr/chaos/internal/testbin"
)

// chaosBin is the chaos binary every cluster in this package runs.
var chaosBin string

func TestMain(m *testing.M) {
	path, err := testbin.Path()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		testbin.Cleanup()
		os.Exit(1)
	}
	chaosBin = path
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}
