package main

import (
	"bufio"
	"fmt"
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
	h, err := newStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// Raw requests: an HTTP client would clean some of these paths itself.
	raw := func(path string) int {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{
		"/../secret.txt",
		"/t/../../secret.txt",
		"/%2e%2e/secret.txt",
		"/t/%2E%2E/%2e%2e/secret.txt",
		"/escape/secret.txt",
		"/escape/",
		"/..%2fsecret.txt",
	} {
		if code := raw(p); code != http.StatusForbidden {
			t.Errorf("GET %s: status %d, want 403", p, code)
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
