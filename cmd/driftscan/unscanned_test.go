package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheOwnerOfAnAppThatCannotBeScannedIsToldOnce runs scan against the
// real API server with an app whose chart does not render: with
// --unscanned-after 0 the first run tells its owner in Slack, with Helm's
// error; the next run tells nothing more; once the chart is mended the
// owner is told it is scanned again.
func TestTheOwnerOfAnAppThatCannotBeScannedIsToldOnce(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	ops := newChatOps(t)
	t.Setenv("SLACK_WEBHOOK_URL", ops.srv.URL+"/services/T000/B000/secret")
	dir := t.TempDir()
	chart := filepath.Join(dir, "web")
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
	write("templates/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  TAG: {{ .Values.image.tag | quote }}\n")
	cfg := filepath.Join(dir, "scan.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
apps:
- name: web
  owner: team-web
  namespace: %s
  source: {path: %s}
owners:
  team-web:
    slack: {channel: "#web-oncall", mention: "<!subteam^S0123>"}
notify:
  slack: {webhookURLEnv: SLACK_WEBHOOK_URL}
`, ns, chart), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"scan", "--kubeconfig", env.Kubeconfig, "--config", cfg, "-o", "json",
		"--state", "file:" + filepath.Join(dir, "state.json"), "--unscanned-after", "0"}
	messages := func() []string {
		ops.mu.Lock()
		defer ops.mu.Unlock()
		var out []string
		for _, m := range ops.slack {
			out = append(out, fmt.Sprint(m["text"], m["blocks"]))
		}
		return out
	}

	res := runCLI(t, args...)
	if res.code != 2 {
		t.Errorf("a run with an app it could not scan: exit %d, want 2 (an error)\nstderr: %s", res.code, res.err)
	}
	got := messages()
	if len(got) != 1 || !strings.Contains(got[0], "driftscan cannot scan web on") || !strings.Contains(got[0], "nil pointer evaluating interface {}.tag") {
		t.Fatalf("first failing run: want one message saying web cannot be scanned, with Helm's error; got %q\nstderr: %s", got, res.err)
	}
	if res := runCLI(t, args...); res.code != 2 || len(messages()) != 1 {
		t.Errorf("second failing run: exit %d, %d messages in all, want 2 and still 1", res.code, len(messages()))
	}

	write("values.yaml", "image: {tag: \"1.4.0\"}\n")
	res = runCLI(t, args...)
	if res.code != 1 { // web-config is Missing: drift
		t.Errorf("a run after the chart was mended: exit %d, want 1\nstderr: %s", res.code, res.err)
	}
	got = messages()
	if len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "Scanned again: web on") {
		t.Errorf("after the chart was mended: want the web-config drift and one message saying web is scanned again, got %q", got)
	}
}
