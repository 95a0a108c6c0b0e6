// Package logs writes the contract's log files: CSV files written in whole lines
// (so a SIGKILL never leaves half a row) and the per-process metadata JSON, written
// atomically.
package logs

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// File is one CSV log. Rows are appended to an in-memory buffer and written by Flush
// with one write call, which only ever contains whole lines.
type File struct {
	path string
	f    *os.File
	// flushMu serialises flushes: each owns the spare buffer while it writes.
	flushMu sync.Mutex
	mu      sync.Mutex
	buf     []byte
	spare   []byte
	err     error
}

// Create creates path (truncating it) and writes the header line.
func Create(path, header string) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log %s: %w", path, err)
	}
	lf := &File{path: path, f: f, buf: make([]byte, 0, 64<<10), spare: make([]byte, 0, 64<<10)}
	lf.buf = append(lf.buf, header...)
	lf.buf = append(lf.buf, '\n')
	return lf, lf.Flush()
}

// Row appends one line: fn appends the fields (without the trailing newline).
func (lf *File) Row(fn func(b []byte) []byte) {
	lf.mu.Lock()
	lf.buf = fn(lf.buf)
	lf.buf = append(lf.buf, '\n')
	lf.mu.Unlock()
}

// Flush writes the buffered lines. It swaps buffers under the lock and writes outside
// it, so a slow disk never blocks the senders that log rows.
func (lf *File) Flush() error {
	lf.flushMu.Lock()
	defer lf.flushMu.Unlock()
	lf.mu.Lock()
	out := lf.buf
	lf.buf = lf.spare[:0]
	lf.mu.Unlock()
	var err error
	if len(out) > 0 {
		if _, werr := lf.f.Write(out); werr != nil {
			err = fmt.Errorf("write log %s: %w", lf.path, werr)
		}
	}
	lf.mu.Lock()
	lf.spare = out[:0]
	if err != nil && lf.err == nil {
		lf.err = err
	}
	err = lf.err
	lf.mu.Unlock()
	return err
}

// Close flushes and closes the file.
func (lf *File) Close() error {
	err := lf.Flush()
	if cerr := lf.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close log %s: %w", lf.path, cerr)
	}
	return err
}

// Flusher flushes a set of files periodically until stopped, so a killed process
// loses at most one period of rows.
type Flusher struct {
	files []*File
	stop  chan struct{}
	done  chan struct{}
	// Err receives the first write error (buffered, one value).
	Err chan error
}

// StartFlusher flushes files every period.
func StartFlusher(period time.Duration, files ...*File) *Flusher {
	fl := &Flusher{files: files, stop: make(chan struct{}), done: make(chan struct{}), Err: make(chan error, 1)}
	go func() {
		defer close(fl.done)
		t := time.NewTicker(period)
		defer t.Stop()
		reported := false
		for {
			select {
			case <-fl.stop:
				return
			case <-t.C:
				for _, f := range files {
					if err := f.Flush(); err != nil && !reported {
						reported = true
						fl.Err <- err
					}
				}
			}
		}
	}()
	return fl
}

// Stop stops the periodic flushing and closes every file.
func (fl *Flusher) Stop() error {
	close(fl.stop)
	<-fl.done
	var first error
	for _, f := range fl.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Event appends one row of an events log (CONTRACT.md §3.3): player < 0 leaves the
// player column empty (a process-level event); detail must already be free of commas.
func (lf *File) Event(player int64, name, value, detail string) {
	t := time.Now().UnixNano()
	lf.Row(func(b []byte) []byte {
		b = strconv.AppendInt(b, t, 10)
		b = append(b, ',')
		if player >= 0 {
			b = strconv.AppendInt(b, player, 10)
		}
		b = append(b, ',')
		b = append(b, name...)
		b = append(b, ',')
		b = append(b, value...)
		b = append(b, ',')
		return append(b, detail...)
	})
}

// Sanitize makes free text safe for one CSV field without quoting and for one value of a
// space-separated key=value detail.
func Sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ',' || c == '\n' || c == '\r' || c == ' ' {
			b[i] = '_'
		}
	}
	return string(b)
}
