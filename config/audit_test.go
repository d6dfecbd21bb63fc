package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTheAuditSectionListsLogFiles(t *testing.T) {
	cfg, err := Parse([]byte(`apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
audit:
  files: [/var/log/kubernetes/audit/, eks-audit.json, "-"]
apps:
- name: web
  source: {path: apps/web}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/var/log/kubernetes/audit/", "eks-audit.json", "-"}, cfg.Audit.Files); diff != "" {
		t.Errorf("audit.files (-want +got):\n%s", diff)
	}
	if _, err := Parse([]byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\naudit:\n  file: x\n")); err == nil {
		t.Error("an unknown field of the audit section was accepted")
	}
}
