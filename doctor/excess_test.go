package doctor

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBeyondNeedKeepsOnlyWhatTheScanDoesNotWrite(t *testing.T) {
	c := &checker{opts: Options{
		State: &ObjectRef{Namespace: "ops", Name: "state"},
		Lease: &ObjectRef{Namespace: "ops", Name: "scan"},
	}}
	cases := []struct {
		name                      string
		verb, group, resource, ns string
		names                     []string
		extra, needed             []string
		excess                    bool
	}{
		{"update on the state ConfigMap alone", "update", "", "configmaps", "ops", []string{"state"}, nil, nil, false},
		{"update on every ConfigMap next to the state", "update", "", "configmaps", "ops", nil, nil, []string{"state"}, true},
		{"update on the state and one more", "update", "", "configmaps", "ops", []string{"state", "other"}, []string{"other"}, []string{"state"}, true},
		{"create of ConfigMaps next to the state", "create", "", "configmaps", "ops", nil, nil, nil, false},
		{"patch on the state ConfigMap", "patch", "", "configmaps", "ops", []string{"state"}, []string{"state"}, nil, true},
		{"update on ConfigMaps elsewhere", "update", "", "configmaps", "shop", nil, nil, nil, true},
		{"update on the Lease", "update", "coordination.k8s.io", "leases", "ops", []string{"scan"}, nil, nil, false},
		{"create of Leases", "create", "coordination.k8s.io", "leases", "ops", nil, nil, nil, false},
		{"delete of the Lease", "delete", "coordination.k8s.io", "leases", "ops", []string{"scan"}, []string{"scan"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra, needed, excess := c.beyondNeed(tc.verb, tc.group, tc.resource, tc.ns, tc.names)
			if diff := cmp.Diff([]any{tc.extra, tc.needed, tc.excess}, []any{extra, needed, excess}); diff != "" {
				t.Errorf("beyondNeed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCoveredGrantsAreReportedOnce(t *testing.T) {
	all := Grant{Verb: "*", Group: "*", Resource: "*"}
	deleteDeploys := Grant{Verb: "delete", Group: "apps", Resource: "deployments"}
	inShop := func(g Grant) Grant { g.Namespace = "shop"; return g }
	cases := []struct {
		name string
		g    Grant
		by   []Grant
		want bool
	}{
		{"everything covers a delete", deleteDeploys, []Grant{all}, true},
		{"a cluster-wide grant covers a namespace's", inShop(deleteDeploys), []Grant{deleteDeploys}, true},
		{"a namespace's grant does not cover another namespace's", deleteDeploys, []Grant{inShop(deleteDeploys)}, false},
		{"another verb does not cover", deleteDeploys, []Grant{{Verb: "patch", Group: "apps", Resource: "deployments"}}, false},
		{"a grant on named objects does not cover every object", deleteDeploys, []Grant{{Verb: "delete", Group: "apps", Resource: "deployments", Names: []string{"web"}}}, false},
		{"every object covers named objects", Grant{Verb: "update", Resource: "configmaps", Names: []string{"a"}}, []Grant{{Verb: "update", Resource: "configmaps"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := covered(tc.g, tc.by); got != tc.want {
				t.Errorf("covered(%s, %v) = %v, want %v", tc.g, tc.by, got, tc.want)
			}
		})
	}
}
