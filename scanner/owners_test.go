package scanner

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/fixtures/cluster"
)

// TestOwnershipParsesManagedFieldsAsUpstreamDoes reads the managedFields of
// a Deployment that an applier, `kubectl set image`, a patch adding an env
// entry (a keyed list item) and a scale through the subresource all wrote
// on the test API server, and checks that each entry's owner and field set
// are what unstructured's GetManagedFields and fieldpath's Set.FromJSON
// make of them: the scan reads them from the listed JSON itself instead,
// and who owns a changed field decides its finding.
func TestOwnershipParsesManagedFieldsAsUpstreamDoes(t *testing.T) {
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}, annotations: {team: a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports: [{containerPort: 8080}, {containerPort: 8443, protocol: UDP}]
        env: [{name: LOG_LEVEL, value: info}]
`))
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 5)
	live := env.Get(t, cluster.Deployment, ns, "web")

	raw, err := json.Marshal(live.Object)
	if err != nil {
		t.Fatal(err)
	}
	_, managedFields, err := decodeLive(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ownership(managedFields, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := upstreamOwners(t, live)
	if len(want) != 4 {
		t.Fatalf("%d managedFields entries, want 4 (applier, set, patch, scale)", len(want))
	}
	if diff := cmp.Diff(entries(want), entries(got)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for i := range want {
		if i < len(got) && !got[i].set.Equals(want[i].set) {
			t.Errorf("%s owns\n%s\nwant\n%s", got[i].entry.Manager, got[i].set, want[i].set)
		}
	}

	container := fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"))
	for _, tc := range []struct {
		path fieldpath.Path
		want string
	}{
		{append(container.Copy(), fieldpath.PathElement{FieldName: ptr("image")}), "kubectl-set"},
		{append(container.Copy(), fieldpath.MakePathOrDie("env", fieldpath.KeyByFields("name", "DEBUG"))...), "kubectl-patch"},
		{append(container.Copy(), fieldpath.MakePathOrDie("ports", &value.FieldList{{Name: "containerPort", Value: value.NewValueInterface(int64(8443))}, {Name: "protocol", Value: value.NewValueInterface("UDP")}}, "containerPort")...), "argocd-controller"},
		{fieldpath.MakePathOrDie("spec", "replicas"), "kube-controller-manager"},
		{fieldpath.MakePathOrDie("metadata", "annotations", "team"), "argocd-controller"},
	} {
		if o := ownerOf(got, tc.path); o == nil || o.Manager != tc.want {
			t.Errorf("owner of %s = %+v, want %s", tc.path, o, tc.want)
		}
	}

	// Every path a manager owns, each of its prefixes (struct nodes,
	// owned through their leaves) and each with a field nobody owns under
	// it: ownerOf's one walk answers as Set.Has, then descend, do.
	var paths []fieldpath.Path
	for _, o := range got {
		o.set.Iterate(func(p fieldpath.Path) {
			for n := 1; n <= len(p); n++ {
				paths = append(paths, p[:n].Copy())
			}
			paths = append(paths, append(p.Copy(), fieldpath.PathElement{FieldName: ptr("unowned")}))
		})
	}
	paths = append(paths, fieldpath.Path{}, fieldpath.MakePathOrDie("spec", "strategy"))
	sawBelow := false
	for _, p := range paths {
		want := ownerByTwoWalks(got, p)
		o := ownerOf(got, p)
		if (o == nil) != (want == nil) || o != nil && *o != *want {
			t.Errorf("owner of %s = %+v, want %+v", p, o, want)
		}
		for _, w := range got {
			if want != nil && !w.set.Has(p) && descend(w.set, p) != nil {
				sawBelow = true
			}
		}
	}
	if !sawBelow {
		t.Error("no path was owned through the fields under it only")
	}
}

// upstreamOwners is what unstructured's GetManagedFields and fieldpath's
// Set.FromJSON make of u's managedFields: its entries with a fieldsV1.
func upstreamOwners(t *testing.T, u *unstructured.Unstructured) []owned {
	t.Helper()
	var out []owned
	for _, e := range u.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			t.Fatal(err)
		}
		ce := classify.Entry{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource}
		if e.Time != nil {
			ce.Time = e.Time.Time
		}
		out = append(out, owned{entry: ce, set: set})
	}
	return out
}

// ownerByTwoWalks is ownerOf as first written: the owners whose set has
// path, else those owning a field under it, the newest winning.
func ownerByTwoWalks(owners []owned, path fieldpath.Path) *classify.Entry {
	var best *classify.Entry
	pick := func(e classify.Entry) {
		if best == nil || e.Time.After(best.Time) {
			best = &e
		}
	}
	for _, o := range owners {
		if o.set.Has(path) {
			pick(o.entry)
		}
	}
	if best != nil {
		return best
	}
	for _, o := range owners {
		if sub := descend(o.set, path); sub != nil && !sub.Empty() {
			pick(o.entry)
		}
	}
	return best
}

func entries(os []owned) []classify.Entry {
	var out []classify.Entry
	for _, o := range os {
		out = append(out, o.entry)
	}
	return out
}

func ptr(s string) *string { return &s }

// TestFieldSetsGiveEachObjectItsOwnOwners: objects of one shape that one
// manager wrote hold one fieldsV1, which a scan parses once and shares;
// each object still gets its own entries (manager, time) and, where its
// fieldsV1 differs, its own field set: b was scaled by another manager,
// which took replicas from the applier's set, and c's container has
// another name. A scan that kept more than its room parses the rest
// anew and answers the same.
func TestFieldSetsGiveEachObjectItsOwnOwners(t *testing.T) {
	ns := env.Namespace(t, nil)
	deployment := func(name, container string) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, labels: {app: ` + name + `}}
spec:
  replicas: 2
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers: [{name: ` + container + `, image: nginx:1.25}]
`
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, deployment("a", "app")))
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, deployment("b", "app")))
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, deployment("c", "sidecar")))
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, deployment("d", "app")))
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "b", 5)

	managedFields := map[string][]byte{}
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		raw, err := json.Marshal(env.Get(t, cluster.Deployment, ns, name).Object)
		if err != nil {
			t.Fatal(err)
		}
		if _, managedFields[name], err = decodeLive(raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		sets *fieldSets
		kept int // field sets the memo holds after the four objects
	}{
		{"room for all", newFieldSets(), 4}, // the applier's of a and d, of b, of c; b's scale
		{"no room", &fieldSets{sets: map[string]*fieldpath.Set{}, room: 10}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][]owned{}
			for _, name := range names {
				want, err := ownership(managedFields[name], nil)
				if err != nil {
					t.Fatal(err)
				}
				if got[name], err = ownership(managedFields[name], tc.sets); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(entries(want), entries(got[name])); diff != "" {
					t.Errorf("%s: entries (-want +got):\n%s", name, diff)
				}
				for i := range want {
					if i < len(got[name]) && !got[name][i].set.Equals(want[i].set) {
						t.Errorf("%s: %s owns\n%s\nwant\n%s", name, got[name][i].entry.Manager, got[name][i].set, want[i].set)
					}
				}
			}
			if len(tc.sets.sets) != tc.kept {
				t.Errorf("the memo holds %d field sets, want %d", len(tc.sets.sets), tc.kept)
			}
			shared := got["a"][0].set == got["d"][0].set
			if shared != (tc.kept > 0) {
				t.Errorf("a's and d's applier sets shared: %v, want %v", shared, tc.kept > 0)
			}
			image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "image")
			if o := ownerOf(got["c"], image); o != nil {
				t.Errorf("c, whose container is sidecar, has an owner of app's image: %+v", o)
			}
			if o := ownerOf(got["b"], fieldpath.MakePathOrDie("spec", "replicas")); o == nil || o.Manager != "kube-controller-manager" {
				t.Errorf("b's replicas owned by %+v, want kube-controller-manager", o)
			}
			if o := ownerOf(got["a"], fieldpath.MakePathOrDie("spec", "replicas")); o == nil || o.Manager != "argocd-controller" {
				t.Errorf("a's replicas owned by %+v, want argocd-controller", o)
			}
		})
	}
}

