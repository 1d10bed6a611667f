package storage

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestKillProcess crashes a real process: a child appends, syncs part of
// what it appended, reports, and is killed with SIGKILL. LoseUnsynced must
// lose exactly the unsynced suffix, and without it the page cache keeps all.
func TestKillProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, lose := range []bool{true, false} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
		cmd.Env = append(os.Environ(), "STORAGE_KILL_CHILD_DIR="+dir)
		if lose {
			cmd.Env = append(cmd.Env, "STORAGE_KILL_CHILD_LOSE=1")
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child said %q: %v", line, err)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		d := openDisk(t, DiskFactory{Dir: dir})
		want := int64(10)
		if lose {
			want = 6
		}
		if d.LogEndOffset() != want || d.HighWatermark() != 4 || d.Recovery().TruncatedAt != -1 {
			t.Fatalf("lose=%v: end %d hw %d recovery %+v, want end %d hw 4", lose, d.LogEndOffset(), d.HighWatermark(), d.Recovery(), want)
		}
		checkValues(t, readAll(t, d), 0, want)
	}
}

// TestKillChild is the child of TestKillProcess; it does nothing otherwise.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("STORAGE_KILL_CHILD_DIR")
	if dir == "" {
		t.Skip("only run by TestKillProcess")
	}
	d := openDisk(t, DiskFactory{Dir: dir, Options: Options{LoseUnsynced: os.Getenv("STORAGE_KILL_CHILD_LOSE") != ""}})
	fill(t, d, 0, 1, 2, 2, 2)
	d.SetHighWatermark(4)
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, d)
	fill(t, d, 1, 1, 2, 2)
	d.SetHighWatermark(8)
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Hour) // until killed
}
