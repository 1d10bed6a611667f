package storage

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/internal/atomicfile"
)

// Checkpoint file names in a partition directory. The epoch file uses
// Kafka's format (version 0, a count, then "epoch startOffset" lines); it
// is only cross-checked, as the batches say the epochs. The HW file, which
// Kafka keeps per log directory, is per partition here: version 1, the
// HW and a CRC-32C of the HW's line, so that a damaged file is read as
// none (a lower HW is safe; a higher one would serve what is not
// committed) rather than as another number; version 0, without the
// checksum, is still read.
const (
	hwFile    = "high-watermark"
	epochFile = "leader-epoch-checkpoint"
	tmpSuffix = ".tmp"
)

func formatHW(hw int64) []byte {
	line := strconv.FormatInt(hw, 10)
	return []byte("1\n" + line + "\n" + strconv.FormatUint(uint64(crc32.Checksum([]byte(line), castagnoli)), 10) + "\n")
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func parseHW(b []byte) (int64, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	switch {
	case len(lines) == 2 && lines[0] == "0":
	case len(lines) == 3 && lines[0] == "1":
		if sum, err := strconv.ParseUint(lines[2], 10, 32); err != nil || uint32(sum) != crc32.Checksum([]byte(lines[1]), castagnoli) {
			return 0, fmt.Errorf("storage: %s fails its checksum", hwFile)
		}
	default:
		return 0, fmt.Errorf("storage: malformed %s", hwFile)
	}
	return strconv.ParseInt(lines[1], 10, 64)
}

func formatEpochs(es []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(es))
	for _, e := range es {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func parseEpochs(b []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("storage: malformed %s", epochFile)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("storage: malformed %s: count", epochFile)
	}
	es := make([]EpochEntry, 0, n)
	for _, l := range lines[2:] {
		var e EpochEntry
		if _, err := fmt.Sscanf(l, "%d %d", &e.Epoch, &e.StartOffset); err != nil {
			return nil, fmt.Errorf("storage: malformed %s: %q", epochFile, l)
		}
		es = append(es, e)
	}
	return es, nil
}

// writeAtomic replaces dir/name so that a crash leaves either the old or the
// new content, never a mix: write a temporary file, sync it, rename it over
// the old one and sync the directory so that the rename itself is durable.
func writeAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes creations, renames and removals in dir durable.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
