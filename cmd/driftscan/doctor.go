package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/doctor"
	"github.com/calricon/driftscan/run"
)

// doctorOptions are the flags of `driftscan doctor`; Complete turns them
// into a doctor.Options.
type doctorOptions struct {
	streams    streams
	kubeconfig kubeconfig

	configPath string
	path       string
	namespace  string
	resources  []string
	state      string
	lease      string
	output     string
	gitCache   string
	gitMaxSize string
	timeout    time.Duration
	discover   discoverFlags

	// Filled by Complete.
	client kubernetes.Interface
	plan   doctor.Plan
}

func newDoctorCommand(s streams) *cobra.Command {
	o := &doctorOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "doctor (--config FILE | --path DIR | --resources GROUP/RESOURCE,... | --from argocd|flux)",
		Short: "Check that the identity the scan runs as may do what the scan needs, and nothing more",
		Long: `Ask the API server, as the identity of the kubeconfig (or the in-cluster
ServiceAccount, or the user of --as), for every permission the scan needs: get and list on what the
apps declare and on what classification reads, and get and update on the state
ConfigMap and the Lease. Each permission that is missing is named with the app
or setting that needs it. Write permissions the identity holds and the scan
does not need are warned about, each with a fix, so an over-privileged
ServiceAccount can be shrunk.

doctor only creates access reviews; it changes nothing.

Exit codes: 0 nothing the scan needs is missing, 1 something is missing,
2 an error kept part of the check from being made.`,
		Example: `  # The identity of the current context, for the apps of a config file
  driftscan doctor --config scan.yaml --state configmap:driftscan/driftscan-state

  # As the chart's ServiceAccount (impersonated by an admin), for resources named by hand
  driftscan doctor --as system:serviceaccount:driftscan:driftscan --resources apps/deployments,secrets -n shop

  # JSON, for CI
  driftscan doctor --path deploy/ -n shop -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			if err := o.Complete(ctx); err != nil {
				return err
			}
			return o.Run(ctx)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *doctorOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.configPath, "config", "", "scan config file: check what its apps declare")
	f.StringVar(&o.path, "path", "", "one folder of manifests, a kustomization or a chart, as `driftscan scan --path`")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace); with --resources: the namespaces to check, comma-separated (default: every namespace)")
	f.StringSliceVar(&o.resources, "resources", nil, "resources the scan lists, instead of rendering apps: GROUP/RESOURCE or RESOURCE.GROUP, comma-separated (apps/deployments,secrets)")
	f.StringVar(&o.state, "state", "", "the scan's --state: configmap:NAMESPACE/NAME needs get and update on that ConfigMap")
	f.StringVar(&o.lease, "lease", "", "the scan's --lease: NAMESPACE/NAME needs get and update on that Lease (default: the --state ConfigMap's namespace and name)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	o.kubeconfig.bindFlags(f)
	f.Lookup("as").Usage = "check this user (system:serviceaccount:NAMESPACE:NAME for a ServiceAccount) instead, by impersonation"
	f.Lookup("as-group").Usage = "with --as: a group to impersonate too (repeatable)"
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones and charts from Helm repositories (default: the user cache folder)")
	addGitMaxSize(f, &o.gitMaxSize)
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	o.discover.add(f)
}

// Complete checks the flags, connects, and plans the check: what the scan
// needs (doctor.MakePlan).
func (o *doctorOptions) Complete(ctx context.Context) error {
	if o.output != string(doctor.FormatText) && o.output != string(doctor.FormatJSON) {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	if err := o.checkSources(); err != nil {
		return err
	}
	popts := doctor.DefaultPlanOptions()
	if err := o.completeCheck(&popts.Check); err != nil {
		return err
	}
	restCfg, _, ctxNamespace, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	if err := o.impersonate(restCfg); err != nil {
		return err
	}
	if o.client, err = kubernetes.NewForConfig(restCfg); err != nil {
		return err
	}
	if len(o.resources) > 0 {
		popts.Check.Resources, err = resourcesFlag(o.resources, o.namespace)
	} else {
		err = o.completeApps(&popts, ctxNamespace)
	}
	if err != nil {
		return err
	}
	o.plan, err = doctor.MakePlan(ctx, restCfg, popts)
	return err
}

// checkSources checks that one of --config, --path, --resources and --from
// says what to check.
func (o *doctorOptions) checkSources() error {
	sources := 0
	for _, set := range []bool{o.configPath != "", o.path != "", len(o.resources) > 0} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		return errors.New("give only one of --config, --path and --resources")
	}
	if sources == 0 && o.discover.from == "" {
		return errors.New("give --config FILE, --path DIR, --resources GROUP/RESOURCE,... or --from argocd|flux")
	}
	return nil
}

// completeCheck fills the state, the Lease and the reconciler the scan uses.
func (o *doctorOptions) completeCheck(c *doctor.Options) error {
	if o.state != "" {
		ref, err := run.ParseState(o.state)
		if err != nil {
			return fmt.Errorf("--state: %w", err)
		}
		if ref.Path == "" {
			c.State = &doctor.ObjectRef{Namespace: ref.Namespace, Name: ref.Name}
		}
	}
	lease, err := run.LeaseFor(o.state, o.lease, false)
	if err != nil {
		return err
	}
	if lease.Name != "" {
		c.Lease = &doctor.ObjectRef{Namespace: lease.Namespace, Name: lease.Name}
	}
	return o.completeFrom(c)
}

// completeFrom says which reconciler objects the scan lists: those of
// --from, or Argo CD's Applications for --import-argocd alone.
func (o *doctorOptions) completeFrom(c *doctor.Options) error {
	switch from := o.discover.from; {
	case from == "" && o.discover.importArgo, from == discover.FromArgoCD:
		c.From, c.FromNamespace, c.ArgoNamespace = doctor.FromArgoCD, o.discover.argoNamespace, o.discover.argoNamespace
		if o.discover.allNamespaces {
			c.FromNamespace = ""
		}
	case from == discover.FromFlux:
		c.From, c.FromNamespace = doctor.FromFlux, o.discover.fluxNamespace
	case from != "":
		return fmt.Errorf("--from %q: want argocd or flux", from)
	}
	return nil
}

// impersonate checks --as-group has its --as (the kubeconfig flags set the
// impersonation itself), and waives the client's rate limit: access reviews
// are cheap for the API server.
func (o *doctorOptions) impersonate(cfg *rest.Config) error {
	cfg.QPS, cfg.Burst = 50, 100
	if as := o.kubeconfig.Overrides.AuthInfo; as.Impersonate == "" && len(as.ImpersonateGroups) > 0 {
		return errors.New("--as-group needs --as")
	}
	return nil
}

// completeApps says which apps to render for what they declare.
func (o *doctorOptions) completeApps(p *doctor.PlanOptions, ctxNamespace string) error {
	var err error
	if p.Config, err = loadConfig(o.configPath, o.path, o.namespace, ctxNamespace); err != nil {
		return err
	}
	// Credentials are bound before discovery adds apps that tenants name.
	if err := o.discover.git.apply(p.Config); err != nil {
		return err
	}
	if o.discover.from != "" {
		d, err := o.discover.options("")
		if err != nil {
			return err
		}
		p.Discover = &d.Options
	}
	if o.gitCache != "" {
		p.Apps.GitCacheDir = o.gitCache
	}
	p.Apps.GitMaxBytes, err = parseGitMaxSize(o.gitMaxSize)
	return err
}

// resourcesFlag parses --resources, in each namespace of -n (or
// cluster-wide).
func resourcesFlag(specs []string, namespaces string) ([]doctor.Resource, error) {
	nss := []string{""}
	if namespaces != "" {
		nss = nil
		for _, ns := range strings.Split(namespaces, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				nss = append(nss, ns)
			}
		}
	}
	var out []doctor.Resource
	for _, spec := range specs {
		group, resource, err := parseResource(spec)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			out = append(out, doctor.Resource{Group: group, Resource: resource, Namespace: ns, Why: "named by --resources"})
		}
	}
	return out, nil
}

// parseResource reads GROUP/RESOURCE (core/RESOURCE or /RESOURCE for the
// core group), RESOURCE.GROUP as kubectl writes it, or RESOURCE.
func parseResource(spec string) (group, resource string, err error) {
	spec = strings.TrimSpace(spec)
	switch {
	case strings.Contains(spec, "/"):
		group, resource, _ = strings.Cut(spec, "/")
		if group == "core" {
			group = ""
		}
	case strings.Contains(spec, "."):
		resource, group, _ = strings.Cut(spec, ".")
	default:
		resource = spec
	}
	if resource == "" || strings.ContainsAny(resource, "/") {
		return "", "", fmt.Errorf("--resources %q: want GROUP/RESOURCE, RESOURCE.GROUP or RESOURCE (apps/deployments, secrets)", spec)
	}
	if strings.ToLower(resource) != resource {
		return "", "", fmt.Errorf("--resources %q: want the plural resource name (deployments), not the kind", spec)
	}
	return group, resource, nil
}

// Run checks and prints the result. The exit code is 1 when something the
// scan needs is missing and 2 when part of the check could not be made.
func (o *doctorOptions) Run(ctx context.Context) error {
	r, err := doctor.Run(ctx, o.client, o.plan)
	if err != nil {
		return err
	}
	if err := r.Write(o.streams.Out, doctor.Format(o.output)); err != nil {
		return err
	}
	for _, e := range r.Errors {
		fmt.Fprintf(o.streams.Err, "error: %v\n", e)
	}
	if code := r.ExitCode(); code != 0 {
		return exitError{code: code}
	}
	return nil
}
