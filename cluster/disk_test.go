package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/internal/clockfault"
)

// brokerDir writes a data directory in a broker's layout.
func brokerDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"t-0/00000000000000000000.log": strings.Repeat("x", 1000),
		"t-0/high-watermark":           "1\n7\n123\n",
		"t-0/leader-epoch-checkpoint":  "0\n1\n0 0\n",
		".chaos-clean-shutdown":        "5\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDamageDir: each seed damages exactly one segment or checkpoint
// file, by one bit or a cut tail, the same way for the same seed, and
// never the clean-shutdown record.
func TestDamageDir(t *testing.T) {
	for _, what := range []string{DamageCorrupt, DamageTruncate} {
		for seed := uint64(1); seed <= 20; seed++ {
			a, b := brokerDir(t), brokerDir(t)
			da, err := DamageDir(a, what, seed)
			if err != nil {
				t.Fatal(err)
			}
			if db, _ := DamageDir(b, what, seed); db != da {
				t.Fatalf("seed %d: %q, then %q: not reproducible", seed, da, db)
			}
			changed := 0
			fresh := brokerDir(t)
			filepath.WalkDir(fresh, func(path string, d os.DirEntry, err error) error {
				if d.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(fresh, path)
				want, _ := os.ReadFile(path)
				got, _ := os.ReadFile(filepath.Join(a, rel))
				if string(got) != string(want) {
					changed++
					if !damageable(rel) {
						t.Errorf("seed %d: %s damaged", seed, rel)
					}
					if what == DamageTruncate && len(got) >= len(want) || what == DamageCorrupt && len(got) != len(want) {
						t.Errorf("seed %d: %s is %d bytes after %s, was %d", seed, rel, len(got), what, len(want))
					}
				}
				return nil
			})
			if changed != 1 {
				t.Fatalf("seed %d: %s changed %d files (%s)", seed, what, changed, da)
			}
		}
	}
}

// TestSnapshotRestore: a restored directory is the copy, but for the
// clock fault, which is the host's.
func TestSnapshotRestore(t *testing.T) {
	dir := brokerDir(t)
	if err := SnapshotDir(dir); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "t-0/00000000000000000000.log")
	if err := os.WriteFile(seg, []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t-0/new-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := clockfault.Write(dir, clockfault.Fault{Offset: 3e9, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	if err := RestoreDir(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(seg); string(b) != strings.Repeat("x", 1000) {
		t.Fatalf("segment after the restore: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0/new-file")); err == nil {
		t.Fatal("a file made after the copy survived the restore")
	}
	if f, err := clockfault.Read(dir); err != nil || f.True() {
		t.Fatalf("clock fault after the restore: %+v %v", f, err)
	}
}
