package run

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/report"
)

// contracts gives every finding its contract verdict, once the suspensions
// are known (rules limited to break-glass read them) and with the audit
// attribution where the scan read an audit log; with ContractParams it
// ends the lifts of suspensions that are over.
func contracts(ctx context.Context, c clients, r *report.Report, cfg *config.Config, o Options) error {
	cs := cfg.Contracts
	if len(cs) == 0 {
		return nil
	}
	jo := contract.DefaultOptions()
	jo.Attribution = AuditAttribution
	jo.Destinations = map[string]string{}
	for _, a := range cfg.Apps {
		jo.Destinations[a.Name] = a.Namespace
	}
	if slices.ContainsFunc(cs, func(c contract.Contract) bool { return c.NamespaceSelector != nil }) {
		labels, err := NamespaceLabels(ctx, c.kube)
		if err != nil {
			return err
		}
		jo.NamespaceLabels = labels
	}
	if err := contract.Judge(r, cs, jo); err != nil {
		return err
	}
	if o.ContractParams == nil {
		return nil
	}
	list, warnings, err := breakglass.ListForApps(ctx, c.dynamic, r.Apps)
	r.Warnings = append(r.Warnings, warnings...)
	if err != nil {
		return fmt.Errorf("breakglass suspensions: %w", err)
	}
	gone, err := breakglass.Prune(ctx, c.dynamic, *o.ContractParams, list, o.Now())
	if len(gone) > 0 {
		o.Logger.Info("break-glass lifts ended", "apps", strings.Join(gone, ","), "configmap", o.ContractParams.Namespace+"/"+o.ContractParams.Name)
	}
	return err
}

// AuditAttribution is who made a finding by its audit attribution: only an
// exact one names a user a contract rule may match, and never the requester
// of a request a webhook changed (the webhook made the change).
func AuditAttribution(_ report.App, _ report.Object, f report.Finding) *contract.Attribution {
	a := f.Attribution
	if a == nil || a.Confidence != report.ConfidenceExact || a.User == "" || a.Requester {
		return nil
	}
	return &contract.Attribution{User: a.User, Groups: a.Groups}
}

// NamespaceLabels lists the cluster's namespaces with their labels, for
// contracts with a namespaceSelector.
func NamespaceLabels(ctx context.Context, kube kubernetes.Interface) (map[string]map[string]string, error) {
	list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces for a contract's namespaceSelector: %w", err)
	}
	out := map[string]map[string]string{}
	for _, ns := range list.Items {
		l := ns.Labels
		if l == nil {
			l = map[string]string{}
		}
		out[ns.Name] = l
	}
	return out, nil
}
