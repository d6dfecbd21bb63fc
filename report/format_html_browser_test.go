package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writePage writes r as an HTML report into a folder of its own and returns
// its file:// URL.
func writePage(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, FormatHTML, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "drift.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

// The page's own view of what it shows: rows that are rendered, not hidden.
const visibleFindingsJS = `Array.from(document.querySelectorAll("tr.f")).filter(r => r.checkVisibility()).map(r =>
  r.dataset.class + " " + r.cells[2].textContent + (r.classList.contains("ig") ? " (ignored)" : ""))`

func TestHTMLInABrowser(t *testing.T) {
	b := startBrowser(t, 1280, 900)
	r := loadFixture(t)
	url := writePage(t, r)
	out := t.ArtifactDir()
	b.open(t, url)

	t.Run("the script ran and nothing was refused", func(t *testing.T) {
		var shown string
		b.eval(t, `document.getElementById("shown").textContent`, &shown)
		if want := "showing 7 of 7 findings"; shown != want {
			t.Errorf("the counter says %q, want %q: the page's script did not run", shown, want)
		}
		if p := b.problems(); len(p) > 0 {
			t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
		}
	})

	t.Run("counts per class", func(t *testing.T) {
		var rows, chips map[string]int
		b.eval(t, `Object.fromEntries(["webhook","operator","pipeline","human","unknown"].map(c =>
		  [c, document.querySelectorAll('tr.f:not(.ig)[data-class="' + c + '"]').length]))`, &rows)
		b.eval(t, `Object.fromEntries(Array.from(document.querySelectorAll("#by-class button")).map(b =>
		  [b.dataset.class, Number(b.querySelector("b").textContent)]))`, &chips)
		want := map[string]int{}
		for _, c := range Classes {
			want[string(c)] = r.Summary.ByClass[c]
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("finding rows per class in the DOM (-summary +page):\n%s", diff)
		}
		if diff := cmp.Diff(want, chips); diff != "" {
			t.Errorf("the by-class counts (-summary +page):\n%s", diff)
		}
		var bars int
		b.eval(t, `document.querySelectorAll("#chart rect").length`, &bars)
		if bars != 6 { // web: webhook, pipeline, human, unknown; billing: operator, human
			t.Errorf("the chart draws %d segments, want 6", bars)
		}
	})

	t.Run("a class filter hides the right rows", func(t *testing.T) {
		b.eval(t, `(() => { const s = document.getElementById("f-class"); s.value = "human"; s.dispatchEvent(new Event("change")); })()`, nil)
		var visible []string
		b.eval(t, visibleFindingsJS, &visible)
		want := []string{
			"human .data.password",
			"human .spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt (ignored)",
			`human .spec.template.spec.containers[name="app"].image`,
		}
		if diff := cmp.Diff(want, visible); diff != "" {
			t.Errorf("visible findings with class human (-want +got):\n%s", diff)
		}
		var objects []string
		b.eval(t, `Array.from(document.querySelectorAll("tbody.obj")).filter(o => o.checkVisibility()).map(o => o.rows[0].textContent.split(" ")[0])`, &objects)
		if diff := cmp.Diff([]string{"Secret/billing/billing-db", "Deployment/web/frontend"}, objects); diff != "" {
			t.Errorf("visible objects (-want +got):\n%s", diff)
		}
		var fragment string
		b.eval(t, `location.hash`, &fragment)
		if fragment != "#class=human" {
			t.Errorf("the URL's fragment is %q, want the filter in it", fragment)
		}
		b.screenshot(t, filepath.Join(out, "human.png"))
	})

	t.Run("the search box, typed into", func(t *testing.T) {
		b.eval(t, `(() => { const s = document.getElementById("f-class"); s.value = ""; s.dispatchEvent(new Event("change"));
		  document.getElementById("f-q").focus(); })()`, nil)
		b.typeText(t, "istio")
		var visible []string
		b.eval(t, visibleFindingsJS, &visible)
		if diff := cmp.Diff([]string{`webhook .spec.template.spec.containers[name="istio-proxy"]`}, visible); diff != "" {
			t.Errorf("visible findings after typing istio (-want +got):\n%s", diff)
		}
	})

	t.Run("a link with filters in its fragment opens filtered", func(t *testing.T) {
		b.open(t, url+"#owner=team-billing&status=Drifted")
		var apps []string
		b.eval(t, `Array.from(document.querySelectorAll("section.app")).filter(a => a.checkVisibility()).map(a => a.id)`, &apps)
		if diff := cmp.Diff([]string{"app-billing"}, apps); diff != "" {
			t.Errorf("visible apps (-want +got):\n%s", diff)
		}
		var visible []string
		b.eval(t, visibleFindingsJS, &visible)
		if diff := cmp.Diff([]string{"operator .spec.replicas", "human .data.password"}, visible); diff != "" {
			t.Errorf("visible findings (-want +got):\n%s", diff)
		}
	})

	t.Run("the Secret is masked", func(t *testing.T) {
		b.open(t, url)
		var cells []string
		b.eval(t, `Array.from(document.querySelector("tr.f[data-masked]").cells).slice(3, 5).map(c => c.innerText.replace(/\s+/g, " ").trim())`, &cells)
		if diff := cmp.Diff([]string{"*** masked", "*** (differs) masked"}, cells); diff != "" {
			t.Errorf("the Secret's Git and live cells as rendered (-want +got):\n%s", diff)
		}
		var text string
		b.eval(t, `document.documentElement.outerHTML + document.body.innerText`, &text)
		for _, s := range secretPlaintext {
			if strings.Contains(text, s) {
				t.Errorf("the rendered page holds the Secret's plaintext %q", s)
			}
		}
		b.screenshot(t, filepath.Join(out, "report.png"))
	})
	t.Logf("screenshots in %s", out)
}

func TestHTMLOfTheBenchmarkEstateInABrowser(t *testing.T) {
	b := startBrowser(t, 1280, 900)
	r := benchEstateReport()
	b.open(t, writePage(t, r))
	var shown string
	b.eval(t, `document.getElementById("shown").textContent`, &shown)
	if want := "showing 350 of 350 findings"; shown != want {
		t.Errorf("the counter says %q, want %q", shown, want)
	}
	b.eval(t, `(() => { const s = document.getElementById("f-owner"); s.value = "team-03"; s.dispatchEvent(new Event("change")); })()`, nil)
	var owners []string
	b.eval(t, `[...new Set(Array.from(document.querySelectorAll("tbody.obj")).filter(o => o.checkVisibility()).map(o => o.dataset.owner))]`, &owners)
	if diff := cmp.Diff([]string{"team-03"}, owners); diff != "" {
		t.Errorf("owners of the visible objects (-want +got):\n%s", diff)
	}
	if p := b.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}
