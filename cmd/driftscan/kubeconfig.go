package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfig resolves the cluster the way kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account;
// --context picks a context other than the current one.
type kubeconfig struct {
	Path    string
	Context string
}

// load returns the REST config, the name of the cluster for the report (the
// context, or the server URL) and the context's namespace.
func (k kubeconfig) load() (cfg *rest.Config, cluster, namespace string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err = cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", "", fmt.Errorf("no kubeconfig found (tried --kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a cluster")
		}
		return nil, "", "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "driftscan/" + version
	namespace, _, err = cc.Namespace()
	if err != nil {
		namespace = "default"
	}
	cluster = k.Context
	if cluster == "" {
		if raw, err := cc.RawConfig(); err == nil {
			cluster = raw.CurrentContext
		}
	}
	if cluster == "" {
		cluster = cfg.Host
	}
	return cfg, cluster, namespace, nil
}
