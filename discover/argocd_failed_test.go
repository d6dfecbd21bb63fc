package discover

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A failed last sync blocks Argo CD's automated sync while it was to the
// revision the target resolves to now, from the source the Application
// has now (alreadyAttemptedSync); anything else lets it run.
func TestFailedSyncIsNotRetriedForTheSameRevisionAndSource(t *testing.T) {
	const source = `{repoURL: https://git.example.com/shop.git, path: web, targetRevision: main}`
	app := func(spec, status string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec: " + spec + "\nstatus: " + status + "\n"
	}
	single := "{project: default, source: " + source + "}"
	multi := "{project: default, sources: [" + source + ", {repoURL: https://charts.example.com, chart: web, targetRevision: 1.2.0}]}"
	hydrator := "{project: default, sourceHydrator: {drySource: {repoURL: https://git.example.com/shop.git, path: web, targetRevision: main}, syncSource: {targetBranch: env/prod, path: prod/web}}}"
	long := strings.Repeat("é", 400)
	for _, tt := range []struct {
		name, obj string
		want      []string // in the reason; none: not blocked
	}{
		{"failed to the target's revision", app(single, `{sync: {revision: aaa}, operationState: {phase: Failed, message: "one or more objects failed to apply", syncResult: {revision: aaa, source: `+source+`}}}`),
			[]string{"the last sync of Application/argocd/web to aaa failed (Failed: one or more objects failed to apply)", "until Git moves past that revision"}},
		{"a URL's credentials are masked", app(single, `{sync: {revision: aaa}, operationState: {phase: Failed, message: "fetch https://bot:tok3n@git.example.com/shop.git failed", syncResult: {revision: aaa, source: `+source+`}}}`),
			[]string{"(Failed: fetch https://git.example.com/shop.git failed)"}},
		{"an error", app(single, `{sync: {revision: aaa}, operationState: {phase: Error, message: boom, syncResult: {revision: aaa, source: `+source+`}}}`),
			[]string{"to aaa failed (Error: boom)"}},
		{"no sync result", app(single, `{sync: {revision: aaa}, operationState: {phase: Failed, message: boom}}`),
			[]string{"the last sync of Application/argocd/web failed (Failed: boom)"}},
		{"Git moved past it", app(single, `{sync: {revision: bbb}, operationState: {phase: Failed, message: boom, syncResult: {revision: aaa, source: `+source+`}}}`), nil},
		{"the source changed", app("{project: default, source: {repoURL: https://git.example.com/shop.git, path: web2, targetRevision: main}}", `{sync: {revision: aaa}, operationState: {phase: Failed, message: boom, syncResult: {revision: aaa, source: `+source+`}}}`), nil},
		{"still retrying", app(single, `{sync: {revision: aaa}, operationState: {phase: Running, message: "retrying attempt #1", syncResult: {revision: aaa, source: `+source+`}}}`), nil},
		{"succeeded", app(single, `{sync: {revision: aaa}, operationState: {phase: Succeeded, message: ok, syncResult: {revision: aaa, source: `+source+`}}}`), nil},
		{"never synced", app(single, `{sync: {revision: aaa}}`), nil},
		{"multi-source, the same", app(multi, `{sync: {revisions: [aaa, 1.2.0]}, operationState: {phase: Failed, message: boom, syncResult: {revisions: [aaa, 1.2.0], sources: [`+source+`, {repoURL: https://charts.example.com, chart: web, targetRevision: 1.2.0}]}}}`),
			[]string{"to aaa, 1.2.0 failed"}},
		{"multi-source, a revision moved", app(multi, `{sync: {revisions: [bbb, 1.2.0]}, operationState: {phase: Failed, message: boom, syncResult: {revisions: [aaa, 1.2.0], sources: [`+source+`, {repoURL: https://charts.example.com, chart: web, targetRevision: 1.2.0}]}}}`), nil},
		// Its source is its sync source, as Argo CD's GetSource gives it.
		{"a source hydrator's, to its sync branch", app(hydrator, `{sync: {revision: ccc}, operationState: {phase: Failed, message: boom, syncResult: {revision: ccc, source: {repoURL: https://git.example.com/shop.git, path: prod/web, targetRevision: env/prod}}}}`),
			[]string{"the last sync of Application/argocd/web to ccc failed (Failed: boom)"}},
		{"a source hydrator's, its sync path changed since", app(hydrator, `{sync: {revision: ccc}, operationState: {phase: Failed, message: boom, syncResult: {revision: ccc, source: {repoURL: https://git.example.com/shop.git, path: prod/old, targetRevision: env/prod}}}}`), nil},
		{"a long message is cut", app(single, `{sync: {revision: aaa}, operationState: {phase: Failed, message: "`+long+`", syncResult: {revision: aaa, source: `+source+`}}}`),
			[]string{strings.Repeat("é", 150) + "…)"}},
	} {
		checkBlocked(t, tt.name, tt.obj, tt.want, func(u *unstructured.Unstructured) (string, error) {
			var a application
			if err := decode(u, &a); err != nil {
				return "", err
			}
			return failedSync(u, &a), nil
		})
	}
}

