package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's headless-capable browser. In CI (.ci/run
// installs it) a missing browser fails the test; elsewhere it skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: .ci/run installs Debian's chromium package for the report tests")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); the report pages are not loaded in a browser")
	return ""
}

// artifactDir is where screenshots go: $CHAOS_ARTIFACTS/<test> when set
// (.ci/run sets it so they outlive the test), else the test's artifact
// directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if root := os.Getenv("CHAOS_ARTIFACTS"); root != "" {
		dir := filepath.Join(root, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(t.Name(), "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// serveStoreProcess starts "chaos serve" on a free loopback port and
// returns its base URL; the process is stopped when the test ends.
func serveStoreProcess(t *testing.T, store string) string {
	t.Helper()
	cmd := exec.Command(chaosBin(t), "serve", "--store", store, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`at (http://\S+/)`).FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("chaos serve printed no address within 10 s")
		return ""
	}
}

// page is one page to load and what it must hold.
type page struct {
	name string   // screenshot file name
	url  string   // absolute
	ids  []string // elements that must be present and visible
	// texts must each occur in the page's visible text.
	texts []string
}

// loaded is what a browser saw of a page.
type loaded struct {
	problems []string // console errors, uncaught exceptions, browser log errors
	missing  []string // ids absent or with no size
	text     string   // the visible text
	shot     []byte   // a full-page PNG
}

// newBrowser starts headless Chromium for the test.
func newBrowser(t *testing.T) context.Context { return newBrowserAt(t, 1400, 1000) }

// newBrowserAt starts headless Chromium with a window of w x h.
func newBrowserAt(t *testing.T, w, h int) context.Context {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(w, h),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return bctx
}

// load opens url in a new tab of the browser and reports what it saw.
func load(browser context.Context, url string, ids []string) (loaded, error) {
	var out loaded
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	var mu sync.Mutex
	msgs := chromedp.Console(tab)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				out.problems = append(out.problems, m.String())
				mu.Unlock()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("body")); err != nil {
		return out, fmt.Errorf("loading %s: %w", url, err)
	}
	for _, id := range ids {
		js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); if (!e) return false; const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`, id)
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			return out, err
		}
		if !visible {
			out.missing = append(out.missing, "#"+id)
		}
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		return out, err
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG, which every viewer opens
	if err != nil {
		return out, err
	}
	// Late console messages (a script that fails after load) get a moment
	// to arrive before the tab closes.
	time.Sleep(300 * time.Millisecond)
	cancelTab()
	<-drained
	mu.Lock()
	defer mu.Unlock()
	out.text, out.shot = text, shot
	return out, nil
}

// loadPages loads each page in headless Chromium and fails the test on a
// console error, an uncaught exception, a browser log error (a failed
// resource load, a blocked request), a missing or invisible element, or
// missing text; it saves a full-page screenshot of each.
func loadPages(t *testing.T, pages []page) {
	t.Helper()
	browser := newBrowser(t)
	dir := artifactDir(t)
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			got, err := load(browser, p.url, p.ids)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, p.name+".png")
			if err := os.WriteFile(name, got.shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: screenshot %s (%d bytes)", p.url, name, len(got.shot))
			for _, pr := range got.problems {
				t.Errorf("%s: %s", p.url, pr)
			}
			if len(got.missing) > 0 {
				t.Errorf("%s: missing or invisible elements %v", p.url, got.missing)
			}
			for _, want := range p.texts {
				if !strings.Contains(got.text, want) {
					t.Errorf("%s: the page does not show %q", p.url, want)
				}
			}
		})
	}
}

// TestBrowserCheckHasTeeth: the page check itself must catch what it is
// for: a console error, an uncaught exception, a failed resource load and
// a missing element, and pass a clean page.
func TestBrowserCheckHasTeeth(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/bad", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body><div id="here">here</div><img src="/missing.png">
<script>console.error("boom"); setTimeout(() => { null.x }, 10);</script></body></html>`)
	})
	mux.HandleFunc("/good", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body><div id="here">all good</div></body></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	browser := newBrowser(t)
	bad, err := load(browser, srv.URL+"/bad", []string{"here", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(bad.problems, "\n")
	for _, want := range []string{"boom", "null", "404"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the check missed %q; it saw:\n%s", want, joined)
		}
	}
	if len(bad.missing) != 1 || bad.missing[0] != "#absent" {
		t.Errorf("missing elements %v, want [#absent]", bad.missing)
	}
	good, err := load(browser, srv.URL+"/good", []string{"here"})
	if err != nil {
		t.Fatal(err)
	}
	if len(good.problems)+len(good.missing) > 0 || !strings.Contains(good.text, "all good") || len(good.shot) == 0 {
		t.Errorf("a clean page: problems %v, missing %v, text %q, %d-byte screenshot", good.problems, good.missing, good.text, len(good.shot))
	}
}

// httpGet returns a URL's status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
