// Package testbin builds the chaos binary once per test process, for tests
// and benchmarks that run real broker and controller processes.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns the path of a freshly built chaos binary (static, like the
// one the Makefile builds). The binary lives in a temporary directory that
// Cleanup removes; call Cleanup from TestMain.
func Path() (string, error) {
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, e := os.MkdirTemp("", "chaos-testbin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "chaos")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/chaos")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("building chaos: %v\n%s", e, out)
		}
	})
	return path, err
}

// Cleanup removes the built binary.
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
