package classify

import (
	"strings"
	"testing"

	"github.com/calricon/driftscan/report"
)

// The dismissals, case by case, as data: what the scanner hands over, and
// the verdict. The scanner's own tests (scanner/cleansync) prove the same on
// the real API server; these pin each rule's edges.
func TestDismissals(t *testing.T) {
	apply := &Entry{Manager: "argocd-controller", Operation: "Apply"}
	csa := &Entry{Manager: "kubectl-client-side-apply", Operation: "Update"}
	human := &Entry{Manager: "kubectl-edit", Operation: "Update"}
	kcm := &Entry{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status"}
	deploy := Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web",
		Tracking: Tracking{ArgoApps: []string{"web"}, FluxName: "web"}}
	hooked := deploy
	hooked.Webhooks = []string{"kyverno-policies"}
	chart := deploy
	chart.Tracking = Tracking{ArgoApps: []string{"web"}, FluxName: "web", HelmRelease: "web", HelmNamespace: "shop"}
	keyed := deploy // argocd-cm's application.instanceLabelKey: argocd.argoproj.io/instance
	keyed.Tracking.ArgoLabelKey = "argocd.argoproj.io/instance"
	east, none := "east", ""
	installed := deploy // argocd-cm's installationID: east
	installed.Tracking.ArgoInstallationID = &east
	uninstalled := deploy // argocd-cm read, no installationID
	uninstalled.Tracking.ArgoInstallationID = &none
	fluxApp := deploy
	fluxApp.Tracking = Tracking{FluxKind: "Kustomization", FluxName: "apps", FluxNamespace: "flux-system"}
	pvc := Object{Version: "v1", Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data"}
	svc := Object{Version: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	ns := Object{Version: "v1", Kind: "Namespace", Name: "shop"}

	for _, c := range []struct {
		name   string
		obj    Object
		ch     Change
		drift  bool
		reason report.Reason
		class  report.Class
		hint   string
	}{
		// Defaults inside atomic values.
		{name: "a default filled in inside an atomic value the applier owns", obj: deploy,
			ch:     Change{Path: `.spec.template.spec.containers[name="app"].env[name="POD"].valueFrom.fieldRef`, Type: report.TypeChanged, Owner: apply, Contained: true, Filled: `{"apiVersion":"v1"}`},
			reason: report.Defaulted},
		{name: "an atomic value someone else rewrote is drift even if it holds Git's", obj: deploy,
			ch:    Change{Path: `.spec.template.spec.containers[name="app"].env[name="POD"].valueFrom.fieldRef`, Type: report.TypeChanged, Owner: human, Contained: true, Filled: `{"apiVersion":"v1"}`},
			drift: true, class: report.ClassHuman},
		{name: "an atomic value that lost what Git declares is drift", obj: deploy,
			ch:    Change{Path: ".subjects", Type: report.TypeChanged, Owner: apply},
			drift: true, class: report.ClassUnknown},
		{name: "Git's zero values inside an atomic value the server dropped", obj: deploy,
			ch:     Change{Path: ".spec.ingress", Type: report.TypeChanged, Owner: csa, Contained: true},
			reason: report.ZeroValue},

		// Zero values.
		{name: "a zero value the applier sent and still owns", obj: deploy,
			ch:     Change{Path: ".spec.minReadySeconds", Type: report.TypeRemoved, Owner: apply, Git: "0", ZeroGit: true},
			reason: report.ZeroValue},
		{name: "a zero value the API type does not store, owned by nobody", obj: deploy,
			ch:     Change{Path: ".spec.template.spec.hostNetwork", Type: report.TypeRemoved, Git: "false", ZeroGit: true, Omitted: true},
			reason: report.ZeroValue},
		{name: "a zero value the type keeps, that someone removed, is drift", obj: deploy,
			ch:    Change{Path: ".spec.template.spec.automountServiceAccountToken", Type: report.TypeRemoved, Git: "false", ZeroGit: true},
			drift: true},
		{name: "a removed field that is not a zero value is drift", obj: deploy,
			ch:    Change{Path: ".spec.minReadySeconds", Type: report.TypeRemoved, Owner: apply, Git: "10"},
			drift: true},

		// Nulls Git writes.
		{name: "a default the server filled in where the applier sent null", obj: deploy,
			ch:     Change{Path: ".spec.replicas", Type: report.TypeAdded, Owner: apply, Live: "1", NullGit: true},
			reason: report.Defaulted},
		{name: "a null a client-side applier keeps in its last-applied configuration", obj: deploy,
			ch:     Change{Path: ".spec.replicas", Type: report.TypeAdded, Owner: csa, Live: "1", NullGit: true, InLastApplied: true},
			reason: report.Defaulted},
		{name: "a value someone set where Git writes null is drift", obj: deploy,
			ch:    Change{Path: ".spec.replicas", Type: report.TypeAdded, Owner: human, Live: "5", NullGit: true},
			drift: true, class: report.ClassHuman},
		{name: "a field the applier sent once that Git no longer declares is drift", obj: deploy,
			ch:    Change{Path: ".spec.replicas", Type: report.TypeAdded, Owner: apply, Live: "3"},
			drift: true, class: report.ClassUnknown},

		// What the server and its controllers add.
		{name: "the pvc-protection finalizer", obj: pvc,
			ch:     Change{Path: `.metadata.finalizers[="kubernetes.io/pvc-protection"]`, Type: report.TypeAdded, NewKey: true},
			reason: report.Builtin},
		{name: "a finalizer nobody knows is not built in", obj: pvc,
			ch:    Change{Path: `.metadata.finalizers[="example.com/cleanup"]`, Type: report.TypeAdded, NewKey: true},
			drift: true, class: report.ClassUnknown, hint: "the API server or one of its admission plugins"},
		{name: "the Deployment controller's revision", obj: deploy,
			ch:     Change{Path: ".metadata.annotations.deployment.kubernetes.io/revision", Type: report.TypeAdded, NewKey: true, Owner: kcm},
			reason: report.Builtin},
		{name: "a revision annotation a human wrote is the human's", obj: deploy,
			ch:    Change{Path: ".metadata.annotations.deployment.kubernetes.io/revision", Type: report.TypeAdded, NewKey: true, Owner: human},
			drift: true, class: report.ClassHuman},
		{name: "a cluster IP allocated where Git asks for none", obj: svc,
			ch:     Change{Path: ".spec.clusterIP", Type: report.TypeChanged, Owner: apply, Git: "", Live: "10.0.0.7", ZeroGit: true},
			reason: report.Builtin},
		{name: "a cluster IP other than the one Git asks for is drift", obj: svc,
			ch:    Change{Path: ".spec.clusterIP", Type: report.TypeChanged, Owner: apply, Git: "10.0.0.9", Live: "10.0.0.7"},
			drift: true},
		{name: "a node port allocated", obj: svc,
			ch:     Change{Path: `.spec.ports[port=80,protocol="TCP"].nodePort`, Type: report.TypeAdded},
			reason: report.Builtin},
		{name: "the namespace's name label", obj: ns,
			ch:     Change{Path: ".metadata.labels.kubernetes.io/metadata.name", Type: report.TypeAdded, NewKey: true, Live: "shop"},
			reason: report.Builtin},
		{name: "the namespace's name label, owned by the manager that created the namespace", obj: ns,
			ch:     Change{Path: ".metadata.labels.kubernetes.io/metadata.name", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "kubectl-create", Operation: "Update"}, Live: "shop"},
			reason: report.Builtin},
		{name: "the namespace's finalizers, owned by the manager that created the namespace", obj: ns,
			ch:     Change{Path: ".spec.finalizers", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "kubectl-create", Operation: "Update"}, Live: `["kubernetes"]`},
			reason: report.Builtin},
		{name: "a name label that names another namespace is not the server's", obj: ns,
			ch:    Change{Path: ".metadata.labels.kubernetes.io/metadata.name", Type: report.TypeAdded, NewKey: true, Live: "prod"},
			drift: true},

		// Reconciler metadata.
		{name: "Argo CD's tracking id for this app and object", obj: deploy,
			ch:     Change{Path: ".metadata.annotations.argocd.argoproj.io/tracking-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "web:apps/Deployment:shop/web"},
			reason: report.ReconcilerMetadata},
		{name: "Argo CD's tracking id naming another app: two apps fight", obj: deploy,
			ch:    Change{Path: ".metadata.annotations.argocd.argoproj.io/tracking-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "billing:apps/Deployment:shop/web"},
			drift: true, class: report.ClassPipeline, hint: "Argo CD application billing claims this object"},
		{name: "a tracking id copied from another object", obj: deploy,
			ch:    Change{Path: ".metadata.annotations.argocd.argoproj.io/tracking-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "web:apps/Deployment:shop/api"},
			drift: true, class: report.ClassPipeline, hint: "two apps fight"},
		{name: "an Argo CD installation id, argocd-cm unknown", obj: deploy,
			ch:     Change{Path: ".metadata.annotations.argocd.argoproj.io/installation-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "west"},
			reason: report.ReconcilerMetadata},
		{name: "argocd-cm's installationID", obj: installed,
			ch:     Change{Path: ".metadata.annotations.argocd.argoproj.io/installation-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "east"},
			reason: report.ReconcilerMetadata},
		{name: "another Argo CD installation's id: two installations fight", obj: installed,
			ch:    Change{Path: ".metadata.annotations.argocd.argoproj.io/installation-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "west"},
			drift: true, class: report.ClassPipeline, hint: `Argo CD installation "west" claims this object`},
		{name: "an installation id where this Argo CD has none", obj: uninstalled,
			ch:    Change{Path: ".metadata.annotations.argocd.argoproj.io/installation-id", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "west"},
			drift: true, class: report.ClassPipeline, hint: "two apps fight"},
		{name: "Argo CD's tracking label where the chart writes the release name", obj: deploy,
			ch:     Change{Path: ".metadata.labels.app.kubernetes.io/instance", Type: report.TypeChanged, Owner: apply, Git: "web-prod", Live: "web"},
			reason: report.ReconcilerMetadata},
		{name: "a tracking label a human set to another app is the human's", obj: deploy,
			ch:    Change{Path: ".metadata.labels.app.kubernetes.io/instance", Type: report.TypeAdded, NewKey: true, Owner: human, Live: "billing"},
			drift: true, class: report.ClassHuman},
		{name: "Argo CD's tracking label under argocd-cm's instanceLabelKey", obj: keyed,
			ch:     Change{Path: ".metadata.labels.argocd.argoproj.io/instance", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "web"},
			reason: report.ReconcilerMetadata},
		{name: "under another instanceLabelKey, app.kubernetes.io/instance is no Argo CD label", obj: keyed,
			ch:    Change{Path: ".metadata.labels.app.kubernetes.io/instance", Type: report.TypeChanged, Owner: human, Git: "shop", Live: "web"},
			drift: true, class: report.ClassHuman},
		{name: "an applier's app.kubernetes.io/instance under another instanceLabelKey is the applier's change, not two apps", obj: keyed,
			ch:    Change{Path: ".metadata.labels.app.kubernetes.io/instance", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "billing"},
			drift: true, class: report.ClassUnknown},
		{name: "Flux's labels for this Kustomization", obj: fluxApp,
			ch:     Change{Path: ".metadata.labels.kustomize.toolkit.fluxcd.io/namespace", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "kustomize-controller", Operation: "Apply"}, Live: "flux-system"},
			reason: report.ReconcilerMetadata},
		{name: "Flux's label for another Kustomization", obj: fluxApp,
			ch:    Change{Path: ".metadata.labels.kustomize.toolkit.fluxcd.io/name", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "kustomize-controller", Operation: "Apply"}, Live: "infra"},
			drift: true, class: report.ClassPipeline, hint: "two apps fight"},
		{name: "an Argo CD label on a Flux app names another tool's app", obj: fluxApp,
			ch:    Change{Path: ".metadata.labels.app.kubernetes.io/instance", Type: report.TypeAdded, NewKey: true, Owner: apply, Live: "web"},
			drift: true, class: report.ClassPipeline},
		{name: "Helm's release annotations for this chart", obj: chart,
			ch:     Change{Path: ".metadata.annotations.meta.helm.sh/release-name", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "helm", Operation: "Update"}, Live: "web"},
			reason: report.ReconcilerMetadata},
		{name: "Helm's managed-by label on a chart", obj: chart,
			ch:     Change{Path: ".metadata.labels.app.kubernetes.io/managed-by", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "helm", Operation: "Update"}, Live: "Helm"},
			reason: report.ReconcilerMetadata},
		{name: "another release's annotation: Helm refuses to upgrade", obj: chart,
			ch:    Change{Path: ".metadata.annotations.meta.helm.sh/release-name", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "helm", Operation: "Update"}, Live: "billing"},
			drift: true, class: report.ClassPipeline, hint: "invalid ownership metadata"},
		{name: "a Helm release annotation on an app that renders no chart", obj: deploy,
			ch:    Change{Path: ".metadata.annotations.meta.helm.sh/release-name", Type: report.TypeAdded, NewKey: true, Owner: &Entry{Manager: "helm", Operation: "Update"}, Live: "web"},
			drift: true, class: report.ClassPipeline},

		// What nobody owns under a parent Git declares: a default, unless
		// the API server never fills that field in.
		{name: "an unowned imagePullPolicy is a default, webhook or not", obj: hooked,
			ch:     Change{Path: `.spec.template.spec.containers[name="app"].imagePullPolicy`, Type: report.TypeAdded, Live: "IfNotPresent"},
			reason: report.Defaulted},
		{name: "a security context field nobody owns is a webhook's", obj: hooked,
			ch:    Change{Path: `.spec.template.spec.containers[name="app"].securityContext.runAsNonRoot`, Type: report.TypeAdded, Live: "true"},
			drift: true, class: report.ClassWebhook, hint: "kyverno-policies"},
		{name: "a whole pod security context nobody owns is a webhook's", obj: hooked,
			ch:    Change{Path: ".spec.template.spec.securityContext", Type: report.TypeAdded, Live: `{"runAsUser":1000}`},
			drift: true, class: report.ClassWebhook},
		{name: "resource limits nobody owns, with no webhook matching, are the API server's admission", obj: deploy,
			ch:    Change{Path: `.spec.template.spec.initContainers[name="init"].resources.limits.cpu`, Type: report.TypeAdded, Live: "1"},
			drift: true, class: report.ClassUnknown, hint: "no MutatingWebhookConfiguration matches"},
		{name: "a CronJob's pod template too", obj: Object{Group: "batch", Version: "v1", Kind: "CronJob", Namespace: "shop", Name: "nightly", Webhooks: []string{"kyverno-policies"}},
			ch:    Change{Path: ".spec.jobTemplate.spec.template.spec.affinity.nodeAffinity", Type: report.TypeAdded, Live: "{}"},
			drift: true, class: report.ClassWebhook},
		{name: "a Pod's resources nobody owns may be LimitRanger's default", obj: Object{Version: "v1", Kind: "Pod", Namespace: "shop", Name: "p", Webhooks: []string{"kyverno-policies"}},
			ch:     Change{Path: `.spec.containers[name="app"].resources.requests.cpu`, Type: report.TypeAdded, Live: "100m"},
			reason: report.Defaulted},
		{name: "a field whose name starts like one is not it", obj: hooked,
			ch:     Change{Path: `.spec.template.spec.containers[name="app"].resourcesPolicy`, Type: report.TypeAdded, Live: "x"},
			reason: report.Defaulted},

		// A rollout restart's time.
		{name: "kubectl rollout restart's time Git leaves out", obj: deploy,
			ch:     Change{Path: restartedAt, Type: report.TypeAdded, Owner: &Entry{Manager: "kubectl-rollout", Operation: "Update"}, Live: "2026-12-05T03:12:00Z", NewKey: true},
			reason: report.Restart},
		{name: "a restart whose writer nobody recorded", obj: Object{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "shop", Name: "db"},
			ch:     Change{Path: restartedAt, Type: report.TypeAdded, Live: "2026-12-05T03:12:00Z", NewKey: true},
			reason: report.Restart},
		{name: "a restart time Git declares, changed live, is drift", obj: deploy,
			ch:    Change{Path: restartedAt, Type: report.TypeChanged, Owner: &Entry{Manager: "kubectl-rollout", Operation: "Update"}, Git: "2026-01-01T00:00:00Z", Live: "2026-12-05T03:12:00Z"},
			drift: true, class: report.ClassPipeline},
		{name: "a restart time the applier still owns left Git", obj: deploy,
			ch:    Change{Path: restartedAt, Type: report.TypeAdded, Owner: apply, Live: "2026-12-05T03:12:00Z", NewKey: true},
			drift: true, class: report.ClassUnknown, hint: "Git no longer declares"},
		{name: "the same annotation on a pod template of another kind is drift", obj: Object{Group: "batch", Version: "v1", Kind: "CronJob", Namespace: "shop", Name: "nightly"},
			ch:    Change{Path: restartedAt, Type: report.TypeAdded, Owner: human, Live: "2026-12-05T03:12:00Z", NewKey: true},
			drift: true, class: report.ClassHuman},

		// The client-side applier's defaults, and what it dropped.
		{name: "a field the client-side applier owns and never sent is a default", obj: deploy,
			ch:     Change{Path: ".spec.progressDeadlineSeconds", Type: report.TypeAdded, Owner: csa},
			reason: report.Defaulted},
		{name: "a field in the last-applied configuration that Git dropped is drift", obj: deploy,
			ch:    Change{Path: ".spec.paused", Type: report.TypeAdded, Owner: csa, InLastApplied: true},
			drift: true, class: report.ClassUnknown, hint: "the next apply removes it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Options{Appliers: []string{"argocd-controller", "kubectl-client-side-apply"}})
			if err != nil {
				t.Fatal(err)
			}
			got := cl.Classify(c.obj, c.ch)
			if got.Drift != c.drift {
				t.Fatalf("drift = %v (reason %q, %s; hint %q), want %v", got.Drift, got.Reason, got.Detail, got.Finding.Hint, c.drift)
			}
			if !c.drift {
				if got.Reason != c.reason || got.Detail == "" {
					t.Errorf("dismissed as %q (%q), want %q with a detail", got.Reason, got.Detail, c.reason)
				}
				return
			}
			if c.class != "" && got.Finding.Class != c.class {
				t.Errorf("class = %s, want %s (hint %q)", got.Finding.Class, c.class, got.Finding.Hint)
			}
			if !strings.Contains(got.Finding.Hint, c.hint) {
				t.Errorf("hint = %q, want it to contain %q", got.Finding.Hint, c.hint)
			}
		})
	}
}

func TestArgoLabelValueIsCutAsArgoCDCutsIt(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	if got := argoLabelValue(long); got != strings.Repeat("a", 62) {
		t.Errorf("argoLabelValue(%q) = %q: a label may not end in '-'", long, got)
	}
	if got := argoLabelValue("web"); got != "web" {
		t.Errorf("argoLabelValue(web) = %q", got)
	}
}
