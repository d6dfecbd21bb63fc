package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/run"
)

// discoverFlags are the flags that read apps from Argo CD or Flux objects.
type discoverFlags struct {
	from          string
	argoNamespace string
	fluxNamespace string
	allNamespaces bool
	argoClusters  []string
	selector      string
	importExpiry  string
	git           gitFlags
	importArgo    bool
}

func (d *discoverFlags) add(f *pflag.FlagSet) {
	f.StringVar(&d.from, "from", "", "also discover apps from the cluster's reconciler objects: argocd (Applications) or flux (Kustomizations and HelmReleases)")
	f.StringVar(&d.argoNamespace, "argocd-namespace", "argocd", "with --from argocd: Argo CD's own namespace: its Applications, AppProjects and argocd-cm")
	f.StringVar(&d.fluxNamespace, "flux-namespace", "", "with --from flux: the namespace of the Kustomizations and HelmReleases (default: all)")
	f.BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "with --from argocd: also the Applications of the other namespaces Argo CD reconciles (argocd-cmd-params-cm's application.namespaces)")
	f.StringArrayVar(&d.argoClusters, "argocd-cluster", nil, argoClusterUsage)
	f.StringVarP(&d.selector, "selector", "l", "", "with --from: a label selector on the reconciler objects")
	f.StringVar(&d.importExpiry, "import-expiry", "", "review date (YYYY-MM-DD) of imported ignoreDifferences rules (default: 90 days from now)")
	d.git.add(f)
	f.BoolVar(&d.importArgo, "import-argocd", false, "import the ignoreDifferences of the Argo CD Applications named like the config's apps as ignore rules (debts), without scanning the Applications' sources")
}

// argoClusterUsage is the help of --argocd-cluster, which scan, doctor and
// breakglass take.
const argoClusterUsage = "with --from argocd: another name or server URL Argo CD knows this cluster by (a cluster secret's name or server: in-cluster renamed, or the cluster registered by its own address); repeatable"

// options are the discovery the flags ask for; nil for none. With
// --import-argocd alone, only the Applications' ignore rules are imported.
func (d *discoverFlags) options(ownerLabel string) (*run.Discover, error) {
	if d.from == "" && !d.importArgo {
		return nil, nil
	}
	opts := discover.DefaultOptions()
	opts.From, opts.AllNamespaces, opts.Selector, opts.ArgoClusters = d.from, d.allNamespaces, d.selector, d.argoClusters
	rulesOnly := d.from == ""
	if rulesOnly {
		opts.From = discover.FromArgoCD
	}
	if ownerLabel != "" {
		opts.OwnerLabel = ownerLabel
	}
	switch opts.From {
	case discover.FromArgoCD:
		opts.Namespace = d.argoNamespace
	case discover.FromFlux:
		opts.Namespace = d.fluxNamespace
	default:
		return nil, fmt.Errorf("--from %q: want argocd or flux", d.from)
	}
	if d.importExpiry != "" {
		t, err := time.Parse(time.DateOnly, d.importExpiry)
		if err != nil {
			return nil, fmt.Errorf("--import-expiry %q: want a date like 2027-03-01", d.importExpiry)
		}
		opts.IgnoreExpiry = t
	}
	return &run.Discover{Options: opts, RulesOnly: rulesOnly}, nil
}
