package config

import (
	"fmt"
	"strings"
	"testing"
)

// ProjectResources permits as Argo CD's AppProject.IsGroupKindNamePermitted:
// namespaced kinds unless a set whitelist lacks them or the blacklist names
// them; cluster-scoped ones only by the whitelist, by name too.
func TestProjectResourcesAsArgoCDPermitsThem(t *testing.T) {
	all := []ProjectResource{{Group: "*", Kind: "*"}}
	for _, tt := range []struct {
		name             string
		p                *ProjectResources
		group, kind, obj string
		namespaced       bool
		refused          string
	}{
		{"no project", nil, "", "ConfigMap", "x", true, ""},
		{"namespaced, no lists", &ProjectResources{}, "apps", "Deployment", "x", true, ""},
		{"namespaced, whitelist set empty", &ProjectResources{NamespaceWhitelistSet: true}, "apps", "Deployment", "x", true, "namespaceResourceWhitelist"},
		{"namespaced, whitelisted by glob", &ProjectResources{NamespaceWhitelistSet: true, NamespaceWhitelist: []ProjectResource{{Group: "apps", Kind: "*"}}}, "apps", "Deployment", "x", true, ""},
		{"namespaced, blacklisted", &ProjectResources{NamespaceBlacklist: []ProjectResource{{Group: "", Kind: "ResourceQuota"}}}, "", "ResourceQuota", "x", true, "namespaceResourceBlacklist"},
		{"cluster-scoped, no whitelist", &ProjectResources{}, "rbac.authorization.k8s.io", "ClusterRole", "x", false, "clusterResourceWhitelist"},
		{"cluster-scoped, whitelisted", &ProjectResources{ClusterWhitelist: all}, "rbac.authorization.k8s.io", "ClusterRole", "x", false, ""},
		{"cluster-scoped, by name", &ProjectResources{ClusterWhitelist: []ProjectResource{{Group: "", Kind: "Namespace", Name: "team-*"}}}, "", "Namespace", "kube-system", false, "clusterResourceWhitelist"},
		{"cluster-scoped, name matches", &ProjectResources{ClusterWhitelist: []ProjectResource{{Group: "", Kind: "Namespace", Name: "team-*"}}}, "", "Namespace", "team-a", false, ""},
		{"cluster-scoped, blacklisted", &ProjectResources{ClusterWhitelist: all, ClusterBlacklist: []ProjectResource{{Group: "", Kind: "Namespace"}}}, "", "Namespace", "team-a", false, "clusterResourceBlacklist"},
		{"a group pattern does not match the core group", &ProjectResources{ClusterWhitelist: []ProjectResource{{Group: "?*", Kind: "*"}}}, "", "Namespace", "a", false, "clusterResourceWhitelist"},
	} {
		got := tt.p.Refuses(tt.group, tt.kind, tt.obj, "shop", tt.namespaced)
		if (tt.refused == "") != (got == "") || !strings.Contains(got, tt.refused) {
			t.Errorf("%s: Refuses = %q, want one naming %q", tt.name, got, tt.refused)
		}
	}
}

// Destinations are matched as Argo CD's isDestinationMatched: one entry
// must permit the cluster (server or name) and the namespace; a negated
// namespace denies what it names and, as Argo CD reads a negation,
// permits every other.
func TestProjectDestinationsAsArgoCDMatchesThem(t *testing.T) {
	in := func(ds ...ProjectDestination) *ProjectResources {
		return &ProjectResources{Project: "argocd/team", CheckDestinations: true, Destinations: ds,
			ClusterServer: "https://kubernetes.default.svc", ClusterName: "in-cluster"}
	}
	for _, tt := range []struct {
		name string
		p    *ProjectResources
		ns   string
		ok   bool
	}{
		{"no destinations", in(), "shop", false},
		{"any", in(ProjectDestination{Server: "*", Namespace: "*"}), "shop", true},
		{"by server", in(ProjectDestination{Server: "https://kubernetes.default.svc", Namespace: "shop"}), "shop", true},
		{"by name, glob", in(ProjectDestination{Name: "in-*", Namespace: "team-*"}), "team-a", true},
		{"another namespace", in(ProjectDestination{Server: "*", Namespace: "shop"}), "monitoring", false},
		{"another cluster", in(ProjectDestination{Server: "https://east.example", Namespace: "*"}), "shop", false},
		{"a negated namespace denies it", in(ProjectDestination{Server: "*", Namespace: "*"}, ProjectDestination{Server: "*", Namespace: "!kube-system"}), "kube-system", false},
		{"a negated namespace permits another", in(ProjectDestination{Server: "*", Namespace: "!kube-system"}), "shop", true},
		{"a negated server permits another cluster", in(ProjectDestination{Server: "*", Namespace: "*"}, ProjectDestination{Server: "!https://east.example", Namespace: "*"}), "shop", true},
		{"not checked", &ProjectResources{Destinations: nil}, "anywhere", true},
		{"no project", nil, "anywhere", true},
		// An Application with no destination namespace is refused
		// unless a destination's namespace matches "".
		{"an empty namespace", in(ProjectDestination{Server: "*", Namespace: "shop"}), "", false},
		{"an empty namespace, any", in(ProjectDestination{Server: "*", Namespace: "*"}), "", true},
	} {
		// An object in namespace ns, and an Application whose
		// destination is ns: the same rule (isDestinationMatched).
		got := tt.p.Refuses("", "ConfigMap", "cfg", tt.ns, true)
		if (got == "") != tt.ok {
			t.Errorf("%s: Refuses = %q, want permitted %v", tt.name, got, tt.ok)
		}
		got = tt.p.RefusesDestination(tt.ns)
		if (got == "") != tt.ok {
			t.Errorf("%s: RefusesDestination = %q, want permitted %v", tt.name, got, tt.ok)
		}
		if got != "" && (!strings.Contains(got, "argocd/team") || !strings.Contains(got, fmt.Sprintf("%q", tt.ns))) {
			t.Errorf("%s: RefusesDestination = %q, want it to name the project and the namespace", tt.name, got)
		}
	}
}
