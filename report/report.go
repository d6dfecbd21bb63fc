// Package report holds driftscan's report contract: the value a scan returns
// and every output format, notifier and CI step consumes.
//
// The JSON form is documented in docs/report.md. Fields may be added; none is
// renamed or dropped without a new APIVersion.
package report

import (
	"path"
	"sort"
	"time"
)

// APIVersion and Kind identify the JSON report.
const (
	APIVersion = "driftscan.dev/v1alpha1"
	Kind       = "Report"
)

// Class names the actor that made a finding.
type Class string

// The classes, in the order reports list them.
const (
	ClassWebhook  Class = "webhook"
	ClassOperator Class = "operator"
	ClassPipeline Class = "pipeline"
	ClassHuman    Class = "human"
	ClassUnknown  Class = "unknown"
)

// Deliberate reports whether drift of class c was made on purpose outside
// Git, by a pipeline or a person: the drift a GitOps sync reverts, that
// breakglass protects and backport carries back to Git. A webhook or an
// operator makes its change again; unknown drift needs a person to decide.
func (c Class) Deliberate() bool { return c == ClassPipeline || c == ClassHuman }

// Classes lists every class in report order.
var Classes = []Class{ClassWebhook, ClassOperator, ClassPipeline, ClassHuman, ClassUnknown}

// Type says how a live field differs from Git.
type Type string

const (
	// TypeChanged: Git declares the field and the live value differs.
	TypeChanged Type = "Changed"
	// TypeRemoved: Git declares the field and live has none.
	TypeRemoved Type = "Removed"
	// TypeAdded: live has a field Git does not declare, that is neither a server
	// default nor a field an operator owns.
	TypeAdded Type = "Added"
)

// Status is the state of one desired object.
type Status string

const (
	StatusInSync  Status = "InSync"
	StatusDrifted Status = "Drifted"
	StatusMissing Status = "Missing" // in Git, not in the cluster
	StatusError   Status = "Error"   // could not be compared; Object.Error says why
	StatusExtra   Status = "Extra"   // in the cluster with the app's tracking label, not in Git
)

// Report is the result of one scan.
type Report struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	ScannedAt  time.Time `json:"scannedAt"`
	// Cluster is the kubeconfig context, or the server URL when there is none.
	Cluster string `json:"cluster"`
	Apps    []App  `json:"apps"`
	// Debts lists ignore rules that are expired or matched nothing.
	Debts []Debt `json:"debts"`
	// Errors holds scan-wide errors that belong to no app (discovery, listing).
	Errors []string `json:"errors,omitempty"`
	// Warnings lists the fidelity the scan lost without failing: what it
	// could not read and went on without (see Warning).
	Warnings []Warning `json:"warnings"`
	Summary  Summary   `json:"summary"`
	// Stats says what the scan cost the API server.
	Stats *Stats `json:"stats,omitempty"`
}

// Stats measure one scan.
type Stats struct {
	// APIRequests counts every request the scan sent to the API server.
	APIRequests int64 `json:"apiRequests"`
	// Throttled counts answers of 429 Too Many Requests.
	Throttled       int64   `json:"throttled"`
	DurationSeconds float64 `json:"durationSeconds"`
	// Dismissed counts the differences between Git and live that were no
	// drift, by reason: nothing is silenced without being counted.
	Dismissed Dismissed `json:"dismissed,omitempty"`
	// Audit counts the audit events the scan read, when it read any.
	Audit *AuditStats `json:"audit,omitempty"`
	// Cache says what the scan took from the cache an earlier scan left,
	// when it had one (scan --cache-dir).
	Cache *CacheStats `json:"cache,omitempty"`
}