// A Kustomization applies nothing while it waits for its dependencies (or
// cannot check them), or while its build fails at the revision its source is at; any other state
// says nothing.
func TestKustomizationBlocked(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	ks := func(generation int, status string) string {
		return fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: web, namespace: flux-system, generation: %d}\nspec: {path: ./web}\nstatus: %s\n", generation, status)
	}
	for _, tt := range []struct {
		name, obj string
		want      []string
	}{
		{"waiting for a dependency", ks(2, `{conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: "dependency 'flux-system/infra' is not ready", observedGeneration: 2}]}`),
			[]string{"Kustomization/flux-system/web waits for its dependencies (dependency 'flux-system/infra' is not ready)"}},
		// Checked while infra reconciled (Ready Unknown); checked again
		// within --requeue-dependency.
		{"waiting for a dependency that is ready again", ks(2, `{conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: "dependency 'flux-system/infra' is not ready", observedGeneration: 2}]}`), nil},
		{"a dependency's readyExpr that does not compile", ks(2, `{conditions: [{type: Ready, status: "False", reason: InvalidCELExpression, message: "Reconciliation failed terminally due to configuration error: failed to evaluate dependency infra: compilation failed\n | dep.status.x(\n | ............^", observedGeneration: 2}, {type: Stalled, status: "True", reason: InvalidCELExpression, message: boom, observedGeneration: 2}]}`),
			[]string{"Kustomization/flux-system/web cannot check its dependencies, a readyExpr of its dependsOn does not compile (Reconciliation failed terminally due to configuration error: failed to evaluate dependency infra: compilation failed), and kustomize-controller applies nothing of it until its spec is mended"}},
		{"its build fails at the source's revision", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: BuildFailed, message: "kustomize build failed: accumulating resources", observedGeneration: 2}]}`),
			[]string{"the build of Kustomization/flux-system/web at " + sha + " fails (kustomize build failed: accumulating resources)", "until Git moves past that revision"}},
		{"a value from a Secret or a URL's credentials are masked", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: BuildFailed, message: "var DB_PASSWORD=hunter2-password from https://bot:tok3n@git.example.com/x failed", observedGeneration: 2}]}`),
			[]string{"var DB_PASSWORD=*** from https://git.example.com/x failed"}},
		{"its build failed at an older revision", ks(2, `{lastAttemptedRevision: main@sha1:fedcba9876543210fedcba9876543210fedcba98, conditions: [{type: Ready, status: "False", reason: BuildFailed, message: boom, observedGeneration: 2}]}`), nil},
		{"its spec changed since", ks(3, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: BuildFailed, message: boom, observedGeneration: 2}]}`), nil},
		{"an apply that failed after its dry run may have applied some", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "Deployment/web/web apply failed: Operation cannot be fulfilled", observedGeneration: 2}]}`), nil},
		{"a wait for a stage that timed out", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "timeout waiting for: [CustomResourceDefinition/crontabs.example.com status: 'InProgress']", observedGeneration: 2}]}`), nil},
		{"a dry run that fails in the last stage leaves the first ones applied", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "ConfigMap/web/Bad_Name dry-run failed (Invalid): ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value\nNamespace/web configured\n", observedGeneration: 2}]}`),
			[]string{"the apply of Kustomization/flux-system/web at " + sha + " fails (ConfigMap/web/Bad_Name dry-run failed (Invalid): ConfigMap \"Bad_Name\" is invalid", "Invalid value): kustomize-controller applies CustomResourceDefinitions, Namespaces, ClusterRoles and *Class kinds first, and nothing else of it until the apply passes",
				"except: CustomResourceDefinition.apiextensions.k8s.io Namespace ClusterRole.rbac.authorization.k8s.io *Class *Class.*"}},
		{"a class that fails leaves the definitions applied", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "StorageClass/fast dry-run failed (Invalid): StorageClass.storage.k8s.io \"fast\" is invalid: provisioner: Required value", observedGeneration: 2}]}`),
			[]string{"applies CustomResourceDefinitions, Namespaces and ClusterRoles first, and nothing else", "except: CustomResourceDefinition.apiextensions.k8s.io Namespace ClusterRole.rbac.authorization.k8s.io\n"}},
		{"a Namespace that fails leaves all unapplied", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "Namespace/Bad_NS dry-run failed (Invalid): boom", observedGeneration: 2}]}`),
			[]string{"kustomize-controller applies nothing of it until the apply passes", "except: \n"}},
		{"an object whose namespace is missing", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "Deployment/shop/web not found: namespaces \"shop\" not found", observedGeneration: 2}]}`),
			[]string{"Deployment/shop/web not found: namespaces \"shop\" not found", "except: CustomResourceDefinition"}},
		{"an encrypted Secret and no decryption", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "Secret/web/db is SOPS encrypted, configuring decryption is required for this secret to be reconciled", observedGeneration: 2}]}`),
			[]string{"applies nothing of it", "except: \n"}},
		{"an apply that failed at an older revision", ks(2, `{lastAttemptedRevision: main@sha1:fedcba9876543210fedcba9876543210fedcba98, conditions: [{type: Ready, status: "False", reason: ReconciliationFailed, message: "ConfigMap/web/x dry-run failed (Invalid): boom", observedGeneration: 2}]}`), nil},
		{"ready", ks(2, `{lastAttemptedRevision: main@sha1:`+sha+`, conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded, message: ok, observedGeneration: 2}]}`), nil},
		{"never reconciled", ks(1, `{}`), nil},
	} {
		checkBlocked(t, tt.name, tt.obj, tt.want, func(u *unstructured.Unstructured) (string, error) {
			var k kustomization
			if err := decode(u, &k); err != nil {
				return "", err
			}
			b := kustomizationBlocked(u, &k, sha, strings.Contains(tt.name, "ready again"), []string{"hunter2-password"})
			if b.text != "" && b.reason != k.Status.Conditions[0].Reason {
				t.Errorf("%s: reason %q, want the Ready condition's", tt.name, b.reason)
			}
			if b.text != "" && strings.Contains(tt.name, "fail") || strings.Contains(tt.name, "Secret and") || strings.Contains(tt.name, "missing") {
				b.text += "\nexcept: " + strings.Join(b.except, " ") + "\n"
			}
			return b.text, nil
		})
	}
}

