package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCleanShutdownRecord: the record survives a reopen of the directory
// (a new process), is read once, and a damaged one counts as no clean
// shutdown, with an error that says why.
func TestCleanShutdownRecord(t *testing.T) {
	for _, f := range []CleanShutdown{DiskFactory{Dir: t.TempDir()}, &MemoryFactory{}} {
		if epoch, err := f.TakeClean(); epoch != 0 || err != nil {
			t.Fatalf("%T: fresh record %d %v, want none", f, epoch, err)
		}
		if err := f.MarkClean(42); err != nil {
			t.Fatal(err)
		}
		if mf, ok := f.(*MemoryFactory); ok {
			mf.LoseUnsynced() // a power loss keeps what a clean shutdown synced
		}
		if epoch, err := f.TakeClean(); epoch != 42 || err != nil {
			t.Fatalf("%T: record %d %v, want 42", f, epoch, err)
		}
		if epoch, _ := f.TakeClean(); epoch != 0 {
			t.Fatalf("%T: record read twice (%d): a crash of the process that read it would pass for clean", f, epoch)
		}
	}
	d := DiskFactory{Dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(d.Dir, cleanShutdownFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if epoch, err := d.TakeClean(); epoch != 0 || err == nil {
		t.Fatalf("damaged record: %d %v, want 0 and an error", epoch, err)
	}
}