// CacheStats say what an earlier scan spared this one.
type CacheStats struct {
	// InSync counts the objects found in sync without a compare: an
	// earlier scan found them in sync with no difference at all, and
	// neither Git's object nor the live one (its resourceVersion) has
	// changed since.
	InSync int `json:"inSync"`
	// Manifests counts the manifest files (and chart output documents)
	// read as an earlier scan parsed them, their bytes unchanged.
	Manifests int `json:"manifests"`
	// Charts counts the Helm charts not rendered at all: their files,
	// values, release and the cluster's capabilities are what an earlier
	// scan rendered, and that render gave the same output twice from
	// templates that call no clock, random or key function.
	Charts int `json:"charts,omitempty"`
	// Kustomizations counts the kustomizations not built at all: every
	// file, folder and glob the last build read reads the same.
	Kustomizations int `json:"kustomizations,omitempty"`
}

// AuditStats say how much of the audit log the scan used.
type AuditStats struct {
	// Read counts the audit events read; Kept those indexed (successful
	// mutating requests, not dry-run, not driftscan's, on a scanned
	// object); Matched those that some finding's attribution names.
	Read    int64 `json:"read"`
	Kept    int64 `json:"kept"`
	Matched int64 `json:"matched"`
	// From and To are the oldest and newest event times read, RFC 3339.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// App is one application's part of the report.
type App struct {
	Name    string   `json:"name"`
	Owner   string   `json:"owner"`
	Source  Source   `json:"source"`
	Error   string   `json:"error"`
	Objects []Object `json:"objects"`
	// OverIgnoreCap is set when the app has more ignore rules than
	// --max-ignores-per-app allows.
	OverIgnoreCap bool `json:"overIgnoreCap,omitempty"`
	// GitOps describes the reconciler object the app came from, when it was
	// discovered from Argo CD or Flux.
	GitOps *GitOps `json:"gitops,omitempty"`
	// Breakglass is set while the app's reconciliation is paused by
	// `driftscan breakglass suspend`.
	Breakglass *Breakglass `json:"breakglass,omitempty"`
	// Pending is set when Git has moved past what the reconciler applied:
	// the objects were compared with the applied commit (Source.Commit),
	// and Pending lists what the next sync changes.
	Pending *Pending `json:"pending,omitempty"`
}

// Breakglass is a pause of an app's reconciliation with a deadline.
type Breakglass struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
	Since  string `json:"since"`
	Until  string `json:"until"`
	// Expired: the deadline has passed; the app is reported as drifted
	// until it is resumed.
	Expired bool `json:"expired"`
	// Resumed: --auto-resume resumed the expired suspension in this run.
	Resumed bool `json:"resumed,omitempty"`
	// Unbackported counts the app's pipeline and human findings that Git
	// lacks: what resuming would revert (0: the hotfix is in Git).
	Unbackported int `json:"unbackported"`
	// BackportPR: suspended with --backport-pr, so the scheduled scan
	// carries the hotfix back to Git as a pull request.
	BackportPR bool `json:"backportPR,omitempty"`
	// PullRequest is the hotfix's pull request, when a scan opened or found
	// it.
	PullRequest *PullRequest `json:"pullRequest,omitempty"`
}

// PullRequest is the pull request that carries a hotfix back to Git.
type PullRequest struct {
	URL    string `json:"url"`
	Number int    `json:"number"`
	Branch string `json:"branch"`
	// State is open, closed or merged.
	State string `json:"state"`
}