// A HelmRelease whose releases ran out of retries is Stalled, and
// helm-controller corrects no drift of it until its chart or values change
// or someone resets it.
func TestHelmReleaseBlocked(t *testing.T) {
	hr := func(generation int, status string) string {
		return fmt.Sprintf("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: shop, generation: %d}\nspec: {}\nstatus: %s\n", generation, status)
	}
	for _, tt := range []struct {
		name, obj string
		want      []string
	}{
		{"out of retries", hr(2, `{conditions: [{type: Stalled, status: "True", reason: RetriesExceeded, message: "Failed to upgrade after 1 attempt(s)", observedGeneration: 2}]}`),
			[]string{"helm-controller has given up on HelmRelease/shop/web (Stalled, RetriesExceeded: Failed to upgrade after 1 attempt(s)) and corrects no drift"}},
		{"no release to roll back to", hr(2, `{conditions: [{type: Stalled, status: "True", reason: MissingRollbackTarget, message: "Failed to perform remediation", observedGeneration: 2}]}`),
			[]string{"(Stalled, MissingRollbackTarget: "}},
		{"its spec changed since", hr(3, `{conditions: [{type: Stalled, status: "True", reason: RetriesExceeded, message: boom, observedGeneration: 2}]}`), nil},
		{"stalled for another reason", hr(2, `{conditions: [{type: Stalled, status: "True", reason: ArtifactFailed, message: boom, observedGeneration: 2}]}`), nil},
		{"a readyExpr that does not compile", hr(2, `{conditions: [{type: Stalled, status: "True", reason: InvalidCELExpression, message: boom, observedGeneration: 2}, {type: Ready, status: "False", reason: InvalidCELExpression, message: "Reconciliation failed terminally due to configuration error: failed to evaluate dependency db: compilation failed", observedGeneration: 2}]}`),
			[]string{"HelmRelease/shop/web cannot check its dependencies, a readyExpr of its dependsOn does not compile (Reconciliation failed terminally due to configuration error: failed to evaluate dependency db: compilation failed), and helm-controller installs, upgrades and corrects nothing of it until its spec is mended"}},
		{"failing, still retrying", hr(2, `{conditions: [{type: Ready, status: "False", reason: UpgradeFailed, message: boom, observedGeneration: 2}]}`), nil},
		// helm-controller v1.6.4 (e2e TestFluxHelmReleaseDependencyNotReadyCorrectsNoDrift).
		{"waits for a dependency", hr(2, `{conditions: [{type: Reconciling, status: "True", reason: Progressing, message: Fulfilling prerequisites, observedGeneration: 2}, {type: Ready, status: "False", reason: DependencyNotReady, message: "dependency 'shop/db' is not ready", observedGeneration: 2}]}`),
			[]string{"HelmRelease/shop/web waits for its dependencies (dependency 'shop/db' is not ready), and helm-controller installs, upgrades and corrects nothing of it until they are ready"}},
		{"waits for a dependency that is ready again", hr(2, `{conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: "dependency 'shop/db' is not ready", observedGeneration: 2}]}`), nil},
		{"waited for a dependency before its spec changed", hr(3, `{conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: "dependency 'shop/db' is not ready", observedGeneration: 2}]}`), nil},
		{"its dependency is ready again, reconciling", hr(2, `{conditions: [{type: Ready, status: "Unknown", reason: Progressing, message: reconciliation in progress, observedGeneration: 2}]}`), nil},
	} {
		checkBlocked(t, tt.name, tt.obj, tt.want, func(u *unstructured.Unstructured) (string, error) {
			var h helmRelease
			if err := decode(u, &h); err != nil {
				return "", err
			}
			return helmReleaseBlocked(u, &h, strings.Contains(tt.name, "ready again"), nil).text, nil
		})
	}
}

