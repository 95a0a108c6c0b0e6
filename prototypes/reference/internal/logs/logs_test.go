package logs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestRowsAreWholeLinesUnderConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.csv")
	f, err := Create(path, "a,b")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				f.Row(func(b []byte) []byte {
					b = strconv.AppendInt(b, int64(g), 10)
					b = append(b, ',')
					return strconv.AppendInt(b, int64(i), 10)
				})
				if i%100 == 0 {
					_ = f.Flush()
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "a,b" || len(lines) != 8001 {
		t.Fatalf("header %q, %d lines", lines[0], len(lines))
	}
	for _, l := range lines[1:] {
		if strings.Count(l, ",") != 1 {
			t.Fatalf("torn line %q", l)
		}
	}
}

func TestWriteJSONAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	if err := WriteJSONAtomic(path, map[string]int{"schema": 1}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"schema": 1`) {
		t.Fatalf("got %s", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