// GitOps is the reconciler's view of an app.
type GitOps struct {
	// Tool is argocd or flux.
	Tool string `json:"tool"`
	// Object is the Application, Kustomization or HelmRelease: kind/namespace/name.
	Object string `json:"object"`
	// SelfHeal: the reconciler reverts live changes on its own.
	SelfHeal bool `json:"selfHeal"`
	// Prune: the reconciler deletes live objects that left Git.
	Prune bool `json:"prune"`
	// Suspended: automated sync is off (Argo CD) or the object is suspended (Flux).
	Suspended bool `json:"suspended,omitempty"`
	// RespectIgnoreDifferences: the Application has the sync option
	// RespectIgnoreDifferences=true, so a sync keeps the live value of a
	// field its ignoreDifferences name (without it, a sync applies Git's).
	RespectIgnoreDifferences bool `json:"respectIgnoreDifferences,omitempty"`
	// Replace: the Application has the sync option Replace=true, so a sync
	// replaces each object whole (kubectl replace) and drops what Git does
	// not declare.
	Replace bool `json:"replace,omitempty"`
	// SyncBlocked says, when the reconciler's automated sync (and with it
	// self-heal) may not run at the time of the scan, why and until when:
	// an Argo CD AppProject's sync windows, or a failed last sync Argo CD
	// does not retry; a Flux Kustomization or HelmRelease waiting for its
	// dependencies (or unable to check them), a Kustomization whose build
	// or apply fails at its source's revision, a HelmRelease out of retries.
	SyncBlocked string `json:"syncBlocked,omitempty"`
	// SyncBlockedReason is why, in the reconciler's own words: SyncWindow,
	// SyncFailed or ComparisonError (Argo CD); DependencyNotReady or InvalidCELExpression (a
	// Kustomization's or a HelmRelease's Ready reason); BuildFailed or
	// ReconciliationFailed (a Kustomization's Ready reason); RetriesExceeded
	// or MissingRollbackTarget (a HelmRelease's Stalled reason).
	SyncBlockedReason string `json:"syncBlockedReason,omitempty"`
	// SyncBlockedExcept lists the kinds the reconciler still applies while
	// SyncBlocked: a Flux Kustomization whose apply fails in a later stage
	// applies its earlier stages (CustomResourceDefinitions, Namespaces,
	// ClusterRoles, then *Class kinds) at every retry. Each is a
	// Kind[.group] pattern (path.Match): "Namespace",
	// "ClusterRole.rbac.authorization.k8s.io", "*Class.*".
	SyncBlockedExcept []string `json:"syncBlockedExcept,omitempty"`
}

// SyncBlockedFor says whether SyncBlocked holds for an object of kind in
// API group: false for a kind SyncBlockedExcept names.
func (g *GitOps) SyncBlockedFor(group, kind string) bool {
	if g == nil || g.SyncBlocked == "" {
		return false
	}
	ref := kind
	if group != "" {
		ref += "." + group
	}
	for _, p := range g.SyncBlockedExcept {
		if ok, _ := path.Match(p, ref); ok {
			return false
		}
	}
	return true
}

// Source says where an app's desired state came from.
type Source struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	Commit   string `json:"commit"`
	Path     string `json:"path"`
	// Chart is set for a chart from a Helm chart repository (Repo), and
	// Version is the version of it that was rendered: Revision as
	// configured may be a constraint.
	Chart   string `json:"chart,omitempty"`
	Version string `json:"version,omitempty"`
}

// Object is one desired (or extra) object and its findings.
type Object struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	Status     Status    `json:"status"`
	Error      string    `json:"error"`
	Findings   []Finding `json:"findings"`
	// File and Line locate the manifest in Git that declares the object,
	// relative to the app's source path. Rendered Helm and Kustomize output
	// points at the source folder with Line 0.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Owner overrides the app's owner for this object, from the live
	// object's owner label or annotation (--owner-label).
	Owner string `json:"owner,omitempty"`
	// Dismissed lists the differences that are no drift, and why; only
	// with --explain-dismissed (Stats.Dismissed always counts them).
	Dismissed []Dismissal `json:"dismissed,omitempty"`
}

