package config

import "testing"

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\napps:\n- name: web\n  source: {path: apps/web}\n",
		"apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\nignore:\n- kind: Deployment\n  jsonPointers: [/spec/replicas]\n  owner: a\n  reason: b\n  expires: \"2027-01-01\"\n",
		"apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\nrules:\n- manager: \"(\"\n  class: human\n",
		"{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err == nil && (cfg.APIVersion != APIVersion || len(cfg.Appliers) == 0) {
			t.Errorf("accepted an invalid config: %+v", cfg)
		}
	})
}