// TestOwnershipReadsEntriesAsGetManagedFieldsDoes: managedFields as the API
// server writes them and as it could (escapes in keys and values, nulls,
// fields in another order, entries without fieldsV1, unknown fields
// holding objects) give the owners unstructured's GetManagedFields and
// Set.FromJSON give; malformed entries give none, as GetManagedFields
// gives none.
func TestOwnershipReadsEntriesAsGetManagedFieldsDoes(t *testing.T) {
	const set = `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}`
	for _, tc := range []struct {
		name, raw string
		none      bool // malformed: no owners
	}{
		{"as written", `[{"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1","time":"2026-12-05T01:02:03Z","fieldsType":"FieldsV1","fieldsV1":` + set + `},` +
			`{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-12-05T02:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}},"subresource":"scale"}]`, false},
		{"escapes", `[{"manag\u0065r":"kubectl\u002dset","operation":"Upd\"ate","fieldsV1":` + set + `}]`, false},
		{"nulls and order", ` [ {"fieldsV1":{"f:data":{"f:a":{}}} , "time":null,"manager":null, "operation":"Update"} , {"manager":"x","fieldsV1":null} ] `, false},
		{"no fieldsV1", `[{"manager":"a","operation":"Update"},{"manager":"b","extra":{"fieldsV1":1,"manager":[1,{"x":"]"}]},"fieldsV1":{"f:b":{}}}]`, false},
		{"empty", `[]`, false},
		{"manager a number", `[{"manager":1,"fieldsV1":{"f:a":{}}}]`, true},
		{"entry a string", `[{"manager":"a","fieldsV1":{"f:a":{}}},"b"]`, true},
		{"time not RFC 3339", `[{"manager":"a","time":"yesterday","fieldsV1":{"f:a":{}}}]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(`{"metadata":{"managedFields":`+tc.raw+`}}`), &u.Object); err != nil {
				t.Fatal(err)
			}
			want := upstreamOwners(t, u)
			got, err := ownership([]byte(tc.raw), newFieldSets())
			if err != nil {
				t.Fatal(err)
			}
			if tc.none {
				if got != nil || want != nil {
					t.Errorf("owners %v, GetManagedFields' %v: want none of either", entries(got), entries(want))
				}
				return
			}
			if len(want) == 0 && tc.raw != `[]` {
				t.Fatal("GetManagedFields found no entry: the case tests nothing")
			}
			if diff := cmp.Diff(entries(want), entries(got)); diff != "" {
				t.Errorf("entries (-GetManagedFields +ownership):\n%s", diff)
			}
			for i := range want {
				if i < len(got) && !got[i].set.Equals(want[i].set) {
					t.Errorf("%s owns\n%s\nwant\n%s", got[i].entry.Manager, got[i].set, want[i].set)
				}
			}
		})
	}
	if _, err := ownership([]byte(`[{"manager":"a","fieldsV1":"f:a"}]`), nil); err == nil {
		t.Error("a fieldsV1 that is no object: no error")
	}
}

// FuzzOwnership: for any managedFields JSON (the page reader lets only
// valid JSON through), ownership gives what encoding/json's decoding into
// ManagedFieldsEntry gives (ownershipSlow, what GetManagedFields does): the
// same owners with the same field sets, or the same error, or none.
func FuzzOwnership(f *testing.F) {
	const set = `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}`
	for _, seed := range [][]byte{
		[]byte(`[{"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1","time":"2026-12-05T01:02:03Z","fieldsType":"FieldsV1","fieldsV1":` + set + `},{"manager":"kcm","operation":"Update","fieldsV1":{"f:spec":{"f:replicas":{}}},"subresource":"scale"}]`),
		[]byte(`[{"MANAGER":"a","Time":null,"fieldsV1":null,"fieldsv1":{"f:a":{}},"TIME":"2026-12-05T01:02:03+01:00"},{"manager":"z","fieldsv1":{"f:z":{}},"fieldsV1":null},null,{"manager":"b","fieldsV1":{"f:b":{}},"fieldsV1":{"f:c":{}}}]`),
		[]byte(`[{"manager":"a","fieldsV1":"x"},{"manager":1}]`),
		[]byte(`[{"manager":"a","time":"","fieldsV1":{}},{"apiVersion":2}]`),
		[]byte(`[{"manag\u0065r":"\u00e9","fieldsV1":{"f:a":{".":{}}}}]`),
		[]byte(`{"manager":"a"}`),
		[]byte("[{\"manager\":\"a\xffb\",\"operation\":\"\xc3\",\"fieldsV1\":{}}]"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 4096 || !json.Valid(raw) {
			return
		}
		got, err := ownership(raw, nil)
		want, wantErr := ownershipSlow(raw, nil)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, encoding/json's %v", raw, err, wantErr)
		}
		if diff := cmp.Diff(entries(want), entries(got)); diff != "" {
			t.Fatalf("%s: entries (-encoding/json +ownership):\n%s", raw, diff)
		}
		for i := range want {
			if !got[i].set.Equals(want[i].set) {
				t.Fatalf("%s: %s owns\n%s\nwant\n%s", raw, got[i].entry.Manager, got[i].set, want[i].set)
			}
		}
	})
}
