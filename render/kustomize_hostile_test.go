package render

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

// aliasBomb is a YAML document of nine levels of nine aliases each:
// 342 bytes that expand to 9^9 strings.
func aliasBomb() string {
	b := `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n"
	prev := "a"
	for c := 'b'; c <= 'i'; c++ {
		p := "*" + prev
		b += fmt.Sprintf("%c: &%c [%s,%s,%s,%s,%s,%s,%s,%s,%s]\n", c, c, p, p, p, p, p, p, p, p, p)
		prev = string(c)
	}
	return b
}

// TestAKustomizeAliasBombIsRefusedWithinBounds is issue 17's bomb: a
// resource file of nested aliases that krusty expanded to gigabytes (1.4
// GiB peak, then out of memory, before the fix). It runs in a child limited
// to 2 GiB of address space (a Go test binary reserves about 1 GiB of it
// at start) and 60 seconds.
func TestAKustomizeAliasBombIsRefusedWithinBounds(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + aliasBomb(),
	})
	_, err := Manifests(t.Context(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "cm.yaml") || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("err = %v, want the bomb refused naming cm.yaml", err)
	}
}

// TestKustomizeRendersOfflineAndInsideTheRepository: krusty fetched URLs
// (with no timeout, holding the global lock) and cloned Git bases itself,
// and read bases anywhere on disk.
func TestKustomizeRendersOfflineAndInsideTheRepository(t *testing.T) {
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: remote}\n")
	}))
	defer web.Close()
	gitDir, _ := gitrepo.Bare(t, "", map[string]string{"base/kustomization.yaml": "resources: [cm.yaml]\n", "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-git}\n"})
	git := gitrepo.Serve(t, gitDir, false)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\n"

	tests := []struct {
		name      string
		files     map[string]string
		dir       string
		remote    bool
		want      string // "" means it renders
		wantNames []string
	}{
		{
			name:  "an http resource is refused, and never fetched",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- cm.yaml\n- " + web.URL + "/cm.yaml\n", "app/cm.yaml": cm},
			dir:   "app", want: `kustomization.yaml: names the remote resource "` + web.URL + `/cm.yaml": kustomize renders offline`,
		},
		{
			name:  "a Git base is refused, and never cloned",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- " + git.RepoURL(gitDir) + "//base?ref=main\n"},
			dir:   "app", want: "names the remote resource",
		},
		{
			name:  "a github.com base without a scheme is refused",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n"},
			dir:   "app", want: "names the remote resource",
		},
		{
			name:  "a generator's file from a URL is refused",
			files: map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: c\n  files:\n  - conf=" + web.URL + "/cm.yaml\n"},
			dir:   "app", want: "names the remote resource",
		},
		{
			name:  "a base outside the repository is refused",
			files: map[string]string{"repo/app/kustomization.yaml": "resources: [../../outside]\n", "outside/kustomization.yaml": "resources: [cm.yaml]\n", "outside/cm.yaml": cm},
			dir:   "repo/app", want: "is outside the repository",
		},
		{
			name:  "a base linked from outside the repository is refused",
			files: map[string]string{"repo/app/kustomization.yaml": "resources: [../base]\n", "repo/base": "-> ../outside", "outside/kustomization.yaml": "resources: [cm.yaml]\n", "outside/cm.yaml": cm},
			dir:   "repo/app", want: "is outside the repository",
		},
		{
			name:  "a base elsewhere in the repository works",
			files: map[string]string{"repo/app/kustomization.yaml": "resources: [../base]\n", "repo/base/kustomization.yaml": "resources: [cm.yaml]\n", "repo/base/cm.yaml": cm},
			dir:   "repo/app", wantNames: []string{"local"},
		},
		{
			name:  "with remote resources allowed, the http resource is fetched",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- " + web.URL + "/cm.yaml\n"},
			dir:   "app", remote: true, wantNames: []string{"remote"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			writeTree(t, top, tt.files)
			root := filepath.Join(top, strings.Split(tt.dir, "/")[0])
			hits.Store(0)
			git.Requests()
			ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(top, tt.dir), Root: root, Kustomize: &config.KustomizeSource{}, KustomizeRemote: tt.remote})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want one containing %q", err, tt.want)
				}
				if n, g := hits.Load(), len(git.Requests()); n != 0 || g != 0 {
					t.Errorf("the network was used: %d http and %d git requests", n, g)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range ms {
				names = append(names, m.Object.GetName())
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("objects %v, want %v", names, tt.wantNames)
			}
		})
	}
}

// TestAKustomizeNestingBombIsRefused: a file krusty would read that nests
// past yaml.v3's bound, in flow collections or in block indentation, is
// refused by name, as the alias bomb is; one just within the bound is
// built. The cheap test of the bytes (cannotBomb) must leave each of these
// to the decode. Like the alias bomb, it runs in a child limited to 2 GiB
// of address space and 60 seconds.
func TestAKustomizeNestingBombIsRefused(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	deep := yamlMaxDepth + 1
	for name, tc := range map[string]struct {
		cm      string
		refused bool
	}{
		"flow sequences":      {"data:\n  x: " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", true},
		"flow mappings":       {"data:\n  x: " + strings.Repeat("{a: ", deep) + "1" + strings.Repeat("}", deep) + "\n", true},
		"block sequences":     {"data:\n  x:\n    " + strings.Repeat("- ", deep) + "a\n", true},
		"within the bound":    {"data:\n  x: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n", false},
		"a cron's stars":      {"data:\n  schedule: '*/5 * * * *'\n", false},
		"long, flat, no star": {"data:\n  x: " + strings.Repeat("a", yamlMaxDepth+10) + "\n", false},
	} {
		t.Run(name, func(t *testing.T) {
			// krusty's own parser refuses such depth too, so the build's
			// error alone would not show the check skipped.
			if tc.refused && (cannotBomb([]byte(tc.cm)) || yamlBomb([]byte(tc.cm)) == nil) {
				t.Fatalf("the check let %s through", name)
			}
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"kustomization.yaml": "resources: [cm.yaml]\n",
				"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\n" + tc.cm,
			})
			_, err := Manifests(t.Context(), Options{Dir: dir})
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "cm.yaml") || !strings.Contains(err.Error(), "exceeded max depth") {
					t.Fatalf("err = %v, want cm.yaml refused for its depth", err)
				}
				return
			}
			if err != nil && strings.Contains(err.Error(), "refused") {
				t.Fatalf("refused a file within yaml.v3's bounds: %v", err)
			}
		})
	}
}

// FuzzCannotBomb: whatever cannotBomb lets through without a decode, the
// decode would not have refused.
func FuzzCannotBomb(f *testing.F) {
	f.Add([]byte("a: [1, 2]\nb: {c: d}\n"))
	f.Add([]byte(aliasBomb()))
	f.Add([]byte(strings.Repeat("[", 50)))
	f.Add([]byte(strings.Repeat("- ", 60) + "x\n"))
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		if cannotBomb(data) {
			if err := decodeBomb(data); err != nil {
				t.Fatalf("cannotBomb passed %q, which the decode refuses: %v", data, err)
			}
		}
	})
}
