package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Header is the first line of a history file. A file without one is read as
// the current version, so other tools may write bare operations.
type Header struct {
	History string `json:"history"` // always "chaos"
	Version int    `json:"version"`
}

// Writer appends operations to a JSON Lines file, assigning indexes in
// order. Each op is written with one write call, so a killed writer leaves
// whole lines and at most one torn one. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	bw   *bufio.Writer // CreateBuffered's: lines go out in large writes
	next int64
	buf  bytes.Buffer
	err  error
	// kept holds every op written, when Keep asked for them.
	kept []Op
	keep bool
}

// Create creates (truncating) a history file and writes its header.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f}
	if err := w.writeLine(Header{History: "chaos", Version: SchemaVersion}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// CreateBuffered is Create for a writer that cannot afford a write call
// per operation (a simulation writes a minute's history in a fraction of
// a second): lines are written in large chunks, and whole once Close
// returns. A writer killed before that leaves a prefix whose last line
// may be torn, which Read reports as ErrTornTail.
func CreateBuffered(path string) (*Writer, error) {
	w, err := Create(path)
	if err != nil {
		return nil, err
	}
	w.bw = bufio.NewWriterSize(w.f, 1<<20)
	return w, nil
}

func (w *Writer) writeLine(v any) error {
	w.buf.Reset()
	if err := encodeLine(&w.buf, v); err != nil {
		return err
	}
	if w.bw != nil {
		_, err := w.bw.Write(w.buf.Bytes())
		return err
	}
	_, err := w.f.Write(w.buf.Bytes())
	return err
}

// encodeLine appends v as one line of JSON.
func encodeLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Append sets op's index and writes it. It returns the op as written. After
// the first write error every Append returns that error.
func (w *Writer) Append(op Op) (Op, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return op, w.err
	}
	op.Index = w.next
	if err := w.writeLine(op); err != nil {
		w.err = err
		return op, err
	}
	w.next++
	if w.keep {
		w.kept = append(w.kept, op)
	}
	return op, nil
}

// Keep makes the writer keep every op it writes from now on, for Kept: a
// caller that judges the history at once (a simulation, where reading the
// file back would be a third of the run) need not decode what it just
// encoded. The ops are the values given to Append, so the caller must not
// change what they point to after appending them.
func (w *Writer) Keep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keep = true
}

// Kept returns the ops written since Keep, in index order.
func (w *Writer) Kept() []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kept
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bw != nil {
		if err := w.bw.Flush(); err != nil {
			w.f.Close()
			return err
		}
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return err
	}
	return w.f.Close()
}

// ErrTornTail reports that the last line of a history was cut short (the
// writer died mid-line); the ops before it were read.
var ErrTornTail = errors.New("history: the last line is incomplete")

// Read reads a history. A torn last line is dropped and reported as
// ErrTornTail alongside the ops read; any other malformed line is an error
// naming its line number.
func Read(r io.Reader) ([]Op, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var ops []Op
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			complete := b[len(b)-1] == '\n'
			b = bytes.TrimSpace(b)
			if len(b) > 0 {
				op, perr := parseLine(b, line == 1)
				switch {
				case perr != nil && !complete:
					return ops, ErrTornTail
				case perr != nil:
					return ops, fmt.Errorf("history line %d: %w", line, perr)
				case op != nil:
					ops = append(ops, *op)
				}
			}
		}
		if err == io.EOF {
			return ops, nil
		}
		if err != nil {
			return ops, err
		}
	}
}

func parseLine(b []byte, first bool) (*Op, error) {
	if first && bytes.Contains(b, []byte(`"history"`)) {
		var h Header
		if err := json.Unmarshal(b, &h); err == nil && h.History != "" {
			if h.History != "chaos" || h.Version != SchemaVersion {
				return nil, fmt.Errorf("history %q version %d is not chaos version %d", h.History, h.Version, SchemaVersion)
			}
			return nil, nil
		}
	}
	var op Op
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return nil, err
	}
	switch op.Type {
	case Invoke, OK, Fail, Info:
	default:
		return nil, fmt.Errorf("op %d: unknown type %q", op.Index, op.Type)
	}
	return &op, nil
}

// ReadFile reads a history file (see Read).
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
