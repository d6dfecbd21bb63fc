package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// voidElements have no end tag (HTML Living Standard, 13.1.2).
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// checkHTML validates a page the way the HTML report promises it to be:
// every element that is opened is closed, in order; there is exactly one
// script, inline; nothing names a resource outside the file (no src, no
// link, no href but to a fragment, no url() in the style); and it parses.
func checkHTML(page []byte) error {
	var errs []error
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string
	scripts := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if err := z.Err(); !errors.Is(err, io.EOF) {
				errs = append(errs, err)
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			name := tok.Data
			for _, a := range tok.Attr {
				switch {
				case a.Key == "src" || a.Key == "srcset" || a.Key == "action" || a.Key == "formaction":
					errs = append(errs, fmt.Errorf("<%s %s=%q> loads a resource", name, a.Key, a.Val))
				case a.Key == "href" && !strings.HasPrefix(a.Val, "#"):
					errs = append(errs, fmt.Errorf("<%s href=%q> points outside the page", name, a.Val))
				case strings.HasPrefix(a.Key, "on"):
					errs = append(errs, fmt.Errorf("<%s %s> is an inline event handler", name, a.Key))
				case a.Key == "xmlns" && a.Val == "http://www.w3.org/2000/svg":
				case strings.Contains(a.Val, "://") && a.Key != "content" && a.Key != "title":
					errs = append(errs, fmt.Errorf("<%s %s=%q> names a URL", name, a.Key, a.Val))
				}
			}
			switch name {
			case "script":
				scripts++
			case "link", "iframe", "object", "embed", "img", "frame", "base":
				errs = append(errs, fmt.Errorf("<%s> in the page", name))
			}
			if tt == html.StartTagToken && !voidElements[name] {
				open = append(open, name)
			}
		case html.EndTagToken:
			if len(open) == 0 || open[len(open)-1] != tok.Data {
				errs = append(errs, fmt.Errorf("</%s> closes %v", tok.Data, open))
				continue
			}
			open = open[:len(open)-1]
		case html.TextToken:
			if len(open) > 0 && open[len(open)-1] == "style" && strings.Contains(tok.Data, "url(") {
				errs = append(errs, errors.New("the style loads a url()"))
			}
		}
	}
	if len(open) > 0 {
		errs = append(errs, fmt.Errorf("elements never closed: %v", open))
	}
	if scripts != 1 {
		errs = append(errs, fmt.Errorf("%d scripts, want the page's one", scripts))
	}
	if _, err := html.Parse(bytes.NewReader(page)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func TestHTMLIsOneValidSelfContainedPage(t *testing.T) {
	if err := checkHTML(render(t, FormatHTML, DefaultWriteOptions())); err != nil {
		t.Error(err)
	}
}

func TestHTMLEscapesWhatTheClusterHolds(t *testing.T) {
	hostile := `</code></td></tr></tbody></table><script src="https://evil.example/x.js"></script><img src=x onerror=alert(1)>`
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), `prod"><script>alert(1)</script>`)
	r.Apps = []App{{Name: `web<b>`, Owner: `team"web`, Error: hostile, Objects: []Object{{
		APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: `a"><svg onload=alert(1)>`,
		Findings: []Finding{{Path: hostile, Type: TypeChanged, Class: ClassHuman, Manager: hostile, Git: hostile, Live: hostile, Hint: hostile, Time: "2026-07-01T11:00:00Z"}},
	}}}}
	r.Finalize()
	var b bytes.Buffer
	if err := Write(&b, FormatHTML, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	if err := checkHTML(b.Bytes()); err != nil {
		t.Errorf("values from the cluster broke the page: %v", err)
	}
	if !strings.Contains(b.String(), "&lt;script src=&#34;https://evil.example/x.js&#34;&gt;") {
		t.Error("the hostile value is not shown, escaped, as text")
	}
}

func TestHTMLCutsHugeValuesInTheMiddle(t *testing.T) {
	big := `{"image":"docker.io/istio/proxyv2:1.24.0",` + strings.Repeat(`"x":"y",`, 500) + `"tag":"END"}`
	got := htmlValue(big)
	if len([]rune(got)) > htmlValueMax+80 || !strings.HasPrefix(got, `{"image"`) || !strings.Contains(got, `"tag":"END"}`) || !strings.Contains(got, "-o json has it whole") {
		t.Errorf("htmlValue of %d characters = %q", len(big), got)
	}
	if small := `{"a":1}`; htmlValue(small) != small {
		t.Errorf("htmlValue cut a small value: %q", htmlValue(small))
	}
}

