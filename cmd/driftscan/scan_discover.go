package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
)

// discoverFlags are the flags that read apps from Argo CD or Flux objects.
type discoverFlags struct {
	from            string
	argoNamespace   string
	fluxNamespace   string
	allNamespaces   bool
	selector        string
	importExpiry    string
	gitTokenEnv     string
	gitUsername     string
	gitSSHKeyFile   string
	gitSSHKeyEnv    string
	importArgo      bool
	discoveryErrors []*discover.Error
}

func (d *discoverFlags) add(f *pflag.FlagSet) {
	f.StringVar(&d.from, "from", "", "also discover apps from the cluster's reconciler objects: argocd (Applications) or flux (Kustomizations and HelmReleases)")
	f.StringVar(&d.argoNamespace, "argocd-namespace", "argocd", "with --from argocd: the namespace of the Applications")
	f.StringVar(&d.fluxNamespace, "flux-namespace", "", "with --from flux: the namespace of the Kustomizations and HelmReleases (default: all)")
	f.BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "with --from argocd: Applications in every namespace")
	f.StringVarP(&d.selector, "selector", "l", "", "with --from: a label selector on the reconciler objects")
	f.StringVar(&d.importExpiry, "import-expiry", "", "review date (YYYY-MM-DD) of imported ignoreDifferences rules (default: 90 days from now)")
	f.StringVar(&d.gitTokenEnv, "git-token-env", "", "with --from: environment variable holding an HTTPS token for the discovered Git sources")
	f.StringVar(&d.gitUsername, "git-username", "", "with --git-token-env: the user name (default git)")
	f.StringVar(&d.gitSSHKeyFile, "git-ssh-key-file", "", "with --from: SSH private key file for the discovered Git sources")
	f.StringVar(&d.gitSSHKeyEnv, "git-ssh-key-env", "", "with --from: environment variable holding an SSH private key")
	f.BoolVar(&d.importArgo, "import-argocd", false, "import the ignoreDifferences of the Argo CD Applications named like the config's apps as ignore rules (debts), without scanning the Applications' sources")
}

// apply discovers apps and merges them and their imported ignore rules into
// cfg; with --import-argocd alone it imports only the rules. Errors that
// concern one object are kept for the report.
func (d *discoverFlags) apply(ctx context.Context, restCfg *rest.Config, ownerLabel string, cfg *config.Config) ([]string, error) {
	rulesOnly := d.from == "" && d.importArgo
	opts := discover.DefaultOptions()
	opts.From = d.from
	if rulesOnly {
		opts.From = discover.FromArgoCD
	}
	opts.AllNamespaces = d.allNamespaces
	opts.Selector = d.selector
	if ownerLabel != "" {
		opts.OwnerLabel = ownerLabel
	}
	opts.ServerURL = restCfg.Host
	opts.Auth = config.GitAuth{TokenEnv: d.gitTokenEnv, Username: d.gitUsername, SSHKeyFile: d.gitSSHKeyFile, SSHKeyEnv: d.gitSSHKeyEnv}
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
	client, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	res, err := discover.Discover(ctx, client, opts)
	if err != nil {
		return nil, err
	}
	if rulesOnly {
		// The rules of Applications named like a config app become that
		// app's debts; the rest have no app here to hide anything in.
		names := map[string]bool{}
		for _, a := range cfg.Apps {
			names[a.Name] = true
		}
		for _, r := range res.Ignore {
			if names[r.App] {
				cfg.Ignore = append(cfg.Ignore, r)
			}
		}
		return res.Skipped, nil
	}
	apps, err := discover.Merge(cfg.Apps, res.Apps)
	if err != nil {
		return nil, err
	}
	cfg.Apps = apps
	cfg.Ignore = append(cfg.Ignore, res.Ignore...)
	for _, e := range res.Errors {
		var de *discover.Error
		if errors.As(e, &de) {
			d.discoveryErrors = append(d.discoveryErrors, de)
		} else {
			d.discoveryErrors = append(d.discoveryErrors, &discover.Error{Err: e})
		}
	}
	return res.Skipped, nil
}
