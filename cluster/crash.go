package cluster

import (
	"errors"
	"os/exec"
	"strings"
)

// How much of a crashed node's log a Crash keeps: its last CrashLogLines
// lines, reaching further back, up to crashLogReach lines from the end, to
// the line a Go panic (or fatal error) starts with, so that the message
// and the stack after it are there whole.
const (
	CrashLogLines = 20
	crashLogReach = 60
)

// NewCrash is node id's crash: its process ended as exit, and log is what
// the incarnation that died wrote. The crash keeps the end of the log and,
// where the log holds a Go panic or fatal error, its message.
func NewCrash(id int, exit, log string) Crash {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	from := max(len(lines)-CrashLogLines, 0)
	c := Crash{ID: id, Exit: exit}
	for i := max(len(lines)-crashLogReach, 0); i < len(lines); i++ {
		if msg, ok := strings.CutPrefix(lines[i], "panic: "); ok {
			c.Panic, from = msg, min(from, i)
			break
		}
		if strings.HasPrefix(lines[i], "fatal error: ") {
			c.Panic, from = lines[i], min(from, i)
			break
		}
	}
	c.Log = strings.Join(lines[from:], "\n")
	return c
}

// ExitText is how a child process ended, as exec says it ("exit status
// 2", "signal: killed"); a process that ended well is "exit status 0".
func ExitText(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.Error()
	}
	return err.Error()
}
