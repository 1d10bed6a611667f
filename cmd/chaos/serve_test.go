package main

import (
	"github.com/chaos-isr/chaos/results/serve"

	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesOutsideStore: chaos serve answers 403 for every way out
// of the store a request can try (".." segments raw and escaped, a
// symlink to outside, an absolute path smuggled in), serves files and
// store/latest inside it, and refuses to listen on a non-loopback address.
func TestServeRefusesOutsideStore(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "store")
	run := filepath.Join(store, "t", "20260101T000000.000Z")
	if err := os.MkdirAll(filepath.Join(run, "cluster"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "cluster", "broker-1.log"), []byte("hello from broker 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "secret.txt")
	if err := os.WriteFile(secret, []byte("do not serve"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(store, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("t", "20260101T000000.000Z"), filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	srv := storeServer(t, store)

	for _, p := range []string{
		"/../secret.txt",
		"/t/../../secret.txt",
		"/%2e%2e/secret.txt",
		"/t/%2E%2E/%2e%2e/secret.txt",
		"/escape/secret.txt",
		"/escape/",
		"/..%2fsecret.txt",
		"/t%5c..%5c..%5csecret.txt",
		"/t/%00secret.txt",
	} {
		if code, _, _ := rawGet(t, srv.URL, p, "127.0.0.1"); code != http.StatusForbidden {
			t.Errorf("GET %s: status %d, want 403", p, code)
		}
	}
	// An absolute path is taken as one below the store, where nothing is.
	for _, p := range []string{"/" + secret, "//" + strings.TrimPrefix(secret, "/"), "/%2F" + strings.TrimPrefix(secret, "/")} {
		if code, _, body := rawGet(t, srv.URL, p, "127.0.0.1"); code != http.StatusNotFound || strings.Contains(body, "do not serve") {
			t.Errorf("GET %s: status %d, want 404:\n%s", p, code, body)
		}
	}
	if code, body := httpGet(t, srv.URL+"/latest/cluster/broker-1.log"); code != 200 || !strings.Contains(body, "hello from broker 1") {
		t.Errorf("GET a node log through store/latest: %d %q", code, body)
	}
	if code, _ := httpGet(t, srv.URL+"/t/nothing-here"); code != http.StatusNotFound {
		t.Errorf("GET a missing file: %d, want 404", code)
	}
	if code, body := httpGet(t, srv.URL+"/t/"); code != 200 || !strings.Contains(body, "20260101T000000.000Z") {
		t.Errorf("GET a test directory: %d, want a listing naming its run:\n%s", code, body)
	}

	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", ":8080"} {
		out, code := runChaos(t, "serve", "--store", store, "--addr", addr)
		if code != exitErrorCode || !strings.Contains(out, "loopback") {
			t.Errorf("chaos serve --addr %s: exit %d, want %d and a reason naming loopback:\n%s", addr, code, exitErrorCode, out)
		}
	}
	if out, code := runChaos(t, "serve", "--store", filepath.Join(root, "no-such-store")); code != exitErrorCode {
		t.Errorf("chaos serve on a missing store: exit %d:\n%s", code, out)
	}
}

// storeServer serves store over HTTP for the test.
func storeServer(t *testing.T, store string) *httptest.Server {
	t.Helper()
	h, err := serve.NewHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// writeFiles creates dir with the given files in it.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rawGet sends a GET for path with the given Host header on a connection of
// its own, as written: an HTTP client would clean some paths itself.
func rawGet(t *testing.T, base, path, host string) (code int, location, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// TestServeHostsAndLinks: chaos serve answers only requests addressed to
// this machine (a page that rebinds its own name to 127.0.0.1 must not
// read the store), redirects and links stay on the server and inside the
// path asked for, and a file of no known type is text, never a page.
func TestServeHostsAndLinks(t *testing.T) {
	store := t.TempDir()
	writeFiles(t, filepath.Join(store, "t", "a?b#c"), map[string]string{
		"report.html": "<!doctype html><p>report</p>", "test.json": "{}", "data": "<html><script>alert(1)</script>"})
	srv := storeServer(t, store)
	const runURL = "/t/a%3Fb%23c/"
	for _, host := range []string{"127.0.0.1", "127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080"} {
		if code, _, _ := rawGet(t, srv.URL, "/", host); code != http.StatusOK {
			t.Errorf("Host %s: status %d, want 200", host, code)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "0.0.0.0:8080", "192.0.2.1"} {
		if code, _, _ := rawGet(t, srv.URL, runURL+"report.html", host); code != http.StatusForbidden {
			t.Errorf("Host %s: status %d, want 403", host, code)
		}
	}
	for _, p := range []string{runURL, "/" + runURL, "//t/a%3Fb%23c"} {
		code, loc, _ := rawGet(t, srv.URL, p, "127.0.0.1")
		if code != http.StatusFound || loc != runURL+"report.html" {
			t.Errorf("GET %s: status %d, Location %q; want 302 to %s", p, code, loc, runURL+"report.html")
		}
	}
	if code, _, body := rawGet(t, srv.URL, "//t/", "127.0.0.1"); code != http.StatusOK || !strings.Contains(body, `href="`+runURL+`"`) {
		t.Errorf("GET //t/: status %d, want a listing linking to %s:\n%s", code, runURL, body)
	}
	resp, err := http.Get(srv.URL + runURL + "data")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("a file of no known type starting with <html> is served as %q, want text/plain", ct)
	}
	if code, _, _ := rawGet(t, srv.URL, runURL+"test.json/x", "127.0.0.1"); code != http.StatusNotFound {
		t.Errorf("GET below a file: status %d, want 404", code)
	}

	// A hunt without its page: listed on the front page, and its
	// directory sends to the page, rendered on the way.
	hunt := filepath.Join(store, "hunts", "20260101T000000.000Z")
	writeFiles(t, hunt, map[string]string{"hunt.json": `{"format":1,"seed":3,"status":"complete","start":"2026-01-01T00:00:00Z","runs":4,"valid":4}`})
	if code, _, body := rawGet(t, srv.URL, "/", "127.0.0.1"); code != http.StatusOK || !strings.Contains(body, `href="./hunts/20260101T000000.000Z/"`) {
		t.Errorf("the front page (status %d) does not list the hunt:\n%s", code, body)
	}
	if code, loc, _ := rawGet(t, srv.URL, "/hunts/20260101T000000.000Z/", "127.0.0.1"); code != http.StatusFound || loc != "/hunts/20260101T000000.000Z/hunt.html" {
		t.Errorf("GET a hunt's directory: status %d, Location %q; want 302 to its hunt.html", code, loc)
	}
	if page, err := os.ReadFile(filepath.Join(hunt, "hunt.html")); err != nil || !strings.Contains(string(page), "NOT FOUND") {
		t.Errorf("the hunt's page was not rendered (%v)", err)
	}
}

// TestServeRendersOnlyInsideTheStore: a run without a report gets one on
// first visit, written into its directory, also when reached through
// store/latest; a link to a run directory outside the store is refused
// and nothing is written there, and nothing is rendered from a file that
// links out of the store.
func TestServeRendersOnlyInsideTheStore(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "store")
	run := filepath.Join(store, "t", "20260101T000000.000Z")
	outside := filepath.Join(root, "elsewhere", "run")
	for _, dir := range []string{run, outside} {
		writeFiles(t, dir, map[string]string{"test.json": `{"name":"t","seed":5}`})
	}
	if err := os.Symlink(filepath.Join("t", "20260101T000000.000Z"), filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(store, "t", "out")); err != nil {
		t.Fatal(err)
	}
	srv := storeServer(t, store)
	code, loc, _ := rawGet(t, srv.URL, "/latest/", "127.0.0.1")
	if code != http.StatusFound || loc != "/latest/report.html" {
		t.Fatalf("GET /latest/: status %d, Location %q", code, loc)
	}
	if _, err := os.Stat(filepath.Join(run, "report.html")); err != nil {
		t.Fatalf("no report rendered into the run: %v", err)
	}
	if code, body := httpGet(t, srv.URL+loc); code != 200 || !strings.Contains(body, `id="verdict"`) {
		t.Errorf("GET %s: %d", loc, code)
	}
	for _, p := range []string{"/t/out/", "/t/out/test.json"} {
		if code, _, _ := rawGet(t, srv.URL, p, "127.0.0.1"); code != http.StatusForbidden {
			t.Errorf("GET %s: status %d, want 403", p, code)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("the run outside the store has %d files, want its test.json alone", len(entries))
	}
	// A run inside the store whose history is a link out: its report
	// would show that file, so it is not rendered.
	planted := filepath.Join(store, "t", "20260102T000000.000Z")
	writeFiles(t, planted, map[string]string{"test.json": `{"name":"t"}`})
	if err := os.Symlink(filepath.Join(outside, "test.json"), filepath.Join(planted, "history.jsonl")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := rawGet(t, srv.URL, "/t/20260102T000000.000Z/", "127.0.0.1"); code != http.StatusForbidden {
		t.Errorf("GET a run whose history links out of the store: status %d, want 403", code)
	}
	if _, err := os.Stat(filepath.Join(planted, "report.html")); err == nil {
		t.Error("a report was rendered from a history outside the store")
	}
}
