package doctor

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/calricon/driftscan/discover"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// needs lists every permission the scan needs, in the order the scan uses
// them: discovery, the apps' resources, what classification reads, the
// reconciler's objects, the state and the Lease. See scanner.Scan and
// discover.Discover for the reads, notify.ConfigMapStore and package lease
// for the writes.
func (c *checker) needs(ctx context.Context) ([]Need, error) {
	out := []Need{
		{Verb: "get", Path: "/version", Why: "the scan reads the server version first, to know the cluster is there"},
		{Verb: "get", Path: "/api", Why: "the scan maps kinds to resources with API discovery"},
		{Verb: "get", Path: "/apis", Why: "the scan maps kinds to resources with API discovery"},
		{Verb: "get", Path: "/openapi/v3", Why: "the scan types objects with the server's OpenAPI v3 schema"},
	}
	for _, r := range c.opts.Resources {
		out = append(out, Need{Verb: "list", Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Why: declares(r)})
	}
	out = append(out,
		Need{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Optional: true,
			Why: "the scan names the mutating webhook behind injected fields"},
		Need{Verb: "list", Resource: "namespaces", Optional: true,
			Why: "the scan reads namespace labels to match webhook namespaceSelectors"},
	)
	scalers := c.servedScalers()
	for _, ns := range c.namespaces(false) {
		for _, s := range scalers {
			out = append(out, Need{Verb: "list", Group: s.group, Resource: s.resource, Namespace: ns, Optional: true,
				Why: "the scan lists " + s.kind + "s there to tell fields an autoscaler sets (spec.replicas) from drift"})
		}
	}
	out = append(out, c.fromNeeds()...)
	if ref := c.opts.State; ref != nil {
		out = append(out,
			Need{Verb: "get", Resource: "configmaps", Namespace: ref.Namespace, Name: ref.Name, Why: "the scan reads what it already notified from its state ConfigMap"},
			Need{Verb: "update", Resource: "configmaps", Namespace: ref.Namespace, Name: ref.Name, Why: "the scan saves what it notified in its state ConfigMap"},
		)
		absent, err := c.absent(func() error {
			_, err := c.client.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("state ConfigMap %s: %w", ref, err)
		}
		if absent {
			out = append(out, Need{Verb: "create", Resource: "configmaps", Namespace: ref.Namespace,
				Why: "the state ConfigMap " + ref.Name + " does not exist yet: the first scan that notifies creates it"})
		}
	}
	if ref := c.opts.Lease; ref != nil {
		out = append(out,
			Need{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: ref.Namespace, Name: ref.Name, Why: "the scan reads who holds the Lease that keeps two runs from notifying at once"},
			Need{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ref.Namespace, Name: ref.Name, Why: "the scan takes the Lease before it notifies and gives it back after"},
		)
		absent, err := c.absent(func() error {
			_, err := c.client.CoordinationV1().Leases(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("lease %s: %w", ref, err)
		}
		if absent {
			out = append(out, Need{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: ref.Namespace,
				Why: "the Lease " + ref.Name + " does not exist yet: the first scan creates it"})
		}
	}
	return out, nil
}

// absent runs get and reports whether the object is not there. A get the
// identity may not make tells nothing: the missing get is reported anyway.
func (c *checker) absent(get func() error) (bool, error) {
	err := get()
	switch {
	case err == nil, apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return false, nil
	case apierrors.IsNotFound(err):
		return true, nil
	}
	return false, err
}

// declares says why the scan lists r: "the app web declares a Secret there".
func declares(r Resource) string {
	if r.Why != "" {
		return r.Why
	}
	there := " there"
	if r.Namespace == "" {
		there = ""
	}
	kind := r.Kind
	if kind == "" {
		kind = r.String()
	}
	switch len(r.Apps) {
	case 0:
		return "the scan compares objects of " + r.String() + there + " with Git"
	case 1:
		return "the app " + r.Apps[0] + " declares " + article(kind) + " " + kind + there
	}
	return "the apps " + strings.Join(r.Apps, ", ") + " declare " + kind + " objects" + there
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("AEIOUaeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// scaler is an autoscaler kind the scan lists in each app namespace.
type scaler struct {
	group, version, resource, kind string
	// builtIn kinds are always served; the others only with their CRD.
	builtIn bool
}

// scalers are the autoscalers the scan reads (scanner's scalerKinds).
var scalers = []scaler{
	{group: "autoscaling", version: "v2", resource: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", builtIn: true},
	{group: "autoscaling.k8s.io", version: "v1", resource: "verticalpodautoscalers", kind: "VerticalPodAutoscaler"},
	{group: "keda.sh", version: "v1alpha1", resource: "scaledobjects", kind: "ScaledObject"},
}

// servedScalers returns the autoscaler kinds the cluster serves: the scan
// skips the others.
func (c *checker) servedScalers() []scaler {
	var out []scaler
	for _, s := range scalers {
		if s.builtIn {
			out = append(out, s)
			continue
		}
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(s.group + "/" + s.version)
		if err != nil {
			continue // not served, or discovery will fail the scan anyway
		}
		for _, r := range list.APIResources {
			if r.Name == s.resource {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// fromNeeds are the reads of discover.Discover.
func (c *checker) fromNeeds() []Need {
	ns := c.opts.FromNamespace
	switch c.opts.From {
	case FromArgoCD:
		// AppProjects and Argo CD's ConfigMaps live in Argo CD's own
		// namespace, also when Applications live in any.
		argo := cmp.Or(c.opts.ArgoNamespace, ns, "argocd")
		needs := []Need{
			{Verb: "list", Group: discover.Applications.Group, Resource: discover.Applications.Resource, Namespace: ns,
				Why: "--from argocd discovers apps from the Applications " + whereObjects(ns)},
			{Verb: "list", Group: discover.AppProjects.Group, Resource: discover.AppProjects.Resource, Namespace: argo,
				Why: "--from argocd reads the AppProjects' sourceRepos, which say which repositories each Application may fetch"},
			{Verb: "get", Resource: "configmaps", Namespace: argo, Name: "argocd-cm", Optional: true,
				Why: "--from argocd reads argocd-cm's ignore rules, resource exclusions, tracking method, installation id and kustomize.buildOptions; without it fields Argo CD ignores may show as drift (the scan warns ReconcilerSettingsUnreadable)"},
		}
		if ns == "" {
			needs = append(needs, Need{Verb: "get", Resource: "configmaps", Namespace: argo, Name: "argocd-cmd-params-cm", Optional: true,
				Why: "--from argocd -A reads argocd-cmd-params-cm's application.namespaces, the namespaces whose Applications Argo CD reconciles; without it every namespace's are scanned (the scan warns ReconcilerSettingsUnreadable)"})
		}
		return needs
	case FromFlux:
		return []Need{
			{Verb: "list", Group: discover.Kustomizations.Group, Resource: discover.Kustomizations.Resource, Namespace: ns,
				Why: "--from flux discovers apps from the Kustomizations " + whereObjects(ns)},
			{Verb: "list", Group: discover.HelmReleases.Group, Resource: discover.HelmReleases.Resource, Namespace: ns,
				Why: "--from flux discovers apps from the HelmReleases " + whereObjects(ns)},
			{Verb: "list", Group: discover.GitRepositories.Group, Resource: discover.GitRepositories.Resource, Namespace: ns,
				Why: "--from flux reads the GitRepositories the Kustomizations and HelmReleases take their source from"},
			{Verb: "list", Group: discover.OCIRepositories.Group, Resource: discover.OCIRepositories.Resource, Namespace: ns, Optional: true,
				Why: "--from flux reads the OCIRepositories Kustomizations and HelmReleases take their artifact or chart from; without it those apps are errors"},
			{Verb: "list", Group: discover.HelmRepositories.Group, Resource: discover.HelmRepositories.Resource, Namespace: ns, Optional: true,
				Why: "--from flux reads the HelmRepositories HelmReleases take their chart from; without it those apps are errors"},
			{Verb: "list", Group: discover.HelmCharts.Group, Resource: discover.HelmCharts.Resource, Namespace: ns, Optional: true,
				Why: "--from flux reads the HelmCharts a HelmRelease's chartRef names; without it those apps are errors"},
			{Verb: "get", Resource: "configmaps", Namespace: ns, Optional: true,
				Why: "--from flux reads the ConfigMaps HelmReleases take values from (valuesFrom)"},
			{Verb: "get", Resource: "secrets", Namespace: ns, Optional: true,
				Why: "--from flux reads the Secrets HelmReleases take values from (valuesFrom)"},
		}
	}
	return nil
}

// whereObjects is "in namespace NS", or "in every namespace".
func whereObjects(ns string) string {
	if ns == "" {
		return "in every namespace"
	}
	return "in namespace " + ns
}
