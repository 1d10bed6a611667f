package report

import (
	"bufio"
	"embed"
	"html/template"
	"io"
)

// The pages are html/template templates: every value from a history,
// test.json or results.json is escaped for where it lands (text,
// attribute, URL), since a history may come from another tool.
//
//go:embed templates/*.tmpl
var templateFS embed.FS

var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).ParseFS(templateFS, "templates/*.tmpl"))

// PW and PH are the plot area's width and height; YMid its vertical middle.
func (p *plotView) PW() float64   { return r1(p.X1 - p.X0) }
func (p *plotView) PH() float64   { return r1(p.Y1 - p.Y0) }
func (p *plotView) YMid() float64 { return r1((p.Y0 + p.Y1) / 2) }

// execute renders a page through a buffer: a page is many small writes.
func execute(w io.Writer, name string, data any) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := pages.ExecuteTemplate(bw, name, data); err != nil {
		return err
	}
	return bw.Flush()
}
