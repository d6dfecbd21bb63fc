package metrics

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

// endedAt is when the sample scan ended.
var endedAt = scannedAt.Add(3250 * time.Millisecond)

// parse reads a metrics file with Prometheus' own text parser, as the
// textfile collector does.
func parse(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return mfs
}

// samples flattens families into "name{l="v",...} value" lines, labels
// sorted, for go-cmp.
func samples(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue()
			if mf.GetType() == dto.MetricType_COUNTER {
				v = m.GetCounter().GetValue()
			}
			out = append(out, name+"{"+strings.Join(labels, ",")+"} "+model.SampleValue(v).String())
		}
	}
	sort.Strings(out)
	return out
}

func writeSample(t *testing.T, r *report.Report) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driftscan.prom")
	if err := WriteFile(path, Gather(r, endedAt)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTheMetricsFileHasEveryDocumentedSeries(t *testing.T) {
	mfs := parse(t, writeSample(t, sampleReport()))
	want := []string{
		`driftscan_api_requests_total{} 42`,
		`driftscan_app_scan_failed{app="payments",owner="team-pay"} 0`,
		`driftscan_app_scan_failed{app="web",owner="team-web"} 0`,
		`driftscan_cached_in_sync_objects{} 7`,
		`driftscan_findings{app="payments",class="unknown",owner="team-pay",type="Added"} 1`,
		`driftscan_findings{app="web",class="human",owner="team-web",type="Added"} 1`,
		`driftscan_findings{app="web",class="human",owner="team-web",type="Changed"} 1`,
		`driftscan_findings{app="web",class="human",owner="team-web",type="Removed"} 1`,
		`driftscan_findings{app="web",class="operator",owner="team-web",type="Changed"} 1`,
		`driftscan_findings{app="web",class="pipeline",owner="team-web",type="Changed"} 1`,
		`driftscan_findings{app="web",class="webhook",owner="team-web",type="Added"} 1`,
		`driftscan_ignore_debts{app="",owner="platform",state="unused"} 2`,
		`driftscan_ignore_debts{app="web",owner="team-web",state="expired"} 1`,
		`driftscan_last_success_timestamp_seconds{} 1796007603.25`,
		`driftscan_objects{app="payments",status="Drifted"} 1`,
		`driftscan_objects{app="payments",status="Error"} 0`,
		`driftscan_objects{app="payments",status="Extra"} 0`,
		`driftscan_objects{app="payments",status="InSync"} 0`,
		`driftscan_objects{app="payments",status="Missing"} 0`,
		`driftscan_objects{app="web",status="Drifted"} 2`,
		`driftscan_objects{app="web",status="Error"} 0`,
		`driftscan_objects{app="web",status="Extra"} 0`,
		`driftscan_objects{app="web",status="InSync"} 1`,
		`driftscan_objects{app="web",status="Missing"} 1`,
		`driftscan_scan_duration_seconds{} 3.25`,
		`driftscan_sync_blocked{app="payments",reason="",tool="flux"} 0`,
		`driftscan_sync_blocked{app="web",reason="SyncWindow",tool="argocd"} 1`,
		`driftscan_warnings{app="",code="NotScanned"} 1`,
		`driftscan_warnings{app="web",code="SchemaNotPublished"} 2`,
	}
	if diff := cmp.Diff(want, samples(mfs)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	types := map[string]dto.MetricType{}
	for name, mf := range mfs {
		types[name] = mf.GetType()
		if mf.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	wantTypes := map[string]dto.MetricType{
		Findings:      dto.MetricType_GAUGE,
		Objects:       dto.MetricType_GAUGE,
		IgnoreDebts:   dto.MetricType_GAUGE,
		ScanDuration:  dto.MetricType_GAUGE,
		LastSuccess:   dto.MetricType_GAUGE,
		APIRequests:   dto.MetricType_COUNTER,
		CachedInSync:  dto.MetricType_GAUGE,
		Warnings:      dto.MetricType_GAUGE,
		AppScanFailed: dto.MetricType_GAUGE,
		SyncBlocked:   dto.MetricType_GAUGE,
	}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
}

func TestTheMetricsFileMatchesItsGolden(t *testing.T) {
	got, err := os.ReadFile(writeSample(t, sampleReport()))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sample.prom.golden", got)
}

func TestAScanWithErrorsHasNoLastSuccess(t *testing.T) {
	cases := map[string]func(*report.Report){
		"a scan-wide error":  func(r *report.Report) { r.Errors = []string{"discovery: connection refused"} },
		"an app that failed": func(r *report.Report) { r.Apps[0].Error = "render: no such chart" },
		"an object in Error": func(r *report.Report) { r.Apps[1].Objects[0].Status = report.StatusError },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			breakIt(r)
			r.Finalize()
			mfs := parse(t, writeSample(t, r))
			if _, ok := mfs[LastSuccess]; ok {
				t.Errorf("%s present after a scan with errors", LastSuccess)
			}
			if _, ok := mfs[Findings]; !ok {
				t.Errorf("%s missing: the findings of the rest of the scan still count", Findings)
			}
			if name == "an app that failed" {
				got := samples(map[string]*dto.MetricFamily{AppScanFailed: mfs[AppScanFailed]})
				// Apps[0] is payments: Finalize sorts the apps by name.
				want := []string{`driftscan_app_scan_failed{app="payments",owner="team-pay"} 1`, `driftscan_app_scan_failed{app="web",owner="team-web"} 0`}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", AppScanFailed, diff)
				}
			}
		})
	}
}

func TestAReportWithoutStatsLeavesOutDurationAndRequests(t *testing.T) {
	r := sampleReport()
	r.Stats = nil
	mfs := parse(t, writeSample(t, r))
	for _, name := range []string{ScanDuration, APIRequests} {
		if _, ok := mfs[name]; ok {
			t.Errorf("%s present without stats", name)
		}
	}
}

func TestAnEmptyScanStillReportsSuccess(t *testing.T) {
	r := report.New(scannedAt, "dev")
	r.Finalize()
	got := samples(parse(t, writeSample(t, r)))
	want := []string{`driftscan_last_success_timestamp_seconds{} 1796007603.25`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

func TestWriteFileReplacesTheFileAndLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "driftscan.prom")
	if err := os.WriteFile(path, []byte("stale 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, Gather(sampleReport(), endedAt)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "driftscan.prom" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %v, want only driftscan.prom", names)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 so node-exporter can read it", info.Mode().Perm())
	}
	if _, ok := parse(t, path)["stale"]; ok {
		t.Error("the old content is still there")
	}
}

func TestWriteFileNamesThePathOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-folder", "driftscan.prom")
	err := WriteFile(path, Gather(sampleReport(), endedAt))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteFile to a missing folder: %v, want an error naming %s", err, path)
	}
}
