package scanner

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// walkCompareApp is Git's side of TestWalkCompareFindsWhatSMDFinds: the
// kinds a scan meets most, with what makes their compare more than a walk
// of fields: keyed lists (containers, ports keyed by port and protocol
// with its default, env, volumes, tolerations as an atomic list), sets
// (finalizers), atomic structs (a selector), maps of keys (labels,
// nodeSelector, a ConfigMap's data), quantities, IntOrStrings, and two
// custom resources: one whose list the CRD keys by two fields, one whose
// spec it leaves open (typed by deduction).
const walkCompareApp = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: walk, tier: front}
  annotations: {example.com/owner: "x"}
  finalizers: [example.com/keep]
spec:
  replicas: 2
  selector: {matchLabels: {app: walk}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1}}
  template:
    metadata: {labels: {app: walk}, annotations: {a: "1"}}
    spec:
      nodeSelector: {disk: ssd}
      tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
      volumes:
      - {name: cache, emptyDir: {sizeLimit: 1Gi}}
      - {name: conf, configMap: {name: web, items: [{key: a, path: a.txt}]}}
      initContainers:
      - {name: init, image: busybox:1.37, command: [sh, -c, "true"]}
      containers:
      - name: app
        image: nginx:1.25
        args: [serve, --port, "8080"]
        ports: [{containerPort: 8080, name: http}, {containerPort: 8125, protocol: UDP, name: statsd}]
        env: [{name: A, value: "1"}, {name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        resources: {requests: {cpu: "0.1", memory: 64Mi}, limits: {memory: 128Mi}}
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
        volumeMounts: [{name: cache, mountPath: /cache}, {name: conf, mountPath: /etc/walk, readOnly: true}]
        securityContext: {runAsNonRoot: true, capabilities: {drop: [ALL]}}
      - name: side
        image: busybox:1.37
        command: [sleep, "3600"]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: walk}
spec:
  selector: {app: walk, tier: front}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: statsd, port: 8125, protocol: UDP, targetPort: statsd}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data: {a: "1", b: "two", c: "x: y"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: walk
  selector: {matchLabels: {app: walk-db}}
  template:
    metadata: {labels: {app: walk-db}}
    spec:
      containers: [{name: db, image: postgres:17, ports: [{containerPort: 5432}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: web
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: job, image: busybox:1.37, args: [date]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: walk.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
---
apiVersion: example.com/v1
kind: Route
metadata:
  name: web
spec:
  host: walk.example.com
  backends:
  - {name: web-v1, port: 8080, weight: 90}
  - {name: web-v2, port: 8080, weight: 10}
---
` + openWidget

// TestWalkCompareFindsWhatSMDFinds holds walkCompare to structured-merge-
// diff's typed compare of what withoutSame leaves of two objects, which it
// stands in for: walking the objects whole (as diff does, passing over
// what they hold as one value) and as withoutSame leaves them, for objects
// the API server applied and returned, and for
// thousands of edits of either side (values changed, also to another
// type, keys added, also ones the schema does not declare, removed, list
// items added, removed and reordered), whenever the walk does not give up
// it finds the same modified leaves (with their types), topmost removed
// paths and added units, and structured-merge-diff fails on none of those
// pairs. The walk must not give up on the objects as the server returned
// them, or a scan would not be spared the compare; and it must take most
// edited pairs.
func TestWalkCompareFindsWhatSMDFinds(t *testing.T) {
	typer, objects := applyApp(t, walkCompareApp)
	walked, found, pairs := 0, 0, 0
	for _, o := range objects {
		gvk, git, live := o.gvk, o.git, o.live
		rt, typed := typer.rootType(gvk)
		if !typed {
			t.Fatalf("%s: no type for the walk", gvk.Kind)
		}
		for seed := range uint64(600) {
			g, l := runtime.DeepCopyJSONValue(git).(map[string]any), runtime.DeepCopyJSONValue(live).(map[string]any)
			r := rand.New(rand.NewPCG(seed, uint64(len(gvk.Kind))))
			if seed > 0 {
				// Most edits leave apiVersion and kind, which the
				// scan's two sides always share with the kind listed.
				keepKind := seed%8 != 0
				for range 1 + r.IntN(4) {
					side := l
					if r.IntN(3) == 0 {
						side = g
					}
					apiVersion, kind := side["apiVersion"], side["kind"]
					if keepKind {
						delete(side, "apiVersion")
						delete(side, "kind")
					}
					edit(r, side)
					if keepKind {
						side["apiVersion"], side["kind"] = apiVersion, kind
					}
				}
			}
			// What diff compared before the walk: smd's compare of what
			// withoutSame leaves (which TestWithoutSame holds to the
			// compare of the whole objects where that does not fail).
			rg, rl, _, _ := withoutSame(g, l, true)
			want, wantErr := smdCompare(typer, gvk, l, rg, rl)
			for _, residue := range []bool{false, true} {
				tg, tl := g, l
				if residue {
					tg, tl = rg, rl
				}
				name := fmt.Sprintf("%s seed %d (residue %v)", gvk.Kind, seed, residue)
				pairs++
				got, ok := walkCompare(rt, gvk, tg, tl)
				if !ok {
					if seed == 0 {
						t.Errorf("%s: the walk gave up on the objects as the server returned them", name)
					}
					continue
				}
				walked++
				if wantErr != nil {
					t.Fatalf("%s: the walk found %+v where structured-merge-diff fails: %v\ngit %v\nlive %v", name, got, wantErr, tg, tl)
				}
				if g, w := comparisonText(got), comparisonText(want); g != w {
					t.Fatalf("%s: the walk found\n%s\nstructured-merge-diff\n%s\ngit %v\nlive %v", name, g, w, tg, tl)
				}
				if len(want.added)+len(want.modified)+len(want.removed) > 0 {
					found++
				}
			}
		}
	}
	t.Logf("%d of %d pairs walked, %d with differences", walked, pairs, found)
	if walked < pairs/2 || found < walked/2 {
		t.Fatalf("%d of %d pairs walked, %d with differences: the test no longer tests", walked, pairs, found)
	}
}

// comparisonText is c in a text that two comparisons share when they
// found the same, in any order: each path with what it is.
func comparisonText(c comparison) string {
	var lines []string
	for _, m := range c.modified {
		lines = append(lines, "modified "+pathText(m.path)+" "+m.typeName)
	}
	for _, p := range c.removed {
		lines = append(lines, "removed "+pathText(p))
	}
	for _, u := range c.added {
		lines = append(lines, fmt.Sprintf("added %s %+v", pathText(u.path), u.kind))
	}
	slices.SortFunc(lines, cmp.Compare)
	return strings.Join(lines, "\n")
}

// fuzzSchema is a schema of every kind of type walkCompare meets: scalars
// of each type and a scalar of any (IntOrString's), a map of keys, an
// atomic map, structs (one atomic, one that holds itself), a list keyed by
// two fields one of which has a default (a Service's ports), a set, an
// atomic list of structs, and a field left open, typed by deduction as an
// open custom resource's is.
const fuzzSchema = `types:
- name: root
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: s, type: {scalar: string}}
    - {name: num, type: {scalar: numeric}}
    - {name: b, type: {scalar: boolean}}
    - {name: ios, type: {namedType: intOrString}}
    - {name: labels, type: {map: {elementType: {scalar: string}}}}
    - {name: atomicMap, type: {map: {elementType: {scalar: string}, elementRelationship: atomic}}}
    - {name: struct, type: {namedType: sub}}
    - {name: atomicStruct, type: {namedType: atomicSub}}
    - {name: keyed, type: {list: {elementType: {namedType: item}, elementRelationship: associative, keys: [port, protocol]}}}
    - {name: set, type: {list: {elementType: {scalar: string}, elementRelationship: associative}}}
    - {name: atomicList, type: {list: {elementType: {namedType: sub}, elementRelationship: atomic}}}
    - {name: open, type: {namedType: __untyped_deduced_}}
- name: sub
  map:
    fields:
    - {name: a, type: {scalar: string}}
    - {name: num, type: {scalar: numeric}}
    - {name: m, type: {map: {elementType: {namedType: sub}}}}
    - {name: l, type: {list: {elementType: {scalar: numeric}, elementRelationship: atomic}}}
- name: atomicSub
  map:
    elementRelationship: atomic
    fields:
    - {name: a, type: {scalar: string}}
    - {name: l, type: {list: {elementType: {scalar: numeric}, elementRelationship: atomic}}}
- name: item
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: port, type: {scalar: numeric}}
    - {name: protocol, type: {scalar: string}, default: TCP}
    - {name: sub, type: {namedType: sub}}
- name: intOrString
  scalar: untyped
- name: __untyped_atomic_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
- name: __untyped_deduced_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_deduced_}, elementRelationship: separable}
`

// FuzzWalkCompare: for any two objects of fuzzSchema's root type, decoded
// as the scan decodes JSON and pruned as it normalizes them, walkCompare
// either gives up or finds what structured-merge-diff's compare of what
// withoutSame leaves of them finds (Git's side validated, live's not, as
// for a built-in kind), and that compare does not fail. No input makes the
// walk panic.
func FuzzWalkCompare(f *testing.F) {
	parser, err := typed.NewParser(fuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	pt := parser.Type("root")
	rt := rootType{s: pt.Schema, tr: pt.TypeRef}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Root"}
	for _, seed := range [][2]string{
		{`{"s":"a","num":1,"labels":{"a":"1"}}`, `{"s":"a","num":1.0,"labels":{"a":"1","b":"2"},"b":true}`},
		{`{"keyed":[{"port":80,"name":"http"},{"port":53,"protocol":"UDP"}]}`, `{"keyed":[{"port":53,"protocol":"UDP"},{"port":80,"protocol":"TCP","name":"web","sub":{"a":"x"}}]}`},
		{`{"set":["a","b"],"atomicList":[{"a":"1"}]}`, `{"set":["b","c"],"atomicList":[{"a":"2"}]}`},
		{`{"struct":{"a":"x","m":{"k":{"a":"y","l":[1,2]}}}}`, `{"struct":{"a":"x","m":{"k":{"a":"z","l":[1,2]},"j":{"num":3}}}}`},
		{`{"atomicStruct":{"a":"x"},"atomicMap":{"a":"1"}}`, `{"atomicStruct":{"a":"x","l":[1]},"atomicMap":{"a":"1","b":"2"}}`},
		{`{"ios":"25%","open":{"a":{"b":[1,{"c":2}]},"d":"e"}}`, `{"ios":3,"open":{"a":{"b":[1,{"c":3}]},"x":{"y":1}}}`},
		{`{"keyed":[{"port":80},{"port":80}]}`, `{"keyed":[{"port":80,"protocol":"TCP"}]}`},
		{`{"labels":{"a":1},"s":{}}`, `{"labels":{"a":"1"},"undeclared":1}`},
		{`{"keyed":[{"name":"no port"}],"set":[{"a":1}]}`, `{"keyed":[]}`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, gitJSON, liveJSON []byte) {
		var g, l map[string]any
		if utiljson.Unmarshal(gitJSON, &g) != nil || utiljson.Unmarshal(liveJSON, &l) != nil || g == nil || l == nil {
			return
		}
		PruneEmpty(g)
		PruneEmpty(l)
		for _, obj := range []map[string]any{g, l} {
			obj["apiVersion"], obj["kind"] = "v1", "Root"
		}
		got, ok := walkCompare(rt, gvk, g, l)
		if !ok {
			return
		}
		rg, rl, _, _ := withoutSame(g, l, true)
		tvGit, err := pt.FromUnstructured(rg, typed.AllowDuplicates)
		if err != nil {
			t.Fatalf("the walk found %s where smd's typing of Git's side fails: %v\ngit %s\nlive %s", comparisonText(got), err, gitJSON, liveJSON)
		}
		//lint:ignore SA1019 the live side of a built-in kind is typed so (liveTyped).
		tvLive := typed.AsTypedUnvalidated(value.NewValueInterface(rl), pt.Schema, pt.TypeRef)
		want, err := compareTyped(tvGit, tvLive)
		if err != nil {
			t.Fatalf("the walk found %s where smd's compare fails: %v\ngit %s\nlive %s", comparisonText(got), err, gitJSON, liveJSON)
		}
		if g, w := comparisonText(got), comparisonText(want); g != w {
			t.Fatalf("the walk found\n%s\nsmd\n%s\ngit %s\nlive %s", g, w, gitJSON, liveJSON)
		}
	})
}
