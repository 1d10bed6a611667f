package cluster

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/internal/clockfault"
)

// The damage a disk fault does (Disks.DamageDisk), as the broker's
// storage names it too (storage.DamageCorrupt, storage.DamageTruncate),
// for the simulation's disks.
const (
	DamageCorrupt  = "corrupt"  // flip one bit
	DamageTruncate = "truncate" // cut a file's tail
)

// damageable says whether a file of a broker's data directory is one a
// disk fault damages: a segment or a checkpoint of a partition, not the
// records of the node's clean shutdown or clock fault, which are the
// tester's and the host's rather than the log's.
func damageable(rel string) bool {
	name := filepath.Base(rel)
	return filepath.Dir(rel) != "." && (strings.HasSuffix(name, ".log") || name == "high-watermark" || name == "leader-epoch-checkpoint")
}

// DamageDir damages one file of a down broker's data directory dir as
// what says: "corrupt" flips one bit, "truncate" cuts the file at a random
// byte. Segments are picked three times in four, else a checkpoint; the
// file and the place come from seed. It says what it did.
func DamageDir(dir, what string, seed uint64) (string, error) {
	var segs, cks []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if info, ierr := d.Info(); ierr != nil || info.Size() == 0 || !damageable(rel) {
			return ierr
		}
		if strings.HasSuffix(rel, ".log") {
			segs = append(segs, rel)
		} else {
			cks = append(cks, rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(segs)
	slices.Sort(cks)
	rng := rand.New(rand.NewPCG(seed, 0x6469736b))
	files := segs
	if len(files) == 0 || len(cks) > 0 && rng.IntN(4) == 0 {
		files = cks
	}
	if len(files) == 0 {
		return "", fmt.Errorf("%s has no segment or checkpoint to damage", dir)
	}
	rel := files[rng.IntN(len(files))]
	path := filepath.Join(dir, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	at := rng.IntN(len(b))
	switch what {
	case DamageCorrupt:
		bit := rng.IntN(8)
		b[at] ^= 1 << bit
		return fmt.Sprintf("%s %s: bit %d of byte %d of %d flipped", what, rel, bit, at, len(b)), os.WriteFile(path, b, 0o644)
	case DamageTruncate:
		return fmt.Sprintf("%s %s: cut at byte %d of %d", what, rel, at, len(b)), os.Truncate(path, int64(at))
	}
	return "", fmt.Errorf("unknown disk damage %q", what)
}

// snapshotSuffix names the copy SnapshotDir keeps beside a data directory.
const snapshotSuffix = ".snapshot"

// SnapshotDir copies down node's data directory dir beside it, replacing
// an older copy; RestoreDir puts the copy back in its place, but for the
// clock fault, which is the host's rather than the disk's.
func SnapshotDir(dir string) error {
	dst := dir + snapshotSuffix
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.CopyFS(dst, os.DirFS(dir))
}

// RestoreDir puts SnapshotDir's copy of dir back in its place.
func RestoreDir(dir string) error {
	src := dir + snapshotSuffix
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("no copy of %s to restore: %w", dir, err)
	}
	clock, clockErr := os.ReadFile(filepath.Join(dir, clockfault.File))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, clockfault.File))
	if clockErr == nil {
		return os.WriteFile(filepath.Join(dir, clockfault.File), clock, 0o644)
	}
	return nil
}
