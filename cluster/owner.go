package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner identifies this process across pid reuse, as "PID:START": its pid
// and its start time in clock ticks since boot (field 22 of
// /proc/PID/stat). What a tester leaves behind when it is killed (a data
// directory, containers) carries it, so a later sweep can tell a leftover
// from what a live tester still uses.
func Owner() string {
	return fmt.Sprintf("%d:%s", os.Getpid(), startTime(os.Getpid()))
}

// OwnerAlive reports whether the process an Owner string names still runs
// on this host. A string it cannot read is taken to be alive: a sweep must
// never remove what a live tester uses.
func OwnerAlive(owner string) bool {
	pidStr, start, ok := strings.Cut(strings.TrimSpace(owner), ":")
	if !ok {
		return true
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return true
	}
	st := startTime(pid)
	return st != "" && st == start
}

func startTime(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after it start past the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Temporary data directories of "chaos cluster up": the prefix of their
// names in the system's temporary directory, and the file in each that
// names its owner.
const (
	tempDirPrefix = "chaos-cluster-"
	ownerFile     = "owner"
)

// NewTempDataDir creates a temporary data directory owned by this process.
// The directory is removed by its owner on a clean exit; one left by an
// owner killed with SIGKILL is found by SweepTempDirs.
func NewTempDataDir() (string, error) {
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(Owner()+"\n"), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// SweepTempDirs removes the temporary data directories whose owner is gone
// and returns them. A directory without an owner file is left alone: its
// owner may be about to write it, or it is not ours.
func SweepTempDirs() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, d := range dirs {
		owner, err := os.ReadFile(filepath.Join(d, ownerFile))
		if errors.Is(err, fs.ErrNotExist) || err == nil && OwnerAlive(string(owner)) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}
