package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfig resolves the cluster the way kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account;
// --context picks a context other than the current one, and kubectl's
// connection flags (--server, --token, --as, ...) override what the
// context says.
type kubeconfig struct {
	Path    string
	Context string
	// Overrides are kubectl's connection flags; CurrentContext is Context.
	Overrides clientcmd.ConfigOverrides
}

// bindFlags adds --kubeconfig, --context and kubectl's flags that override
// the kubeconfig's cluster, user and identity, with kubectl's names and
// meanings: --server, --certificate-authority, --insecure-skip-tls-verify,
// --tls-server-name, --proxy-url, --disable-compression, --client-certificate,
// --client-key, --token, --as, --as-group, --as-uid, --cluster, --user and
// --request-timeout. Basic auth (--username, --password) is left out, as
// kubectl hides it; -n stays the command's own.
func (k *kubeconfig) bindFlags(f *pflag.FlagSet) {
	f.StringVar(&k.Path, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	f.StringVar(&k.Context, "context", "", "kubeconfig context to use (default: the current context)")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	names.ContextOverrideFlags.Namespace.LongName = ""
	names.CurrentContext.LongName = ""
	clientcmd.BindOverrideFlags(&k.Overrides, f, names)
}

// load returns the REST config, the name of the cluster for the report (the
// context, or the server URL) and the context's namespace.
func (k kubeconfig) load() (cfg *rest.Config, cluster, namespace string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Path
	overrides := k.Overrides
	overrides.CurrentContext = k.Context
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
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
