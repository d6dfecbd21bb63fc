package scanner

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/estate"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// BenchmarkScan1000Objects scans 1,000 objects in 20 apps on the test API
// server, 5% of them drifted, and reports API requests per scan and the
// process's peak RSS.
func BenchmarkScan1000Objects(b *testing.B) {
	ns := env.Namespace(b, nil)
	cfg := estate.Write(b, b.TempDir(), ns, 20, 50)
	for _, app := range cfg.Apps {
		manifests, err := render.Manifests(b.Context(), render.Options{Dir: filepath.Join(cfg.Dir, app.Source.Path)})
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range manifests {
			env.Apply(b, "argocd-controller", ns, mf.Object)
		}
	}
	for a := 0; a < 20; a++ { // 50 of 1,000 drifted
		name := fmt.Sprintf("app-%02d-0", a)
		env.Patch(b, "kubectl-set", cluster.Deployment, ns, name, types.StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
		env.Scale(b, "kube-controller-manager", cluster.Deployment, ns, name, 5)
		env.Patch(b, "kubectl-edit", cluster.ConfigMap, ns, fmt.Sprintf("app-%02d-1", a), types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	}
	opts := DefaultOptions()
	opts.RESTConfig = env.Config
	var last *report.Report
	b.ResetTimer()
	for b.Loop() {
		r, err := Scan(b.Context(), cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		last = r
	}
	b.StopTimer()
	if last.Summary.Objects != 1000 || last.Summary.Findings != 60 || last.Summary.Errors != 0 {
		b.Fatalf("summary = %+v", last.Summary)
	}
	b.ReportMetric(float64(last.Stats.APIRequests), "requests/scan")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxRSS-MiB")
	}
}
