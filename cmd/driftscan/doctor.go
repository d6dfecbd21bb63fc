package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/doctor"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
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
	as         string
	asGroups   []string
	discover   discoverFlags

	// Filled by Complete.
	client kubernetes.Interface
	check  doctor.Options
	// problems are what kept part of the check from being made: an app
	// that does not render, discovery that failed.
	problems []error
	// notes are said but change nothing: discovery the identity may not do.
	notes []string
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
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "scan config file: check what its apps declare")
	f.StringVar(&o.path, "path", "", "one folder of manifests, a kustomization or a chart, as `driftscan scan --path`")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace); with --resources: the namespaces to check, comma-separated (default: every namespace)")
	f.StringSliceVar(&o.resources, "resources", nil, "resources the scan lists, instead of rendering apps: GROUP/RESOURCE or RESOURCE.GROUP, comma-separated (apps/deployments,secrets)")
	f.StringVar(&o.state, "state", "", "the scan's --state: configmap:NAMESPACE/NAME needs get and update on that ConfigMap")
	f.StringVar(&o.lease, "lease", "", "the scan's --lease: NAMESPACE/NAME needs get and update on that Lease (default: the --state ConfigMap's namespace and name)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.StringVar(&o.kubeconfig.Path, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	f.StringVar(&o.kubeconfig.Context, "context", "", "kubeconfig context to use (default: the current context)")
	f.StringVar(&o.as, "as", "", "check this user (system:serviceaccount:NAMESPACE:NAME for a ServiceAccount) instead, by impersonation")
	f.StringArrayVar(&o.asGroups, "as-group", nil, "with --as: a group to impersonate too (repeatable)")
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones (default: the user cache folder)")
	addGitMaxSize(f, &o.gitMaxSize)
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	o.discover.add(f)
	return cmd
}

// Complete checks the flags, connects, and works out what the scan needs:
// the resources of the apps (rendered as the scan renders them, after
// discovery with --from) or of --resources, the state and the Lease.
func (o *doctorOptions) Complete(ctx context.Context) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
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

	opts := doctor.DefaultOptions()
	if o.state != "" {
		ref, err := notify.ParseStateRef(o.state)
		if err != nil {
			return fmt.Errorf("--state: %w", err)
		}
		if ref.Path == "" {
			opts.State = &doctor.ObjectRef{Namespace: ref.Namespace, Name: ref.Name}
		}
	}
	// The Lease the scan would hold: --lease, else the state ConfigMap's name.
	leaseNS, leaseName, err := (&notifyFlags{state: o.state, lease: o.lease}).leaseRef()
	if err != nil {
		return err
	}
	if leaseName != "" {
		opts.Lease = &doctor.ObjectRef{Namespace: leaseNS, Name: leaseName}
	}
	switch from := o.discover.from; {
	case from == "" && o.discover.importArgo:
		// --import-argocd alone still lists the Applications.
		opts.From, opts.FromNamespace = doctor.FromArgoCD, o.discover.argoNamespace
	case from == discover.FromArgoCD:
		opts.From, opts.FromNamespace = doctor.FromArgoCD, o.discover.argoNamespace
	case from == discover.FromFlux:
		opts.From, opts.FromNamespace = doctor.FromFlux, o.discover.fluxNamespace
	case from != "":
		return fmt.Errorf("--from %q: want argocd or flux", from)
	}
	if opts.From == doctor.FromArgoCD && o.discover.allNamespaces {
		opts.FromNamespace = ""
	}

	restCfg, _, ctxNamespace, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	// Access reviews are cheap for the API server: do not wait on the
	// client's default 5 per second.
	restCfg.QPS, restCfg.Burst = 50, 100
	restCfg.UserAgent = "driftscan/" + version
	if o.as != "" {
		restCfg.Impersonate = rest.ImpersonationConfig{UserName: o.as, Groups: o.asGroups}
	} else if len(o.asGroups) > 0 {
		return errors.New("--as-group needs --as")
	}
	if o.client, err = kubernetes.NewForConfig(restCfg); err != nil {
		return err
	}

	if len(o.resources) > 0 {
		if opts.Resources, err = resourcesFlag(o.resources, o.namespace); err != nil {
			return err
		}
		o.check = opts
		return nil
	}
	var cfg *config.Config
	switch {
	case o.configPath != "":
		if cfg, err = config.Load(o.configPath); err != nil {
			return err
		}
	case o.path != "":
		if cfg, err = pathConfig(o.path, o.namespace, ctxNamespace); err != nil {
			return err
		}
	default:
		cfg = &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: config.DefaultAppliers}
	}
	if o.discover.from != "" {
		if _, err := o.discover.apply(ctx, restCfg, "", cfg); err != nil {
			err = fmt.Errorf("the apps of --from %s are not checked: %w", o.discover.from, err)
			if apierrors.IsForbidden(err) {
				// The check names the missing list: exit 1, not 2.
				o.notes = append(o.notes, err.Error())
			} else {
				o.problems = append(o.problems, err)
			}
		}
		for _, e := range o.discover.discoveryErrors {
			o.notes = append(o.notes, "discovery: "+e.Error())
		}
	}

	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("cannot reach the cluster at %s: %w", restCfg.Host, err)
	}
	cached := memory.NewMemCacheClient(dc)
	aopts := doctor.DefaultAppOptions()
	aopts.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
	aopts.KubeVersion = v.GitVersion
	aopts.APIVersions = apiVersions(cached)
	if o.gitCache != "" {
		aopts.GitCacheDir = o.gitCache
	}
	if aopts.GitMaxBytes, err = parseGitMaxSize(o.gitMaxSize); err != nil {
		return err
	}
	opts.Resources, err = doctor.AppResources(ctx, cfg, aopts)
	o.problems = append(o.problems, unjoin(err)...)
	o.check = opts
	return nil
}