// Finding is one field that differs between Git and live.
type Finding struct {
	// Path is the structured-merge-diff path string, for example
	// .spec.template.spec.containers[name="app"].image. It is for people:
	// field names are joined with dots unescaped, so a map key holding dots
	// (an annotation) cannot be told from nested fields by reading it.
	Path string `json:"path"`
	// Pointer is the field's RFC 6901 JSON pointer, the form ignore rules'
	// jsonPointers match (and Argo CD's): map keys escaped ("~0" for "~",
	// "~1" for "/"), list items by their index in the live object, or in
	// Git's rendered object for a Removed finding, which live lacks. An index
	// holds only in that one object: Git may list the same items in another
	// order. PathElements names list items by key.
	Pointer string `json:"pointer"`
	// PathElements is Path one step at a time, as structured-merge-diff
	// serializes steps in managedFields (FieldsV1): "f:<field or map key>",
	// "k:<the item's key fields as a JSON object>", "v:<a set item as
	// JSON>", "i:<index of an atomic list's item>". Keys name the same item
	// in Git and live; fieldpath.DeserializePathElement reads each step.
	PathElements []string `json:"pathElements"`
	Type         Type     `json:"type"`
	Class        Class    `json:"class"`
	// Manager, Operation, Subresource and Time come from the live object's
	// managedFields entry that owns Path; all empty when no manager owns it.
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`
	Subresource string `json:"subresource"`
	Time        string `json:"time"`
	// Git and Live are the two values as text: scalars as written (the empty
	// string as `""`), structures as compact JSON, "" when absent. Secret
	// values are masked.
	Git  string `json:"git"`
	Live string `json:"live"`
	// GitValue and LiveValue are the two values as JSON values, typed as the
	// objects hold them (the number 80 and the string "80" stay apart, a
	// structure is an object or array); absent when that side has none, and
	// both absent when Masked.
	GitValue  any `json:"gitValue,omitempty"`
	LiveValue any `json:"liveValue,omitempty"`
	// Masked says the values are Secret data, match a redaction rule or are
	// Sensitive: Git and Live show only "***" (and "*** (differs)" on the
	// live side of a change), and GitValue and LiveValue are left out.
	Masked bool `json:"masked"`
	// Sensitive says the values look like credentials outside a Secret's
	// data (an environment variable named like a password or token, the
	// data of a SealedSecret- or ExternalSecret-style kind). They are
	// Masked unless the scan was told to reveal them (backport
	// --allow-sensitive), and backport writes them to Git only then.
	Sensitive  bool        `json:"sensitive,omitempty"`
	Ignored    bool        `json:"ignored"`
	IgnoreRule *IgnoreRule `json:"ignoreRule"`
	Hint       string      `json:"hint"`
	// Actor names the concrete actor when known, for example the
	// MutatingWebhookConfiguration that most likely injected the field.
	Actor string `json:"actor,omitempty"`
	// Attribution names the user behind the finding, from the audit log;
	// nil when the scan read no audit log.
	Attribution *Attribution `json:"attribution,omitempty"`
	// Contract is the verdict of the live-change contract that covers the
	// object's namespace; nil when the config has no contracts.
	Contract *ContractVerdict `json:"contract,omitempty"`
}

// IgnoreRule is the rule that hid a finding, as configured.
type IgnoreRule struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	Name                  string   `json:"name,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
	Owner                 string   `json:"owner"`
	Reason                string   `json:"reason"`
	Expires               string   `json:"expires"`
	// App is set for rules that belong to one app (imported from Argo CD).
	App string `json:"app,omitempty"`
	// Reconciler is set for a rule imported from a reconciler's own
	// settings (argocd, flux): its diff leaves the field out too.
	Reconciler string `json:"reconciler,omitempty"`
	// DiffOnly: the reconciler's sync applies Git's value whatever its sync
	// options (Argo CD's ignoreAggregatedRoles).
	DiffOnly bool `json:"diffOnly,omitempty"`
}

// DebtKind says why an ignore rule is listed as a debt.
type DebtKind string

const (
	DebtExpired DebtKind = "expired" // past its review date: hides nothing any more
	DebtUnused  DebtKind = "unused"  // matched no finding in this scan
)

// Debt is an ignore rule that needs its owner's attention.
type Debt struct {
	Kind  DebtKind   `json:"kind"`
	Owner string     `json:"owner"`
	Rule  IgnoreRule `json:"rule"`
	// Matched counts the findings an expired rule would have hidden.
	Matched int `json:"matched"`
}

