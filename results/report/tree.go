package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/results"
)

// WriteTree renders every run, campaign and hunt at or below root, calling done
// for each page, and returns how many it found. Symlinks are not followed:
// store/latest is another name for a run already visited. show, if not
// nil, is told how far a run's history has been read (WritePage).
func WriteTree(root string, done func(page string, err error), show func(string)) (int, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%s is not a directory", root)
	}
	found := 0
	visit := func(dir string) bool {
		page, err := WritePage(dir, show)
		if errors.Is(err, ErrNotRunDir) {
			return false
		}
		found++
		if err != nil {
			err = fmt.Errorf("%s: %w", dir, err)
		}
		done(page, err)
		return true
	}
	// The root itself may be a symlink such as store/latest.
	if visit(root) {
		return found, nil
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == root {
			return nil
		}
		if visit(path) {
			return filepath.SkipDir
		}
		return nil
	})
	return found, err
}

// WriteTrees is chaos report: it renders every run, campaign and hunt below each
// of roots, printing each page written on out and each that could not be
// on errOut; an error says why not every root gave pages.
func WriteTrees(out, errOut io.Writer, roots []string) error {
	failed := 0
	// On a terminal, how far a long run's history has been read, on a
	// line of errOut the page's path then takes.
	line := statusline.New(errOut)
	var show func(string)
	if line.TTY {
		show = line.Show
	}
	for _, root := range roots {
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("PATH: no such file or directory, got %q; chaos report takes run, campaign or hunt directories, or a directory above them%s",
				root, results.RunsHint(results.NearestDir(root)))
		}
		n, err := WriteTree(root, func(page string, err error) {
			if show != nil {
				show("")
			}
			if err != nil {
				failed++
				fmt.Fprintf(errOut, "chaos: %v\n", err)
				return
			}
			fmt.Fprintln(out, page)
		}, show)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s holds no run (test.json), campaign (campaign.json) or hunt (hunt.json)", root)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d page(s) could not be rendered", failed)
	}
	return nil
}
