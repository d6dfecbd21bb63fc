package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/calricon/driftscan/charts"
	"github.com/calricon/driftscan/report"
)

// hangingAPI is a loopback proxy to the test API server that never answers
// the LISTs whose path contains hang, the way an overloaded API server (or
// one slow aggregated API) leaves a scan waiting. It returns a kubeconfig
// for the proxy.
func hangingAPI(t *testing.T, hang string) string {
	t.Helper()
	env.Need(t)
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, hang) {
			<-r.Context().Done() // the client gave up
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["slow"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["slow"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["slow"] = &clientcmdapi.Context{Cluster: "slow", AuthInfo: "slow"}
	cfg.CurrentContext = "slow"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTheChartsTimeoutStopsTheScanAndWritesWhatFinished runs the CronJob's
// command line with activeDeadlineSeconds 10 against an API server that
// never answers the LIST of ConfigMaps. Before the chart passed --timeout,
// the scan waited the default 10 minutes, the Job's deadline killed the pod
// first, and no report was written. Now the scan stops itself at the
// chart's --timeout, well before the deadline, and writes the report of
// everything that finished, with the ConfigMap as an error.
func TestTheChartsTimeoutStopsTheScanAndWritesWhatFinished(t *testing.T) {
	ns := driftedWeb(t)
	web, _ := filepath.Abs("../../fixtures/apps/web")
	opts := charts.DefaultOptions()
	opts.Namespace = ns
	opts.Values = map[string]any{
		"activeDeadlineSeconds": 10,
		"config": map[string]any{
			"apiVersion": "driftscan.dev/v1alpha1", "kind": "ScanConfig",
			"appliers": []any{"argocd-controller"},
			"apps":     []any{map[string]any{"name": "web", "owner": "team-web", "namespace": ns, "source": map[string]any{"path": web}}},
		},
	}
	rel, err := charts.Render(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cfgText, err := rel.ScanConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "scan.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := rel.Args(map[string]string{"NAMESPACE": ns})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "/etc/driftscan/scan.yaml" {
			args[i] = cfgPath
		}
	}
	args = append(args, "--kubeconfig", hangingAPI(t, "/namespaces/"+ns+"/configmaps"))

	start := time.Now()
	res := runCLI(t, args...)
	took := time.Since(start)
	if took >= 10*time.Second {
		t.Errorf("the scan took %s: the Job's deadline (10s) would have killed it", took.Round(time.Millisecond))
	}
	if res.code != report.ExitError {
		t.Errorf("exit %d, want %d (part of the scan did not finish)\nstderr: %s", res.code, report.ExitError, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatalf("no JSON report on stdout: %v\n%s\nstderr: %s", err, res.out, res.err)
	}
	got := map[string]string{}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			got[o.Kind] = string(o.Status)
			if o.Status == report.StatusError {
				got[o.Kind] += ": " + o.Error
			}
		}
	}
	if got["Deployment"] != "Drifted" || got["Service"] != "InSync" || got["Secret"] != "InSync" {
		t.Errorf("what finished is not reported: %v", got)
	}
	if !strings.HasPrefix(got["ConfigMap"], "Error: ") || !strings.Contains(got["ConfigMap"], "context deadline exceeded") {
		t.Errorf("ConfigMap: %q, want an error that the deadline passed", got["ConfigMap"])
	}
	t.Logf("stopped after %s (--timeout %s, activeDeadlineSeconds 10)", took.Round(time.Millisecond), args[indexOf(args, "--timeout")+1])
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}