// checkBlocked checks what blocked says of the object obj (YAML, read as
// the API server gives it: integers int64): that it holds each of want, or
// nothing when want is empty.
func checkBlocked(t *testing.T, name, obj string, want []string, blocked func(*unstructured.Unstructured) (string, error)) {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(obj))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, err := blocked(u)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(want) == 0 && got != "" {
		t.Errorf("%s: blocked: %q, want the reconciler to act", name, got)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q, want it to say %q", name, got, w)
		}
	}
}

// A dependency is ready as its Flux controller checks it: listed, its
// status written for its generation, Ready True, and what the caller asks
// more of it (a Kustomization of the same source: applied at its
// revision); one with a readyExpr, or not listed, is not known to be.
func TestDependenciesReady(t *testing.T) {
	obj := func(ns, name string, generation, observed int, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind("Kustomization")
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetGeneration(int64(generation))
		u.Object["status"] = map[string]any{"observedGeneration": int64(observed), "conditions": []any{
			map[string]any{"type": "Reconciling", "status": "True"},
			map[string]any{"type": "Ready", "status": ready, "observedGeneration": int64(observed)},
		}}
		return u
	}
	app := obj("apps", "web", 1, 1, "False")
	d := &discovery{}
	d.listedFlux([]unstructured.Unstructured{
		*obj("apps", "db", 2, 2, "True"), *obj("infra", "cni", 1, 1, "True"),
		*obj("apps", "reconciling", 1, 1, "Unknown"), *obj("apps", "changed", 3, 2, "True"),
	})
	always := func(*unstructured.Unstructured) bool { return true }
	for _, tt := range []struct {
		name string
		deps []fluxDependency
		same func(*unstructured.Unstructured) bool
		want bool
	}{
		{"ready, and one in another namespace", []fluxDependency{{Name: "db"}, {Name: "cni", Namespace: "infra"}}, always, true},
		{"one reconciling", []fluxDependency{{Name: "db"}, {Name: "reconciling"}}, always, false},
		{"one whose spec changed since its status", []fluxDependency{{Name: "changed"}}, always, false},
		{"one not listed", []fluxDependency{{Name: "cni"}}, always, false},
		{"one with a readyExpr", []fluxDependency{{Name: "db", ReadyExpr: "dep.status.x == 1"}}, always, false},
		{"one of the same source not at its revision", []fluxDependency{{Name: "db"}}, func(*unstructured.Unstructured) bool { return false }, false},
		{"none", nil, always, false},
	} {
		if got := d.dependenciesReady(app, tt.deps, tt.same); got != tt.want {
			t.Errorf("%s: ready %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Argo CD's automated sync runs only for an app it finds OutOfSync: one whose
// last compare failed (sync status Unknown, a ComparisonError) is synced by
// nobody until a compare succeeds.
func TestComparisonFailed(t *testing.T) {
	app := func(status string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec: {project: default}\nstatus: " + status + "\n"
	}
	for _, tt := range []struct {
		name, obj string
		want      []string
	}{
		{"a manifest that does not parse", app(`{sync: {status: Unknown, revision: bbb}, conditions: [{type: ComparisonError, message: "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): failed to unmarshal \"bad.yaml\"\nline 2"}]}`),
			[]string{"Argo CD cannot compare Application/argocd/web with Git (ComparisonError: Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): failed to unmarshal \"bad.yaml\"), and its automated sync runs only for an app it finds OutOfSync"}},
		{"a repository's credentials are masked", app(`{sync: {status: Unknown}, conditions: [{type: ComparisonError, message: "fetch https://bot:tok3n@git.example.com/x.git failed"}]}`),
			[]string{"(ComparisonError: fetch https://git.example.com/x.git failed)"}},
		{"out of sync, with a warning", app(`{sync: {status: OutOfSync}, conditions: [{type: SharedResourceWarning, message: boom}]}`), nil},
		{"a compare error of an app found OutOfSync all the same", app(`{sync: {status: OutOfSync}, conditions: [{type: ComparisonError, message: boom}]}`), nil},
		{"never compared", app(`{}`), nil},
	} {
		checkBlocked(t, tt.name, tt.obj, tt.want, func(u *unstructured.Unstructured) (string, error) {
			var a application
			if err := decode(u, &a); err != nil {
				return "", err
			}
			return comparisonFailed(u, &a), nil
		})
	}
}

// A Kustomization's dependency of the same source (its namespace by
// default) must have applied the revision that source is at; one of
// another source need not.
func TestAppliedSource(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	ks := func(name, source, applied string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind("Kustomization")
		u.SetNamespace("apps")
		u.SetName(name)
		u.Object["spec"] = map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": source}}
		u.Object["status"] = map[string]any{"lastAppliedRevision": applied}
		return u
	}
	app := ks("web", "repo", "")
	var spec kustomization
	if err := decode(app, &spec); err != nil {
		t.Fatal(err)
	}
	same := appliedSource(app, &spec, sha)
	for _, tt := range []struct {
		name string
		dep  *unstructured.Unstructured
		want bool
	}{
		{"the same source, at its revision", ks("infra", "repo", "main@sha1:"+sha), true},
		{"the same source, behind it", ks("infra", "repo", "main@sha1:fedcba9876543210fedcba9876543210fedcba98"), false},
		{"the same source, never applied", ks("infra", "repo", ""), false},
		{"another source", ks("infra", "other", "main@sha1:fedcba9876543210fedcba9876543210fedcba98"), true},
	} {
		if got := same(tt.dep); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