// Summary counts what the scan found. Findings and ByClass count findings
// that are not ignored; Warnings counts Report.Warnings.
type Summary struct {
	Apps     int           `json:"apps"`
	Objects  int           `json:"objects"`
	Drifted  int           `json:"drifted"`
	Missing  int           `json:"missing"`
	Extra    int           `json:"extra"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
	Findings int           `json:"findings"`
	Ignored  int           `json:"ignored"`
	ByClass  map[Class]int `json:"byClass"`
	// ByVerdict counts findings that are not ignored by contract verdict,
	// uncovered included, so gaps in the contracts show; absent when the
	// config has no contracts.
	ByVerdict map[Verdict]int `json:"byVerdict,omitempty"`
}

// New returns an empty report stamped with the scan time and cluster.
func New(scannedAt time.Time, cluster string) *Report {
	return &Report{
		APIVersion: APIVersion,
		Kind:       Kind,
		ScannedAt:  scannedAt.UTC().Truncate(time.Second),
		Cluster:    cluster,
		Apps:       []App{},
		Debts:      []Debt{},
		Warnings:   []Warning{},
	}
}

// Active reports whether the finding counts as drift: it is not ignored.
func (f Finding) Active() bool { return !f.Ignored }

// ActiveFindings returns the object's findings that are not ignored.
func (o Object) ActiveFindings() []Finding {
	var out []Finding
	for _, f := range o.Findings {
		if f.Active() {
			out = append(out, f)
		}
	}
	return out
}

// Ref names the object the way kubectl does: kind/namespace/name.
func (o Object) Ref() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Finalize sorts apps, objects, findings and warnings into a stable order,
// sets each object's status from its findings and recomputes the summary.
// Call it once the report is complete.
func (r *Report) Finalize() {
	sort.SliceStable(r.Apps, func(i, j int) bool { return r.Apps[i].Name < r.Apps[j].Name })
	s := Summary{ByClass: map[Class]int{}}
	for ai := range r.Apps {
		app := &r.Apps[ai]
		if app.Objects == nil {
			app.Objects = []Object{}
		}
		sort.SliceStable(app.Objects, func(i, j int) bool { return objectLess(app.Objects[i], app.Objects[j]) })
		for oi := range app.Objects {
			o := &app.Objects[oi]
			if o.Findings == nil {
				o.Findings = []Finding{}
			}
			sort.SliceStable(o.Findings, func(i, j int) bool { return o.Findings[i].Path < o.Findings[j].Path })
			sort.SliceStable(o.Dismissed, func(i, j int) bool { return o.Dismissed[i].Path < o.Dismissed[j].Path })
			if o.Status == StatusInSync || o.Status == StatusDrifted || o.Status == "" {
				o.Status = StatusInSync
				if len(o.ActiveFindings()) > 0 {
					o.Status = StatusDrifted
				}
			}
		}
		s.add(app.Summary())
	}
	s.Errors += len(r.Errors)
	if r.Warnings == nil {
		r.Warnings = []Warning{}
	}
	r.Warnings = sortWarnings(r.Warnings)
	s.Warnings = len(r.Warnings)
	r.Summary = s
}

// add adds another summary's counts to s.
func (s *Summary) add(o Summary) {
	s.Apps += o.Apps
	s.Objects += o.Objects
	s.Drifted += o.Drifted
	s.Missing += o.Missing
	s.Extra += o.Extra
	s.Errors += o.Errors
	s.Warnings += o.Warnings
	s.Findings += o.Findings
	s.Ignored += o.Ignored
	for c, n := range o.ByClass {
		s.ByClass[c] += n
	}
	for v, n := range o.ByVerdict {
		if s.ByVerdict == nil {
			s.ByVerdict = map[Verdict]int{}
		}
		s.ByVerdict[v] += n
	}
}

func objectLess(a, b Object) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.APIVersion < b.APIVersion
}

// HasErrors reports whether any part of the scan failed to finish.
func (r *Report) HasErrors() bool { return r.Summary.Errors > 0 }
