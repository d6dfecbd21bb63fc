package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/scanner"
)

// What `driftscan contract check` and `driftscan contract admission` need
// from the cluster and the apps, so that the CLI wires package contract
// without reaching the scanner or the classifier itself.

// ContractFacts reads what contract.Check compares the contracts with: the
// namespaces and their labels, the MutatingWebhookConfigurations, the
// contract policies installed, and whether their break-glass ConfigMap
// exists.
func ContractFacts(ctx context.Context, restCfg *rest.Config, params contract.ParamsRef) (contract.Facts, error) {
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return contract.Facts{}, err
	}
	f := contract.Facts{ParamsRef: params}
	if f.Namespaces, err = NamespaceLabels(ctx, cs); err != nil {
		return f, err
	}
	mwcs, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return f, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
	}
	f.Webhooks = []string{}
	for _, m := range mwcs.Items {
		f.Webhooks = append(f.Webhooks, m.Name)
	}
	vaps, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: contract.LabelManagedBy + "=driftscan"})
	if err != nil {
		return f, fmt.Errorf("list ValidatingAdmissionPolicies: %w", err)
	}
	for _, p := range vaps.Items {
		f.Policies = append(f.Policies, p.Name)
	}
	_, err = cs.CoreV1().ConfigMaps(params.Namespace).Get(ctx, params.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return f, fmt.Errorf("get ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	found := err == nil
	f.Params = &found
	return f, nil
}

// ContractAdmission writes the contracts' admission policies for cfg: it
// scans the apps (opts.RESTConfig reaches the cluster) to learn the kinds
// they declare in each contract's namespaces, maps them to the resources
// and subresources the API server serves, and classifies field managers
// with the config's rules and the built-in ones. opts.Resources and
// opts.Rules are filled here; opts.ApplierManagers defaults to the config's
// appliers.
func ContractAdmission(ctx context.Context, cfg *config.Config, scan scanner.Options, opts contract.AdmissionOptions) (contract.Manifests, error) {
	if opts.ApplierManagers == nil {
		opts.ApplierManagers = cfg.Appliers
	}
	opts.Rules = nil
	for _, r := range classify.Ordered(cfg.Rules) {
		opts.Rules = append(opts.Rules, contract.ClassRule{Manager: r.Manager, Subresource: r.Subresource, Users: r.Users, Groups: r.Groups, Class: r.Class})
	}
	res, err := declaredResources(ctx, cfg, scan)
	if err != nil {
		return contract.Manifests{}, err
	}
	opts.Resources = res
	return contract.Admission(cfg.Contracts, opts)
}

// declaredResources scans the apps and returns, by contract, the resources
// its apps declare in its namespaces.
func declaredResources(ctx context.Context, cfg *config.Config, scan scanner.Options) (map[string][]contract.Resource, error) {
	r, err := scanner.Scan(ctx, cfg, scan)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(scan.RESTConfig)
	if err != nil {
		return nil, err
	}
	var labels map[string]map[string]string
	if slices.ContainsFunc(cfg.Contracts, func(c contract.Contract) bool { return c.NamespaceSelector != nil }) {
		if labels, err = NamespaceLabels(ctx, cs); err != nil {
			return nil, err
		}
	}
	served, err := servedResources(cs)
	if err != nil {
		return nil, err
	}
	out := map[string][]contract.Resource{}
	var errs []error
	for _, app := range r.Apps {
		if app.Error != "" {
			errs = append(errs, fmt.Errorf("app %s: %s", app.Name, app.Error))
		}
		for _, obj := range app.Objects {
			c := contract.For(cfg.Contracts, obj.Namespace, labels[obj.Namespace])
			if c == nil {
				continue
			}
			gv, err := schema.ParseGroupVersion(obj.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", obj.Ref(), err)
			}
			res, ok := served[gv.WithKind(obj.Kind)]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: the cluster serves no %s %s", obj.Ref(), obj.APIVersion, obj.Kind))
				continue
			}
			if !slices.ContainsFunc(out[c.Name], func(x contract.Resource) bool { return x.Group == res.Group && x.Resource == res.Resource }) {
				out[c.Name] = append(out[c.Name], res)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the apps' kinds are not all known, so the policies would miss some: %w", err)
	}
	return out, nil
}

// servedResources maps each namespaced kind the API server serves to its
// resource and subresources (deployments: scale, status).
func servedResources(cs kubernetes.Interface) (map[schema.GroupVersionKind]contract.Resource, error) {
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	out := map[schema.GroupVersionKind]contract.Resource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		subs := map[string][]string{}
		for _, r := range l.APIResources {
			if main, sub, ok := strings.Cut(r.Name, "/"); ok {
				subs[main] = append(subs[main], sub)
			}
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !r.Namespaced {
				continue
			}
			out[gv.WithKind(r.Kind)] = contract.Resource{Group: gv.Group, Resource: r.Name, Subresources: subs[r.Name]}
		}
	}
	return out, nil
}