func TestHTMLOfTheBenchmarkEstateIsUnderOneMegabyte(t *testing.T) {
	r := benchEstateReport()
	var b bytes.Buffer
	if err := Write(&b, FormatHTML, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	t.Logf("HTML report of %d objects, %d drifted, %d findings over %d apps: %d bytes", r.Summary.Objects, r.Summary.Drifted, r.Summary.Findings, r.Summary.Apps, b.Len())
	if b.Len() >= 1<<20 {
		t.Errorf("the page is %d bytes, want under 1 MiB", b.Len())
	}
	if err := checkHTML(b.Bytes()); err != nil {
		t.Error(err)
	}
}

// benchEstateReport is the report of make bench's estate (bench/estate.go,
// bench/drift.go): 5,000 objects in 200 apps over 20 namespaces, 5% drifted
// by the bench's actors — a webhook's sidecar and annotation in the
// Deployments of two namespaces, kubectl set image, the HPA through scale,
// kubectl edit of ConfigMaps and of Routes — with the values as large as a
// real scan reports them.
func benchEstateReport() *Report {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "bench")
	kinds := []string{"Deployment", "Service", "ConfigMap", "Route", "ServiceAccount"}
	sidecar := `{"args":["proxy","sidecar","--domain","$(POD_NAMESPACE).svc.cluster.local","--proxyLogLevel=warning"],"env":[{"name":"ISTIO_META_POD_PORTS","value":"[]"},{"name":"ISTIO_META_APP_CONTAINERS","value":"app"}],"image":"docker.io/istio/proxyv2:1.24.0","name":"istio-proxy","ports":[{"containerPort":15090,"name":"http-envoy-prom","protocol":"TCP"}],"resources":{"limits":{"cpu":"2","memory":"1Gi"},"requests":{"cpu":"100m","memory":"128Mi"}}}`
	eligible, deployments := 0, 0 // the other actors' objects, and their Deployments
	for a := 0; a < 200; a++ {
		ns := fmt.Sprintf("bench-ns-%02d", a%20)
		app := App{Name: fmt.Sprintf("bench-app-%03d", a), Owner: fmt.Sprintf("team-%02d", a%12),
			Source: Source{Repo: "https://git.example.com/platform/estate.git", Revision: "main", Commit: "3f2a1c9e8b7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a", Path: fmt.Sprintf("apps/bench-app-%03d", a)}}
		for i := 0; i < 25; i++ {
			kind := kinds[i%len(kinds)]
			o := Object{APIVersion: "v1", Kind: kind, Namespace: ns, Name: fmt.Sprintf("bench-app-%03d-%s-%02d", a, strings.ToLower(kind), i), File: fmt.Sprintf("%s-%02d.yaml", strings.ToLower(kind), i), Line: 1}
			webhookNS := a%20 < 2
			drift := false
			if !webhookNS && kind != "Service" && kind != "ServiceAccount" {
				eligible++
				// 150 of the 2,700: with the webhook's 100, 5% of 5,000.
				drift = eligible%18 == 0
				if drift && kind == "Deployment" {
					deployments++
				}
			}
			switch {
			case kind == "Deployment" && webhookNS:
				o.Findings = []Finding{
					{Path: `.spec.template.metadata.annotations.sidecar.istio.io/status`, Type: TypeAdded, Class: ClassWebhook, Live: `{"initContainers":null,"containers":["istio-proxy"],"volumes":["istio-envoy","istio-data"],"revision":"default"}`, Actor: "istio-sidecar-injector", Hint: "injected at admission, so no manager owns it: ignore it with a jsonPointers rule, not managedFieldsManagers"},
					{Path: `.spec.template.spec.containers[name="istio-proxy"]`, Type: TypeAdded, Class: ClassWebhook, Live: sidecar, Actor: "istio-sidecar-injector", Hint: "injected at admission, so no manager owns it: ignore it with a jsonPointers rule, not managedFieldsManagers"},
				}
			case !drift:
			case kind == "Deployment" && deployments%2 == 0:
				o.Findings = []Finding{{Path: `.spec.template.spec.containers[name="app"].image`, Type: TypeChanged, Class: ClassPipeline, Manager: "kubectl-set", Operation: "Update", Time: "2026-07-01T09:00:00Z", Git: "registry.example.com/estate/app:1.0.0", Live: "registry.example.com/estate/app:1.0.1"}}
			case kind == "Deployment":
				o.Findings = []Finding{{Path: ".spec.replicas", Type: TypeChanged, Class: ClassOperator, Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Time: "2026-07-01T11:58:30Z", Git: "2", Live: "5",
					Hint: fmt.Sprintf("HorizontalPodAutoscaler %s/%s scales this Deployment: leave spec.replicas out of Git", ns, o.Name)}}
			case kind == "ConfigMap":
				o.Findings = []Finding{{Path: ".data.LOG_LEVEL", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Operation: "Update", Time: "2026-07-01T10:00:00Z", Git: "info", Live: "debug"}}
			case kind == "Route":
				o.Findings = []Finding{{Path: `.spec.backends[name="primary"].weight`, Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Operation: "Update", Time: "2026-07-01T10:30:00Z", Git: "90", Live: "50"}}
			}
			app.Objects = append(app.Objects, o)
		}
		r.Apps = append(r.Apps, app)
	}
	r.Finalize()
	return r
}

func TestHTMLShowsAContractViolation(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "prod")
	r.Apps = []App{{Name: "web", Objects: []Object{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a",
		Findings: []Finding{{Path: ".data.x", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Git: "1", Live: "2",
			Contract: &ContractVerdict{Name: "production", Verdict: VerdictViolation}}}}}}}
	r.Finalize()
	var b bytes.Buffer
	if err := Write(&b, FormatHTML, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr class="x vio"><td colspan="7">violates contract production</td></tr>`, `<dd id="n-violations">1</dd>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
