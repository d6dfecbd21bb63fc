package main

import (
	"fmt"

	"github.com/calricon/driftscan/config"
)

// loadConfig is the config that --config FILE or --path DIR name, or an
// empty one for apps that discovery will add. With --path, objects that name
// no namespace go to -n, else to the kubeconfig context's namespace.
func loadConfig(configPath, path, namespace, ctxNamespace string) (*config.Config, error) {
	switch {
	case configPath != "":
		return config.Load(configPath)
	case path != "":
		if namespace == "" {
			namespace = ctxNamespace
		}
		cfg, err := config.ForFolder(path, namespace)
		if err != nil {
			return nil, fmt.Errorf("--path: %w", err)
		}
		return cfg, nil
	}
	return config.New(), nil
}
