package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadAtMostStopsPastTheLimit: a file is read whole up to the limit and
// refused one byte past it, whether its size is known beforehand (a
// regular file, however it grows after it was listed) or not (a pipe).
func TestReadAtMostStopsPastTheLimit(t *testing.T) {
	const max = 1000
	tests := []struct {
		name     string
		size     int
		wantOver bool
	}{
		{"an empty file", 0, false},
		{"a file of one byte", 1, false},
		{"a file just under the limit", max - 1, false},
		{"a file at the limit", max, false},
		{"a file one byte over the limit", max + 1, true},
		{"a file far over the limit", 10 * max, true},
	}
	for _, tt := range tests {
		content := bytes.Repeat([]byte("x"), tt.size)
		check := func(t *testing.T, f *os.File) {
			t.Helper()
			data, _, over, err := readAtMost(f, max)
			switch {
			case err != nil:
				t.Fatal(err)
			case over != tt.wantOver:
				t.Fatalf("over = %v, want %v", over, tt.wantOver)
			case !over && !bytes.Equal(data, content):
				t.Fatalf("read %d bytes, want the file's %d", len(data), len(content))
			case over && len(data) > max+1:
				t.Fatalf("read %d bytes of a file over the limit, want at most %d", len(data), max+1)
			}
		}
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			check(t, f)
		})
		t.Run(tt.name+", grown after it was opened", func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(p, content[:tt.size/2], 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			check(t, f)
		})
		t.Run(tt.name+", through a pipe", func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				_, _ = w.Write(content)
				w.Close()
			}()
			check(t, r)
		})
	}
}
