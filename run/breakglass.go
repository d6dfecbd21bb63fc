package run

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/scanner"
)

// UnbackportedOptions say how to find and scan a paused app. Start from
// DefaultUnbackportedOptions.
type UnbackportedOptions struct {
	// Discover finds the app's source from its reconciler object (From and
	// Namespace); ServerURL defaults to the cluster's.
	Discover discover.Options
	// Scan configures the scan; its RESTConfig reaches the cluster.
	Scan scanner.Options
	// Git holds the credentials bound to Git hosts and the CA file
	// (config.Git), for a private repository.
	Git config.Git
}

// DefaultUnbackportedOptions are discover's and scanner's defaults.
func DefaultUnbackportedOptions() UnbackportedOptions {
	return UnbackportedOptions{Discover: discover.DefaultOptions(), Scan: scanOptions()}
}

// Unbackported scans the apps discovery makes of the reconciler object t
// (one per source of an Application), and lists their pipeline and human
// findings that are not ignored: the next sync would revert them
// (breakglass.Blocking). It is what resume refuses over.
func Unbackported(ctx context.Context, client dynamic.Interface, t breakglass.Target, opts UnbackportedOptions) ([]string, error) {
	out, _, err := unbackported(ctx, client, t, opts)
	return out, err
}

// unbackported is Unbackported, and the apps discovery made of t.
func unbackported(ctx context.Context, client dynamic.Interface, t breakglass.Target, opts UnbackportedOptions) ([]string, []config.App, error) {
	dopts := opts.Discover
	if dopts.ServerURL == "" {
		dopts.ServerURL = opts.Scan.RESTConfig.Host
	}
	res, err := discover.Discover(ctx, client, dopts)
	if err != nil {
		return nil, nil, err
	}
	cfg := config.New()
	cfg.Git = opts.Git
	// The apps of t by the object they were discovered from, not by name:
	// another app may be named <app>-<something>, and an Application
	// outside Argo CD's namespace may be named <namespace>/<name>.
	names := map[string]bool{}
	for _, a := range res.Apps {
		if a.GitOps == nil || a.GitOps.Object != t.String() {
			continue
		}
		if a.TargetRevision != "" {
			// Resuming applies what Git is at now, not what the
			// reconciler applied last: that is what it would revert.
			a.Source.Revision, a.TargetRevision = a.TargetRevision, ""
		}
		cfg.Apps = append(cfg.Apps, a)
		names[a.Name] = true
	}
	for _, r := range res.Ignore {
		if names[r.App] {
			cfg.Ignore = append(cfg.Ignore, r)
		}
	}
	if len(cfg.Apps) == 0 {
		for _, skip := range res.Skipped {
			if skip.Object == t.String() {
				return nil, nil, fmt.Errorf("discovery skipped %s", skip)
			}
		}
		return nil, nil, fmt.Errorf("%s: discovery found no source to scan", t)
	}
	r, err := scanner.Scan(ctx, cfg, opts.Scan)
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, a := range r.Apps {
		if a.Error != "" {
			return nil, nil, fmt.Errorf("scan of app %s: %s", a.Name, a.Error)
		}
		out = append(out, breakglass.Blocking(a)...)
	}
	return out, cfg.Apps, nil
}
