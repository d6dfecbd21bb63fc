package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileWritesTheProfileAsked: --profile and --profile-output, as
// kubectl has them, write a Go profile of the run that `go tool pprof`
// reads (gzipped protocol buffers naming their sample types).
func TestProfileWritesTheProfileAsked(t *testing.T) {
	for name, sampleType := range map[string]string{"cpu": "nanoseconds", "heap": "inuse_space", "goroutine": "goroutine"} {
		out := filepath.Join(t.TempDir(), name+".pprof")
		if res := runCLI(t, "version", "--profile", name, "--profile-output", out); res.code != 0 {
			t.Fatalf("--profile %s: exit %d\n%s", name, res.code, res.err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("--profile %s: not a gzipped profile: %v", name, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(raw, []byte(sampleType)) {
			t.Errorf("--profile %s: %d bytes (%v) without the sample type %q", name, len(raw), err, sampleType)
		}
	}
}

// TestProfileTraceWritesAnExecutionTrace: --profile trace writes the
// runtime's execution trace, which `go tool trace` reads: it starts with
// the header naming the Go release that wrote it and holds the run's
// events, not just the header.
func TestProfileTraceWritesAnExecutionTrace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "scan.trace")
	if res := runCLI(t, "version", "--profile", "trace", "--profile-output", out); res.code != 0 {
		t.Fatalf("--profile trace: exit %d\n%s", res.code, res.err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	header := []byte("go 1.")
	if !bytes.HasPrefix(data, header) || !bytes.Contains(data[:16], []byte(" trace")) || len(data) < 1024 {
		t.Errorf("--profile trace wrote %d bytes starting %q; want an execution trace", len(data), data[:min(len(data), 16)])
	}
}

func TestAnUnknownProfileIsRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.pprof")
	res := runCLI(t, "version", "--profile", "everything", "--profile-output", out)
	if res.code != 2 || !strings.Contains(res.err, `--profile "everything"`) {
		t.Errorf("exit %d, stderr %q; want 2 and the flag named", res.code, res.err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the output was created for a profile that does not exist: %v", err)
	}
}
