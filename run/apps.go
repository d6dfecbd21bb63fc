package run

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/shard"
)

// Discover says which reconciler objects add apps to the config.
type Discover struct {
	// Options are discover's; Options.ServerURL defaults to the cluster's.
	Options discover.Options
	// RulesOnly adds no app: only the ignore rules of the Applications named
	// like the config's apps, as their debts (--import-argocd without --from).
	RulesOnly bool
}

// discoverApps adds what the reconciler objects describe to cfg, and returns
// what discovery found, with the errors of single objects to put in the
// report once it is made.
func discoverApps(ctx context.Context, client dynamic.Interface, cfg *config.Config, o Options) (discover.Result, error) {
	if o.Discover == nil {
		return discover.Result{}, nil
	}
	dopts := o.Discover.Options
	if dopts.ServerURL == "" {
		dopts.ServerURL = o.Scan.RESTConfig.Host
	}
	res, err := discover.Discover(ctx, client, dopts)
	if err != nil {
		return discover.Result{}, err
	}
	if o.Discover.RulesOnly {
		res.RulesInto(cfg)
		return discover.Result{Skipped: res.Skipped, Warnings: res.Warnings}, nil
	}
	if err := res.Into(cfg); err != nil {
		return discover.Result{}, err
	}
	return res, nil
}

// shardPlan is this run's shard and the shard of every app of the config.
type shardPlan struct {
	spec shard.Spec
	of   map[string]int
}

// selectApps keeps the apps of o.Shard and o.Apps, and returns the shard
// plan (nil without o.Shard). No app left is an error, except in a shard,
// which may own none; so is an app of o.Apps the config does not have,
// with discovery's reason when it skipped the object of that name.
func selectApps(cfg *config.Config, o Options, skipped []discover.Skip) (plan *shardPlan, err error) {
	if o.Shard != "" {
		sh, err := parseShard(o.Shard)
		if err != nil {
			return nil, err
		}
		by, err := shard.ParseBy(string(o.ShardBy))
		if err != nil {
			return nil, err
		}
		units := make([]shard.App, len(cfg.Apps))
		for i, a := range cfg.Apps {
			units[i] = shard.App{Name: a.Name, Namespace: a.Namespace}
		}
		plan = &shardPlan{spec: sh, of: map[string]int{}}
		var kept []config.App
		for i, s := range shard.Plan(units, sh.Count, by) {
			plan.of[cfg.Apps[i].Name] = s
			if s == sh.Index {
				kept = append(kept, cfg.Apps[i])
			}
		}
		cfg.Apps = kept
	}
	if len(o.Apps) > 0 {
		want := map[string]bool{}
		for _, a := range o.Apps {
			want[a] = true
		}
		var kept []config.App
		for _, a := range cfg.Apps {
			if want[a.Name] {
				kept = append(kept, a)
				delete(want, a.Name)
			}
		}
		for _, a := range o.Apps {
			if !want[a] {
				continue
			}
			for _, s := range skipped {
				if s.Names(a) {
					return nil, fmt.Errorf("app %s: discovery skipped %s", a, s)
				}
			}
			return nil, fmt.Errorf("app %s: no such app in the config", a)
		}
		cfg.Apps = kept
	}
	if len(cfg.Apps) == 0 && o.Shard == "" {
		return nil, errors.New("no apps to scan")
	}
	return plan, nil
}

func parseShard(spec string) (shard.Spec, error) {
	sh, err := shard.ParseSpec(spec)
	if err != nil {
		return shard.Spec{}, fmt.Errorf("shard %q: %w", spec, err)
	}
	return sh, nil
}

// attachDiscoveryWarnings adds discovery's warnings to the report. With
// only some apps asked for (--app), a NotScanned warning of another
// reconciler object is left out, as attachDiscoveryErrors leaves out its
// errors; the reconciler's settings concern every app.
func attachDiscoveryWarnings(r *report.Report, ws []report.Warning, onlyAsked bool) {
	objects := reconcilerObjects(r)
	for _, w := range ws {
		if onlyAsked && w.Code == report.WarnNotScanned && !objects[w.Object] {
			continue
		}
		r.Warnings = append(r.Warnings, w)
	}
}

// attachDiscoveryErrors puts what discovery could not reproduce on the app
// it concerns, or on the scan, so it shows in the report and its exit code.
// With only some apps asked for (--app), what concerns neither those apps
// nor their reconciler objects is left out: another team's broken
// HelmRelease (or one whose namespace is being deleted, its source gone
// first) is no error of this scan.
func attachDiscoveryErrors(r *report.Report, errs []*discover.Error, onlyAsked bool) {
	apps := map[string]*report.App{}
	for i := range r.Apps {
		apps[r.Apps[i].Name] = &r.Apps[i]
	}
	objects := reconcilerObjects(r)
	for _, e := range errs {
		a, ok := apps[e.App]
		if onlyAsked && !ok && !objects[e.Object] {
			continue
		}
		if !ok || e.App == "" {
			r.Errors = append(r.Errors, e.Error())
			continue
		}
		if a.Error != "" {
			a.Error += "; "
		}
		a.Error += e.Error()
	}
}

// reconcilerObjects are the reconciler objects the report's apps were
// discovered from (report.GitOps.Object).
func reconcilerObjects(r *report.Report) map[string]bool {
	objects := map[string]bool{}
	for _, a := range r.Apps {
		if a.GitOps != nil {
			objects[a.GitOps.Object] = true
		}
	}
	return objects
}
