package run

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/report"
)

// suspensions marks the apps paused by breakglass, reports the suspensions
// past their deadline as drift (breakglass.Annotate), and with AutoResume
// resumes those whose app has no drift left that the next sync would
// revert. Only apps discovered from a reconciler can be paused.
func suspensions(ctx context.Context, client dynamic.Interface, r *report.Report, o Options) error {
	gitops := false
	for _, a := range r.Apps {
		gitops = gitops || a.GitOps != nil
	}
	if !gitops {
		return nil
	}
	// Only where the apps' reconciler objects live: with the chart's
	// rbac.scope: namespaces a cluster-wide LIST is forbidden.
	list, warnings, err := breakglass.ListForApps(ctx, client, r.Apps)
	r.Warnings = append(r.Warnings, warnings...)
	if err != nil {
		return fmt.Errorf("breakglass suspensions: %w", err)
	}
	expired := breakglass.Annotate(r, list, o.Now())
	for i := range r.Apps {
		if bg := r.Apps[i].Breakglass; bg != nil {
			bg.Unbackported = len(breakglass.Blocking(r.Apps[i]))
		}
	}
	if !o.AutoResume {
		return nil
	}
	var errs []error
	for i := range r.Apps {
		app := &r.Apps[i]
		s, ok := expired[app.Name]
		if !ok {
			continue
		}
		if blocking := breakglass.Blocking(*app); len(blocking) > 0 {
			o.Logger.Warn("not resuming an expired suspension: the next sync would revert drift", "app", app.Name, "findings", len(blocking))
			continue
		}
		if _, err := breakglass.Resume(ctx, client, s.Target, breakglass.ResumeOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("auto-resume %s: %w", app.Name, err))
			continue
		}
		breakglass.MarkResumed(app, s)
	}
	return errors.Join(errs...)
}
