package serve

import (
	"bytes"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
)

// Handler serves one store directory. root is the store's real path
// (symlinks resolved), against which every request's real path is checked.
type Handler struct {
	root string
}

// NewHandler serves the store at store, which must be a directory.
func NewHandler(store string) (*Handler, error) {
	abs, err := filepath.Abs(store)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such directory")
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errors.New("not a directory")
	}
	return &Handler{root: real}, nil
}

// Root is the store's real path.
func (h *Handler) Root() string { return h.root }

// errOutside marks a request for something outside the store.
var errOutside = errors.New("outside the store")

// resolve maps a URL path to a real file under the store. It refuses ".."
// segments outright rather than cleaning them away, so that a link that
// tries to climb out gets an answer saying so, and it resolves symlinks so
// that store/latest works but a link to /etc does not.
func (h *Handler) resolve(urlPath string) (string, error) {
	for _, seg := range strings.Split(urlPath, "/") {
		if seg == ".." {
			return "", errOutside
		}
	}
	if strings.ContainsRune(urlPath, 0) || strings.Contains(urlPath, "\\") {
		return "", errOutside
	}
	return h.inside(filepath.Join(h.root, filepath.FromSlash(strings.TrimPrefix(urlPath, "/"))))
}

// inside resolves the symlinks of a path below the store and returns its
// real path, or errOutside if that leads out of the store.
func (h *Handler) inside(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(h.root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", errOutside
	}
	return real, nil
}

// loopbackHost reports whether a request's Host header names this
// machine: localhost or a loopback address, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	// Listening on loopback keeps other machines out, but not a web page
	// in the user's browser that rebinds its own name to 127.0.0.1 to read
	// the store: such requests carry that name as their Host.
	if !loopbackHost(r.Host) {
		http.Error(w, "refused: chaos serve answers requests for localhost or a loopback address only", http.StatusForbidden)
		return
	}
	urlPath := r.URL.Path
	switch urlPath {
	case "/", "":
		h.front(w, r)
		return
	case "/favicon.ico":
		// Browsers ask for it on every site; a 404 would be a console
		// error on every page.
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write([]byte(favicon))
		return
	}
	real, err := h.resolve(urlPath)
	switch {
	case errors.Is(err, errOutside):
		http.Error(w, "refused: "+urlPath+" is outside the store", http.StatusForbidden)
		return
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		http.NotFound(w, r)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fi, err := os.Stat(real)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if fi.IsDir() {
		h.dir(w, r, real)
		return
	}
	f, err := os.Open(real)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	// Histories and logs are text. So is anything else without a known
	// type: left empty, ServeContent would guess from the first bytes, and
	// a node's data file that starts with a record reading "<html>" would
	// become a page.
	if ext := filepath.Ext(real); ext == ".jsonl" || ext == ".log" || mime.TypeByExtension(ext) == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

func (h *Handler) front(w http.ResponseWriter, _ *http.Request) {
	view, err := report.ScanStore(h.root)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := report.RenderStore(&buf, view); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// dir sends a run to its report, a campaign to its index and a hunt to
// its page, rendering
// them first if they are missing (runs stored by an older chaos, or
// interrupted before the report was written); other directories (node
// logs) get a plain listing.
func (h *Handler) dir(w http.ResponseWriter, r *http.Request, real string) {
	// Links and redirects are built from the cleaned path and escaped: a
	// request for "//name/run/" must not redirect to the host "name", nor
	// a directory called "a?b" link to a query.
	base := path.Clean("/"+r.URL.Path) + "/"
	if base == "//" {
		base = "/"
	}
	href := func(name string) string { return (&url.URL{Path: base + name}).EscapedPath() }
	for _, page := range []struct{ marker, file string }{{results.TestFile, results.ReportFile}, {results.CampaignFile, results.CampaignIndexFile}, {results.HuntFile, results.HuntPageFile}} {
		if _, err := os.Stat(filepath.Join(real, page.marker)); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(real, page.file)); err != nil {
			// The page would show what these files hold, so they are
			// held to the same rule as a file asked for directly.
			for _, in := range []string{page.marker, results.HistoryFile, results.ResultsFile} {
				if _, err := h.inside(filepath.Join(real, in)); errors.Is(err, errOutside) {
					http.Error(w, "refused: "+in+" leads outside the store", http.StatusForbidden)
					return
				}
			}
			if _, err := report.WritePage(real, nil); err != nil {
				http.Error(w, "rendering "+page.file+": "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		http.Redirect(w, r, href(page.file), http.StatusFound)
		return
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	type entry struct {
		Name, Href string
		Size       int64
		Dir        bool
	}
	var list []entry
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		list = append(list, entry{Name: e.Name(), Href: href(name), Size: fi.Size(), Dir: e.IsDir()})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = listingPage.Execute(w, struct {
		Path    string
		Entries []entry
	}{base, list})
}

const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1a7f37"/><path d="M3 9l3 3 7-8" stroke="#fff" stroke-width="2" fill="none"/></svg>`

var listingPage = template.Must(template.New("listing").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Path}} - chaos store</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}td{padding:2px 12px}</style></head>
<body><p><a href="/">store</a></p><h1>{{.Path}}</h1>
<table id="listing">{{range .Entries}}<tr><td><a href="{{.Href}}">{{.Name}}{{if .Dir}}/{{end}}</a></td><td>{{if not .Dir}}{{.Size}} bytes{{end}}</td></tr>
{{end}}</table></body></html>
`))
