package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/report"
)

// loopAndWeb writes a config of two apps: loop, a chart whose template
// loops 10^15 times in a few kilobytes, and web, fixtures/apps/web in ns.
func loopAndWeb(t *testing.T, ns string) string {
	t.Helper()
	dir := t.TempDir()
	web, _ := filepath.Abs("../../fixtures/apps/web")
	files := map[string]string{
		"loop/Chart.yaml":          "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
		"loop/templates/loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}\n",
		"scan.yaml": `apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
appliers: [argocd-controller]
apps:
- {name: loop, owner: team-loop, namespace: ` + ns + `, source: {path: loop}}
- {name: web, owner: team-web, namespace: ` + ns + `, source: {path: ` + web + `}}
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "scan.yaml")
}

// startDriftscan starts this test binary as driftscan itself, bounded to
// 3 GiB of address space and 90 seconds: the looping chart keeps a core
// busy in it until it exits.
func startDriftscan(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = bounded.Command(bounded.Limits{Memory: 3 << 30, Time: 90 * time.Second}, exe, args...)
	cmd.Env = append(cmd.Env, runAsDriftscan+"=1")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// waitReport waits for driftscan and reads its JSON report.
func waitReport(t *testing.T, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) (int, report.Report) {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	code := cmd.ProcessState.ExitCode()
	if code == 124 || code == 137 {
		t.Fatalf("driftscan ran past 90 seconds and was killed\nstderr: %s", stderr)
	}
	var r report.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("exit %d and no JSON report on stdout: %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	return code, r
}

func appOf(r report.Report, name string) report.App {
	for _, a := range r.Apps {
		if a.Name == name {
			return a
		}
	}
	return report.App{}
}

// TestAChartThatLoopsForeverIsAnAppErrorAndTheOthersAreScanned is issue
// 17's chart that loops forever. Before each app rendered under a deadline
// the scan never got past rendering: --timeout and SIGTERM were ignored,
// and no report was written (here: killed at 90 seconds). Now the chart is
// an error at --render-timeout and the other app is scanned and reported;
// and without a render timeout, SIGTERM stops the scan and the report of
// what finished is written.
func TestAChartThatLoopsForeverIsAnAppErrorAndTheOthersAreScanned(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	cfg := loopAndWeb(t, ns)
	scan := []string{"scan", "--config", cfg, "--kubeconfig", env.Kubeconfig, "-o", "json", "--fail-on", "none"}

	t.Run("at --render-timeout", func(t *testing.T) {
		start := time.Now()
		cmd, stdout, stderr := startDriftscan(t, append(scan, "--render-timeout", "3s")...)
		code, r := waitReport(t, cmd, stdout, stderr)
		t.Logf("exit %d after %s", code, time.Since(start).Round(time.Millisecond))
		if code != int(report.ExitError) {
			t.Errorf("exit %d, want %d (an app failed)", code, report.ExitError)
		}
		if loop := appOf(r, "loop"); !strings.Contains(loop.Error, "did not finish within 3s") {
			t.Errorf("app loop: error %q, want that it did not render within 3s", loop.Error)
		}
		got := map[string]report.Status{}
		for _, o := range appOf(r, "web").Objects {
			got[o.Kind] = o.Status
		}
		if got["Deployment"] != report.StatusDrifted || got["ConfigMap"] != report.StatusDrifted || got["Service"] != report.StatusInSync {
			t.Errorf("app web was not scanned: %v", got)
		}
	})

	t.Run("at SIGTERM", func(t *testing.T) {
		cmd, stdout, stderr := startDriftscan(t, append(scan, "--render-timeout", "0")...)
		time.Sleep(5 * time.Second)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		code, r := waitReport(t, cmd, stdout, stderr)
		t.Logf("exit %d %s after SIGTERM", code, time.Since(sent).Round(time.Millisecond))
		if code != int(report.ExitError) {
			t.Errorf("exit %d, want %d (the scan did not finish)", code, report.ExitError)
		}
		if loop := appOf(r, "loop"); !strings.Contains(loop.Error, "terminated signal received") {
			t.Errorf("app loop: error %q, want the render given up at SIGTERM", loop.Error)
		}
		if len(appOf(r, "web").Objects) == 0 {
			t.Errorf("app web is not in the report: %+v", r.Apps)
		}
	})
}
