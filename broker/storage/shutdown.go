package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CleanShutdown is the record a broker leaves when it shuts down cleanly
// (every log synced and closed), Kafka's .kafka_cleanshutdown file: the
// next process tells the controller, which keeps a replica that shut down
// cleanly eligible for election (KIP-966) and takes one that crashed, and
// may have lost its unsynced writes, out of the eligible set.
type CleanShutdown interface {
	// MarkClean records that the process that ran with broker epoch
	// epoch shut down cleanly, durably.
	MarkClean(epoch int64) error
	// TakeClean returns the broker epoch MarkClean recorded, or 0 if
	// there is none, and removes the record, so that a crash of the
	// process that read it is not taken for a clean shutdown.
	TakeClean() (int64, error)
}

// cleanShutdownFile is the record's name in a DiskFactory's directory.
const cleanShutdownFile = ".chaos-clean-shutdown"

// MarkClean implements CleanShutdown.
func (f DiskFactory) MarkClean(epoch int64) error {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	return writeAtomic(f.Dir, cleanShutdownFile, []byte(strconv.FormatInt(epoch, 10)+"\n"))
}

// TakeClean implements CleanShutdown. A record that cannot be read as an
// epoch counts as none: the shutdown is then judged unclean, which only
// costs the replica its eligibility.
func (f DiskFactory) TakeClean() (int64, error) {
	path := filepath.Join(f.Dir, cleanShutdownFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.Remove(path); err != nil {
		return 0, err
	}
	if err := syncDir(f.Dir); err != nil {
		return 0, err
	}
	epoch, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if perr != nil || epoch <= 0 {
		return 0, fmt.Errorf("%s holds %q, not a broker epoch", path, data)
	}
	return epoch, nil
}

// MarkClean implements CleanShutdown. The record is durable: LoseUnsynced
// keeps it.
func (f *MemoryFactory) MarkClean(epoch int64) error {
	f.cleanEpoch = epoch
	return nil
}

// TakeClean implements CleanShutdown.
func (f *MemoryFactory) TakeClean() (int64, error) {
	epoch := f.cleanEpoch
	f.cleanEpoch = 0
	return epoch, nil
}
