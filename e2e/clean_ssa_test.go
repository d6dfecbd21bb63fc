package e2e

import "testing"

// The same with Argo CD's sync option ServerSideApply=true.
func TestArgoCDServerSideSyncsScanClean(t *testing.T) { argoCleanSyncs(t, true) }
