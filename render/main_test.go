package render

import (
	"os"
	"testing"
)

// TestMain lets the test binary answer as the helm a kustomize build runs
// for a kustomization's helmCharts, as the driftscan binary does.
func TestMain(m *testing.M) {
	RunAsHelm()
	os.Exit(m.Run())
}
