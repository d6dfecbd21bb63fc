// Package metrics turns a driftscan report into Prometheus metrics, and
// writes them to a file for node-exporter's textfile collector or pushes them
// to a Pushgateway. docs/metrics.md documents every series.
//
// A scan is a batch job: the metrics describe the last run, and each write or
// push replaces the previous run's series as a whole, so an app, owner or
// class that no longer has drift drops out instead of keeping a stale value.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/calricon/driftscan/report"
)

// The series Gather produces.
const (
	// Findings counts active (not ignored) findings by app, the app's owner,
	// class and type. A combination without findings has no series.
	Findings = "driftscan_findings"
	// Objects counts objects by app and status. Every scanned app has a
	// series for each status in Statuses, zero included.
	Objects = "driftscan_objects"
	// IgnoreDebts counts ignore rules that are expired or unused, by the
	// rule's app ("" for rules of every app), its owner and state.
	IgnoreDebts = "driftscan_ignore_debts"
	// ScanDuration is how long the scan took.
	ScanDuration = "driftscan_scan_duration_seconds"
	// LastSuccess is the Unix time of the run, present only when the scan
	// had no errors.
	LastSuccess = "driftscan_last_success_timestamp_seconds"
	// APIRequests counts the requests the run sent to the API server. It
	// starts from zero every run.
	APIRequests = "driftscan_api_requests_total"
	// CachedInSync is how many objects the scan found in sync from its
	// cache, without a compare (report.CacheStats.InSync).
	CachedInSync = "driftscan_cached_in_sync_objects"
	// Warnings counts the report's warnings by app ("" for the scan's
	// own) and code: what the scan could not read or compare and went on
	// without. A combination without warnings has no series.
	Warnings = "driftscan_warnings"
	// AppScanFailed is 1 for an app the scan could not compare at all
	// (report.App.Error: its source not fetched or rendered), 0 for one it
	// compared; every app of the report has a series.
	AppScanFailed = "driftscan_app_scan_failed"
	// SyncBlocked is 1 for an app whose reconciler's automated sync (and
	// with it self-heal) may not run at the time of the scan
	// (report.GitOps.SyncBlocked), 0 for one whose reconciler may; apps no
	// reconciler applies have no series.
	SyncBlocked = "driftscan_sync_blocked"
)

// Statuses are the object statuses Objects always has a series for.
var Statuses = []report.Status{report.StatusInSync, report.StatusDrifted, report.StatusMissing, report.StatusExtra, report.StatusError}

// Gather returns a registry holding r's metrics; now is when the run ended.
// r must be finalized (report.Report.Finalize): whether the run succeeded is
// read from its summary. Series that need r.Stats are left out when it is nil.
func Gather(r *report.Report, now time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()

	findings := gaugeVec(Findings, "Findings that are not ignored, by app, the app's owner, the class of actor that made them and the type of change.", "app", "owner", "class", "type")
	objects := gaugeVec(Objects, "Objects the scan compared, by app and status (InSync, Drifted, Missing, Extra, Error).", "app", "status")
	debts := gaugeVec(IgnoreDebts, "Ignore rules that need their owner's attention, by app (empty for rules of every app), owner and state (expired, unused).", "app", "owner", "state")
	warnings := gaugeVec(Warnings, "What the scan could not read or compare and went on without (report warnings), by app (empty for the scan's own) and code (NotScanned, SchemaNotPublished, ...).", "app", "code")
	failed := gaugeVec(AppScanFailed, "1 for an app the scan could not compare at all (its source could not be fetched or rendered, so none of its drift was seen), 0 for an app it compared; by app and owner.", "app", "owner")
	blocked := gaugeVec(SyncBlocked, "1 for an app whose reconciler may not sync it automatically at the time of the scan (Argo CD sync window or failed sync; a Flux Kustomization waiting for dependencies or whose build or apply fails, a HelmRelease out of retries), so live changes hold; 0 when it may; by app, tool (argocd, flux) and reason (the reconciler's: SyncWindow, SyncFailed, BuildFailed, ReconciliationFailed, RetriesExceeded, ...; empty when 0).", "app", "tool", "reason")
	reg.MustRegister(findings, objects, debts, warnings, failed, blocked)

	for _, app := range r.Apps {
		failed.WithLabelValues(app.Name, app.Owner).Set(b2f(app.Error != ""))
		if g := app.GitOps; g != nil {
			blocked.WithLabelValues(app.Name, g.Tool, g.SyncBlockedReason).Set(b2f(g.SyncBlocked != ""))
		}
		for _, s := range Statuses {
			objects.WithLabelValues(app.Name, string(s)).Set(0)
		}
		for _, o := range app.Objects {
			objects.WithLabelValues(app.Name, string(o.Status)).Inc()
			for _, f := range o.ActiveFindings() {
				findings.WithLabelValues(app.Name, app.Owner, string(f.Class), string(f.Type)).Inc()
			}
		}
	}
	for _, d := range r.Debts {
		owner := d.Owner
		if owner == "" {
			owner = d.Rule.Owner
		}
		debts.WithLabelValues(d.Rule.App, owner, string(d.Kind)).Inc()
	}

	for _, w := range r.Warnings {
		warnings.WithLabelValues(w.App, string(w.Code)).Inc()
	}

	if r.Stats != nil {
		duration := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ScanDuration,
			Help: "How long the last scan took, in seconds.",
		})
		requests := prometheus.NewCounter(prometheus.CounterOpts{
			Name: APIRequests,
			Help: "Requests the last scan sent to the Kubernetes API server; starts from zero every run.",
		})
		duration.Set(r.Stats.DurationSeconds)
		requests.Add(float64(r.Stats.APIRequests))
		reg.MustRegister(duration, requests)
		if c := r.Stats.Cache; c != nil {
			cached := prometheus.NewGauge(prometheus.GaugeOpts{
				Name: CachedInSync,
				Help: "Objects the last scan found in sync from its cache: unchanged in Git and live since an earlier scan found them so, not compared again.",
			})
			cached.Set(float64(c.InSync))
			reg.MustRegister(cached)
		}
	}

	if !r.HasErrors() {
		last := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: LastSuccess,
			Help: "Unix time of the last scan that finished without errors; absent after a scan with errors.",
		})
		last.Set(float64(now.UnixMilli()) / 1000)
		reg.MustRegister(last)
	}
	return reg
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gaugeVec is a gauge of the last run with the given labels.
func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}
