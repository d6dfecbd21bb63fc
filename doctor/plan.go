package doctor

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/scanner"
)

// PlanOptions describe the scan to check for. Start from DefaultPlanOptions.
type PlanOptions struct {
	// Check holds the state, the Lease and the reconciler the scan uses
	// (Options.State, Lease, From, FromNamespace), and Resources named by
	// hand: when it has resources, no app is rendered.
	Check Options
	// Config holds the apps whose resources the scan lists.
	Config *config.Config
	// Discover, when set, adds the reconciler's apps to Config first, as
	// the scan's --from does.
	Discover *discover.Options
	// Apps say where Git sources are cached; the mapper and the cluster's
	// versions are read by Plan.
	Apps AppOptions
}

// DefaultPlanOptions returns a plan with no apps and DefaultAppOptions.
func DefaultPlanOptions() PlanOptions {
	return PlanOptions{Check: DefaultOptions(), Config: config.New(), Apps: DefaultAppOptions()}
}

// Plan is what doctor checks, and what kept part of the check from being
// planned.
type Plan struct {
	Check Options
	// Problems are an app that does not render, discovery that failed: the
	// check is not complete.
	Problems []error
	// Notes are said but change nothing: discovery the identity may not do,
	// apps discovery could not reproduce.
	Notes []string
}

// MakePlan works out what the scan would need, as the identity of cfg: the
// resources of the apps (discovered first with Discover, then rendered as
// the scan renders them) unless opts.Check names resources, and the state
// and Lease. It returns an error when the cluster cannot be reached.
func MakePlan(ctx context.Context, cfg *rest.Config, opts PlanOptions) (Plan, error) {
	p := Plan{Check: opts.Check}
	if len(p.Check.Resources) > 0 {
		return p, nil
	}
	if opts.Discover != nil {
		p.discover(ctx, cfg, opts)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Plan{}, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	caps, err := scanner.ReadCapabilities(cached)
	if err != nil {
		return Plan{}, fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
	}
	aopts := opts.Apps
	aopts.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
	aopts.KubeVersion, aopts.APIVersions = caps.KubeVersion, caps.APIVersions
	p.Check.Resources, err = AppResources(ctx, opts.Config, aopts)
	p.Problems = append(p.Problems, unjoin(err)...)
	return p, nil
}

// discover adds the reconciler's apps to opts.Config. A list the identity
// may not make is a note, since the check names it as missing.
func (p *Plan) discover(ctx context.Context, cfg *rest.Config, opts PlanOptions) {
	dopts := *opts.Discover
	if dopts.ServerURL == "" {
		dopts.ServerURL = cfg.Host
	}
	res, err := discoverInto(ctx, cfg, opts.Config, dopts)
	if err != nil {
		err = fmt.Errorf("the apps of --from %s are not checked: %w", dopts.From, err)
		if apierrors.IsForbidden(err) {
			p.Notes = append(p.Notes, err.Error())
		} else {
			p.Problems = append(p.Problems, err)
		}
	}
	for _, e := range res.Errors {
		p.Notes = append(p.Notes, "discovery: "+e.Error())
	}
	for _, w := range res.Warnings {
		p.Notes = append(p.Notes, "discovery: "+w.Object+": "+w.Message)
	}
}

func discoverInto(ctx context.Context, cfg *rest.Config, into *config.Config, opts discover.Options) (discover.Result, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return discover.Result{}, err
	}
	res, err := discover.Discover(ctx, client, opts)
	if err != nil {
		return discover.Result{}, err
	}
	return res, res.Into(into)
}

// unjoin splits an errors.Join into its errors, one per line of output.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		return j.Unwrap()
	}
	return []error{err}
}

// Report is a check and what kept part of it from being made, as doctor
// prints it.
type Report struct {
	Result
	Errors []string `json:"errors,omitempty"`
}

// Run checks plan as the identity of client.
func Run(ctx context.Context, client kubernetes.Interface, plan Plan) (Report, error) {
	res, err := Check(ctx, client, plan.Check)
	if err != nil {
		return Report{}, err
	}
	res.Notes = append(append([]string{}, plan.Notes...), res.Notes...)
	r := Report{Result: res}
	for _, p := range plan.Problems {
		r.Errors = append(r.Errors, p.Error())
	}
	return r, nil
}

// ExitCode is 0 when the scan can run as the identity, 1 when something it
// needs is missing, 2 when part of the check could not be made.
func (r Report) ExitCode() int {
	switch {
	case len(r.Errors) > 0:
		return 2
	case !r.OK:
		return 1
	}
	return 0
}