// apiVersions are the group/versions the cluster serves, for Helm's
// .Capabilities.APIVersions; none when discovery fails (the scan then fails
// too, and says why).
func apiVersions(dc discovery.DiscoveryInterface) []string {
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil
	}
	var out []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out = append(out, v.GroupVersion)
		}
	}
	return out
}

// unjoin splits an errors.Join into its errors, one per line of output.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
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
	res, err := doctor.Check(ctx, o.client, o.check)
	if err != nil {
		return err
	}
	res.Notes = append(o.notes, res.Notes...)
	switch o.output {
	case "json":
		err = writeDoctorJSON(o.streams.Out, res, o.problems)
	default:
		err = writeDoctorText(o.streams.Out, res)
	}
	if err != nil {
		return err
	}
	for _, p := range o.problems {
		fmt.Fprintf(o.streams.Err, "error: %v\n", p)
	}
	switch {
	case len(o.problems) > 0:
		return exitError{code: report.ExitError}
	case !res.OK:
		return exitError{code: 1}
	}
	return nil
}

// doctorJSON is the JSON output: the result, and what kept part of the
// check from being made.
type doctorJSON struct {
	doctor.Result
	Errors []string `json:"errors,omitempty"`
}

func writeDoctorJSON(w io.Writer, res doctor.Result, problems []error) error {
	out := doctorJSON{Result: res}
	for _, p := range problems {
		out.Errors = append(out.Errors, p.Error())
	}
	if out.Missing == nil {
		out.Missing = []doctor.Need{}
	}
	if out.Excess == nil {
		out.Excess = []doctor.Grant{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeDoctorText writes who the identity is, every permission the scan
// needs and whether it is granted, then an error line per missing need, a
// warning line per write the scan does not need, and a verdict.
func writeDoctorText(w io.Writer, res doctor.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "identity: %s\n", res.Identity)
	if len(res.Groups) > 0 {
		fmt.Fprintf(&b, "groups:   %s\n", strings.Join(res.Groups, ", "))
	}
	missing := map[string]bool{}
	for _, n := range res.Missing {
		missing[n.String()] = true
	}
	fmt.Fprintf(&b, "\nthe scan needs %d permissions, %d missing:\n", len(res.Needed), len(res.Missing))
	for _, n := range res.Needed {
		mark := "ok"
		if missing[n.String()] {
			mark = "MISSING"
		}
		opt := ""
		if n.Optional {
			opt = " (optional)"
		}
		fmt.Fprintf(&b, "  %-8s %s%s\n", mark, n, opt)
	}
	for _, n := range res.Missing {
		if n.Verb == "get" && n.Resource == "namespaces" && n.Name != "" {
			// Asked only because list was refused: not in Needed above.
			fmt.Fprintf(&b, "  %-8s %s (optional)\n", "MISSING", n)
		}
	}
	if len(res.Missing)+len(res.Excess)+len(res.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, n := range res.Missing {
		if n.Optional {
			fmt.Fprintf(&b, "warning: cannot %s: %s (the scan runs without it)\n", n, n.Why)
		} else {
			fmt.Fprintf(&b, "error: cannot %s: %s\n", n, n.Why)
		}
	}
	for _, g := range res.Excess {
		fmt.Fprintf(&b, "warning: not needed: %s; fix: %s\n", g, g.Fix)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString("\n")
	switch req := len(res.MissingRequired()); {
	case req > 0:
		fmt.Fprintf(&b, "%d %s the scan needs %s missing: grant %s to %s.\n", req, plural(req, "permission", "permissions"), plural(req, "is", "are"), plural(req, "it", "them"), res.Identity)
	case len(res.Excess) > 0:
		fmt.Fprintf(&b, "the scan can run as %s; %d write %s it does not need can be taken away.\n", res.Identity, len(res.Excess), plural(len(res.Excess), "permission", "permissions"))
	default:
		fmt.Fprintf(&b, "the scan can run as %s, which holds no write permission the scan does not need.\n", res.Identity)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
