package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

func TestFieldManagerIsDerivedAsTheAPIServerDoes(t *testing.T) {
	cases := []struct {
		name, uri, agent, want string
	}{
		{"the fieldManager parameter wins", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit", "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", "kubectl-edit"},
		{"an escaped parameter", "/api/v1/namespaces/shop/configmaps/c?fieldManager=my%20tool", "x/1", "my tool"},
		{"else the program of the user agent", "/apis/apps/v1/namespaces/shop/deployments/web", "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", "kubectl"},
		{"a controller's user agent", "/apis/apps/v1/namespaces/shop/deployments/web/scale", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/a1b2c3d/system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager"},
		{"a browser", "/api/v1/namespaces/shop/services/s", "Mozilla/5.0 (X11; Linux x86_64)", "Mozilla"},
		{"no slash keeps it whole", "/api/v1/x", "curl", "curl"},
		{"unprintable characters are dropped", "/api/v1/x", "my\tbot\x00/1.0", "mybot"},
		{"cut at 128 bytes, whole runes only", "/api/v1/x", strings.Repeat("é", 70), strings.Repeat("é", 64)},
		{"no user agent", "/api/v1/x", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FieldManager(c.uri, c.agent); got != c.want {
				t.Errorf("FieldManager(%q, %q) = %q, want %q", c.uri, c.agent, got, c.want)
			}
		})
	}
}

var (
	imageAt = Path{FieldStep("spec"), FieldStep("template"), FieldStep("spec"), FieldStep("containers"), KeyStep(map[string]any{"name": "app"}), FieldStep("image")}
	envAt   = Path{FieldStep("spec"), FieldStep("template"), FieldStep("spec"), FieldStep("containers"), KeyStep(map[string]any{"name": "app"}), FieldStep("env")}
	teamAt  = Path{FieldStep("metadata"), FieldStep("labels"), FieldStep("team")}
	proxyAt = Path{FieldStep("spec"), FieldStep("template"), FieldStep("spec"), FieldStep("containers"), KeyStep(map[string]any{"name": "istio-proxy"})}
	portAt  = Path{FieldStep("spec"), FieldStep("ports"), KeyStep(map[string]any{"port": int64(80), "protocol": "TCP"}), FieldStep("targetPort")}
	finAt   = Path{FieldStep("metadata"), FieldStep("finalizers"), ValueStep("example.com/keep")}
)

func TestWhatABodyDoesToAPath(t *testing.T) {
	cases := []struct {
		name, verb, body string
		path             Path
		want             effect
	}{
		{"a strategic merge patch sets the image", "patch", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}`, imageAt, sets},
		{"it leaves a label alone", "patch", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}`, teamAt, untouched},
		{"a null removes the label", "patch", `{"metadata":{"labels":{"team":null}}}`, teamAt, removes},
		{"a null removes every label", "patch", `{"metadata":{"labels":null}}`, teamAt, removes},
		{"$patch: delete removes a container", "patch", `{"spec":{"template":{"spec":{"containers":[{"name":"app","$patch":"delete"}]}}}}`, imageAt, removes},
		{"$retainKeys without the field removes it", "patch", `{"metadata":{"labels":{"$retainKeys":["app"],"app":"web"}}}`, teamAt, removes},
		{"a list without the item, in a strategic merge patch, keeps it", "patch", `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"},{"name":"other"}],"containers":[{"name":"other","image":"y"}]}}}}`, imageAt, untouched},
		{"a list without the item, in an unknown patch, may drop it", "patch", `{"spec":{"template":{"spec":{"containers":[{"name":"other","image":"y"}]}}}}`, imageAt, unclear},
		{"an update without the label removes it", "update", `{"metadata":{"name":"web"},"spec":{}}`, teamAt, removes},
		{"an update with the image sets it", "update", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}`, imageAt, sets},
		{"an update without the env removes it", "update", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}`, envAt, removes},
		{"a key of two fields, one of them a number", "patch", `{"spec":{"ports":[{"port":80,"protocol":"TCP","targetPort":8080}]}}`, portAt, sets},
		{"a set item deleted by directive", "patch", `{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/keep"]}}`, finAt, removes},
		{"a JSON patch removes the label", "patch", `[{"op":"remove","path":"/metadata/labels/team"}]`, teamAt, removes},
		{"a JSON patch replaces the labels", "patch", `[{"op":"replace","path":"/metadata/labels","value":{"app":"web"}}]`, teamAt, removes},
		{"a JSON patch adds a container at the end", "patch", `[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"istio-proxy"}}]`, proxyAt, sets},
		{"a JSON patch adds another container", "patch", `[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"other"}}]`, proxyAt, untouched},
		{"a JSON patch changes a container by position", "patch", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"x"}]`, imageAt, unclear},
		{"a JSON patch adds an annotation map, then the key", "patch", `[{"op":"add","path":"/metadata/labels","value":{}},{"op":"add","path":"/metadata/labels/team","value":"x"}]`, teamAt, sets},
		{"no body", "patch", "", teamAt, unclear},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			if got := bodyEffect(c.verb, body, c.path); got != c.want {
				t.Errorf("effect = %d, want %d", got, c.want)
			}
		})
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestAttributeOnTheFixtureLog(t *testing.T) {
	native := read(t, "testdata/native.log")
	gke := read(t, "testdata/gke-entries.jsonl")
	isApplier := func(m string) bool { return m == "argocd-controller" }
	cases := []struct {
		name   string
		ix     *Index
		q      Query
		conf   report.Confidence
		user   string
		reason string
	}{
		{"the edit in the entry's second", native, Query{Object: web, Path: imageAt, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kubectl-edit", Time: at("2026-11-30T11:58:02Z")}}, report.ConfidenceExact, "alice@example.com", ""},
		{"no request in the entry's second", native, Query{Object: web, Path: imageAt, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kubectl-edit", Time: at("2026-11-30T11:58:05Z")}}, report.ConfidenceNone, "", "no request by field manager kubectl-edit on this object at 2026-11-30T11:58:05Z in the audit log read (it covers 2026-11-30T09:00:00Z to 2026-11-30T12:00:00Z)"},
		{"a scale whose request spans two seconds, second one", native, Query{Object: web, Path: Path{FieldStep("spec"), FieldStep("replicas")}, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kube-controller-manager", Subresource: "scale", Time: at("2026-11-30T11:30:01Z")}}, report.ConfidenceExact, "system:serviceaccount:kube-system:horizontal-pod-autoscaler", ""},
		{"a scale entry without a time", native, Query{Object: web, Path: Path{FieldStep("spec"), FieldStep("replicas")}, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kube-controller-manager", Subresource: "scale"}}, report.ConfidenceExact, "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "the API server recorded no time for this managedFields entry; this is the newest request by field manager kube-controller-manager through the scale subresource whose body wrote this field"},
		{"the manager must match", native, Query{Object: web, Path: imageAt, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kubectl-patch", Time: at("2026-11-30T11:58:02Z")}}, report.ConfidenceNone, "", ""},
		{"an injected sidecar names the requester", native, Query{Object: web, Path: proxyAt, Type: report.TypeAdded, Injected: true,
			Webhooks: []string{"istio-sidecar-injector"}}, report.ConfidenceExact, "system:serviceaccount:argocd:argocd-application-controller",
			"MutatingWebhookConfiguration istio-sidecar-injector (webhook sidecar-injector.istio.io) injected this field at admission of this request: system:serviceaccount:argocd:argocd-application-controller only sent the request"},
		{"a removed label nobody's body removed", native, Query{Object: web, Path: teamAt, Type: report.TypeRemoved, AppliedAt: at("2026-11-30T09:00:00Z"), IsApplier: isApplier},
			report.ConfidenceNone, "", "no request since the applier's last write (2026-11-30T09:00:00Z) removed this field, by its body, in the audit log read (it covers 2026-11-30T09:00:00Z to 2026-11-30T12:00:00Z)"},
		{"GKE: the manager only by the user agent", gke, Query{Object: web, Path: imageAt, Type: report.TypeChanged,
			Owner: &Entry{Manager: "kubectl-edit", Time: at("2026-11-30T11:58:02Z")}}, report.ConfidenceCandidate, "alice@example.com",
			"the audit entries carry no request URI, so field manager kubectl-edit could only be matched by the user agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.ix.Attribute(c.q)
			if a.Confidence != c.conf || a.User != c.user || (c.reason != "" && a.Reason != c.reason) {
				t.Errorf("got %s %q (%s), want %s %q (%s)", a.Confidence, a.User, a.Reason, c.conf, c.user, c.reason)
			}
		})
	}
}
