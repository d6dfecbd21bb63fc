package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

// result is one run of the driftscan binary.
type result struct {
	Stdout, Stderr string
	Code           int
}

// runDriftscan runs the driftscan binary against the test control plane,
// bounded by two minutes.
func runDriftscan(t *testing.T, args ...string) result {
	t.Helper()
	env.Need(t)
	args = append(args, "--kubeconfig", env.Kubeconfig)
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, driftscan, args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	done := make(chan struct{})
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	err := cmd.Run()
	close(done)
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("driftscan %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// scan runs `driftscan scan` with args and the JSON report on stdout, and
// returns the report. Exit codes 0 (no drift) and 1 (drift) are results;
// anything else fails the test.
func scan(t *testing.T, args ...string) *report.Report {
	t.Helper()
	return scanExiting(t, 1, args...)
}

// scanExiting is scan that also takes exit codes up to most as results:
// 2 for a scan that reports app errors.
func scanExiting(t *testing.T, most int, args ...string) *report.Report {
	t.Helper()
	args = append([]string{"scan", "-o", "json", "-q", "--git-cache", t.TempDir()}, args...)
	res := runDriftscan(t, args...)
	if res.Code < 0 || res.Code > most {
		t.Fatalf("driftscan %s: exit %d\n%s\n%s", strings.Join(args, " "), res.Code, res.Stderr, res.Stdout)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("driftscan %s: the report is not JSON: %v\n%s\n%s", strings.Join(args, " "), err, res.Stdout, res.Stderr)
	}
	return &r
}

// finding is a finding reduced to what these tests assert, with the object
// it is on.
type finding struct {
	Object  string
	Path    string
	Type    report.Type
	Class   report.Class
	Manager string
	Git     string
	Live    string
	Hint    string
}

// activeFindings lists the findings that count as drift, app by app.
func activeFindings(r *report.Report) []finding {
	var out []finding
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.ActiveFindings() {
				out = append(out, finding{Object: o.Kind + "/" + o.Name, Path: f.Path, Type: f.Type, Class: f.Class, Manager: f.Manager, Git: f.Git, Live: f.Live, Hint: f.Hint})
			}
		}
	}
	return out
}

// ignoredFindings lists the findings an ignore rule hides, each as
// "Kind/name path live (owner: reason)".
func ignoredFindings(r *report.Report) []string {
	var out []string
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				if f.Ignored && f.IgnoreRule != nil {
					out = append(out, fmt.Sprintf("%s/%s %s %s (%s: %s)", o.Kind, o.Name, f.Path, f.Live, f.IgnoreRule.Owner, f.IgnoreRule.Reason))
				}
			}
		}
	}
	return out
}

// appErrors lists the errors of the report's apps and objects and the
// report's own.
func appErrors(r *report.Report) []string {
	out := append([]string(nil), r.Errors...)
	for _, a := range r.Apps {
		if a.Error != "" {
			out = append(out, a.Name+": "+a.Error)
		}
		for _, o := range a.Objects {
			if o.Error != "" {
				out = append(out, a.Name+" "+o.Ref()+": "+o.Error)
			}
		}
	}
	return out
}

// writeFiles writes files (relative path to text) under dir, making the
// folders they need.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
