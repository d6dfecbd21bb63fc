package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// An OCI artifact as `flux push artifact` pushes it, in a real registry, is
// read as source-controller reads it: by tag, by the newest tag of a semver
// range, by digest (alone or after a tag, as Flux records a revision), its
// symbolic links left out; an artifact named by digest comes from the cache
// once unpacked.
func TestFetchAFluxArtifact(t *testing.T) {
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{})
	files := map[string]string{
		"apps/":                 "",
		"apps/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: one}\n",
		"apps/link -> ../etc":   "",
		".sourceignore":         "drafts/\n",
		"drafts/ignored.yaml":   "kind: ConfigMap\n",
		"apps/nested/deep.yaml": "kind: ConfigMap\n",
	}
	v1 := reconcilers.PushArtifact(t, reg, "manifests/app", "v1.0.0", reconcilers.FluxArtifact(files, "https://example.com/app.git", "main@sha1:abc"))
	files["apps/cm.yaml"] = strings.ReplaceAll(files["apps/cm.yaml"], "one", "two")
	v11 := reconcilers.PushArtifact(t, reg, "manifests/app", "v1.1.0", reconcilers.FluxArtifact(files, "https://example.com/app.git", "main@sha1:def"))
	// Pushed apart, latest and v1.1.0 may differ in their created
	// annotation's second: each is named by its own digest.
	latest := reconcilers.PushArtifact(t, reg, "manifests/app", "latest", reconcilers.FluxArtifact(files, "https://example.com/app.git", "main@sha1:def"))
	repo := "oci://" + reg.Host + "/manifests/app"
	cache := NewCache(t.TempDir())
	for _, c := range []struct{ ref, revision, v string }{
		{"v1.0.0", "v1.0.0@" + v1, "one"},
		{"1.x", "v1.1.0@" + v11, "two"},
		{"", "latest@" + latest, "two"},
		{v1, v1, "one"},
		{"v1.1.0@" + v11, "v1.1.0@" + v11, "two"},
	} {
		a, err := FetchArtifact(t.Context(), ArtifactOptions{Repo: repo, Reference: c.ref, Flux: true, PlainHTTP: true, Cache: cache})
		if err != nil {
			t.Errorf("reference %q: %v", c.ref, err)
			continue
		}
		if a.Revision != c.revision {
			t.Errorf("reference %q: revision %s, want %s", c.ref, a.Revision, c.revision)
		}
		got := treeFiles(t, a.Dir)
		if !strings.Contains(got["apps/cm.yaml"], "v: "+c.v) || got["apps/nested/deep.yaml"] == "" || got["drafts/ignored.yaml"] == "" {
			t.Errorf("reference %q: files %v, want every file of the layer (ignore rules are the build's), cm.yaml with v: %s", c.ref, got, c.v)
		}
		if _, ok := got["apps/link"]; ok {
			t.Errorf("reference %q: the symbolic link was written; source-controller skips it", c.ref)
		}
	}
	// A digest once unpacked is not asked of the registry again: the
	// registry may be gone.
	a, err := FetchArtifact(t.Context(), ArtifactOptions{Repo: "oci://127.0.0.1:1/manifests/app", Reference: "v1.0.0@" + v1, Flux: true, PlainHTTP: true, Cache: cache})
	if err == nil {
		t.Errorf("another repository's cache served %s", a.Dir)
	}
	a, err = FetchArtifact(t.Context(), ArtifactOptions{Repo: repo, Reference: "v1.0.0@" + v1, Flux: true, PlainHTTP: true, Cache: cache})
	if err != nil || a.Revision != "v1.0.0@"+v1 {
		t.Errorf("again by digest: %+v %v", a, err)
	}
	for _, c := range []struct{ ref, want string }{
		{"v9.9.9", "v9.9.9"},
		{"2.x", "no tag meets"},
		{"sha256:" + strings.Repeat("0", 64), "not found"},
		{"not a tag!", "want a tag, a semver constraint or a digest"},
	} {
		_, err := FetchArtifact(t.Context(), ArtifactOptions{Repo: repo, Reference: c.ref, Flux: true, PlainHTTP: true, Cache: cache})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "OCI artifact "+repo) {
			t.Errorf("reference %q: want an error naming the artifact and %q, got %v", c.ref, c.want, err)
		}
	}
}

// Which layer holds the files is each reconciler's rule: Flux takes the
// first (or the first of its layerSelector's type) and wants it gzipped;
// Argo CD's repo server takes the one content layer of a type it accepts,
// plain or gzipped, and in a Helm chart the chart's folder.
func TestArtifactLayerRules(t *testing.T) {
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{})
	cm := map[string]string{"cm.yaml": "kind: ConfigMap\n"}
	other := map[string]string{"other.yaml": "kind: Secret\n"}
	push := func(repo string, a reconcilers.Artifact) string {
		reconcilers.PushArtifact(t, reg, repo, "v1", a)
		return "oci://" + reg.Host + "/" + repo
	}
	plain := push("argo/plain", reconcilers.Artifact{ConfigType: "application/vnd.oci.image.config.v1+json", Layers: []reconcilers.Layer{{MediaType: reconcilers.OCILayerTar, Files: cm}}})
	attested := push("argo/attested", reconcilers.Artifact{ConfigType: "application/vnd.oci.image.config.v1+json", Layers: []reconcilers.Layer{
		{MediaType: "application/vnd.in-toto+json", Raw: []byte("{}")}, {MediaType: reconcilers.OCILayerTarGzip, Files: cm}}})
	two := push("argo/two", reconcilers.Artifact{ConfigType: "application/vnd.oci.image.config.v1+json", Layers: []reconcilers.Layer{
		{MediaType: reconcilers.OCILayerTarGzip, Files: cm}, {MediaType: reconcilers.OCILayerTarGzip, Files: other}}})
	flux := push("flux/app", reconcilers.FluxArtifact(cm, "", ""))
	chart := push("charts/web", reconcilers.Artifact{ConfigType: helmConfigType, Layers: []reconcilers.Layer{
		{MediaType: chartLayerType, Files: map[string]string{"web/Chart.yaml": "name: web\n", "web/templates/cm.yaml": "kind: ConfigMap\n"}}}})
	firstNotGzip := push("flux/plain", reconcilers.Artifact{ConfigType: reconcilers.FluxConfigType, Layers: []reconcilers.Layer{{MediaType: reconcilers.OCILayerTar, Files: cm}}})

	cache := NewCache(t.TempDir())
	fetch := func(repo, layer string, fluxRules bool) (map[string]string, error) {
		a, err := FetchArtifact(t.Context(), ArtifactOptions{Repo: repo, Reference: "v1", Layer: layer, Flux: fluxRules, PlainHTTP: true, Cache: cache})
		if err != nil {
			return nil, err
		}
		return treeFiles(t, a.Dir), nil
	}
	for _, c := range []struct {
		name, repo, layer string
		flux              bool
		want, err         string
	}{
		{"Argo CD: a plain tarball layer", plain, "", false, "cm.yaml", ""},
		{"Argo CD: a gzipped layer beside an attestation", attested, "", false, "cm.yaml", ""},
		{"Argo CD: two content layers", two, "", false, "", "2 content layers"},
		{"Argo CD: two content layers, one named", two, reconcilers.OCILayerTarGzip, false, "cm.yaml", ""},
		{"Argo CD: Flux's media type", flux, "", false, "", "not one Argo CD's repo server accepts"},
		{"Argo CD: a Helm chart is its folder", chart, "", false, "templates/cm.yaml", ""},
		{"Flux: the first layer", two, "", true, "cm.yaml", ""},
		{"Flux: its own artifact", flux, "", true, "cm.yaml", ""},
		{"Flux: an attestation first is not a tarball", attested, "", true, "", "not a gzip tarball"},
		{"Flux: the layerSelector's type", attested, reconcilers.OCILayerTarGzip, true, "cm.yaml", ""},
		{"Flux: a layerSelector no layer has", flux, "application/x-none", true, "", "no layer of media type application/x-none"},
		{"Flux: a plain tarball", firstNotGzip, "", true, "", "not a gzip tarball"},
		{"Flux: a Helm chart extracted keeps its folder", chart, "", true, "web/templates/cm.yaml", ""},
	} {
		got, err := fetch(c.repo, c.layer, c.flux)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: want an error about %q, got %v (files %v)", c.name, c.err, err, got)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && got[c.want] == "":
			t.Errorf("%s: files %v, want %s", c.name, got, c.want)
		}
	}

	// A config's app: Resolve fetches it, its path inside the artifact.
	loc, err := Resolve(t.Context(), "", config.Source{Repo: chart, Revision: "v1", Path: "templates", PlainHTTP: true}, Options{Cache: cache})
	if err != nil || loc.Version == "" || !strings.HasPrefix(loc.Version, "v1@sha256:") || treeFiles(t, loc.Dir)["cm.yaml"] == "" {
		t.Errorf("Resolve: %+v, %v: want the chart's templates folder at v1@sha256:...", loc, err)
	}
	for path, want := range map[string]string{"nope": "source folder nope", "../x": "leaves the artifact"} {
		if _, err := Resolve(t.Context(), "", config.Source{Repo: chart, Revision: "v1", Path: path, PlainHTTP: true}, Options{Cache: cache}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve path %q: want an error about %q, got %v", path, want, err)
		}
	}
}

// A layer whose names leave the artifact is refused and writes nothing
// outside it; one past --git-max-size, or a decompression bomb, stops at
// the bound, in bounded memory.
func TestArtifactHostileLayers(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	tarball := func(gz bool, hs ...*tar.Header) []byte {
		var buf bytes.Buffer
		var w = &buf
		var zw *gzip.Writer
		tw := tar.NewWriter(w)
		if gz {
			zw = gzip.NewWriter(w)
			tw = tar.NewWriter(zw)
		}
		for _, h := range hs {
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg {
				// Zeros: a bomb's compression ratio.
				chunk := make([]byte, 1<<20)
				for left := h.Size; left > 0; left -= int64(len(chunk)) {
					if left < int64(len(chunk)) {
						chunk = chunk[:left]
					}
					if _, err := tw.Write(chunk); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		tw.Close()
		if zw != nil {
			zw.Close()
		}
		return buf.Bytes()
	}
	reg := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}
	}
	for _, c := range []struct {
		name  string
		data  []byte
		gz    bool
		limit int64
		want  string
	}{
		{"a name that climbs out", tarball(false, reg("a/../../escape", 1)), false, 0, "leaves the artifact"},
		{"an absolute name", tarball(false, reg("/escape", 1)), false, 0, "leaves the artifact"},
		{"past --git-max-size", tarball(false, reg("a", 6<<20)), false, 5 << 20, "more than 5242880 bytes"},
		{"a gzip bomb", tarball(true, reg("a", 1<<30)), true, 64 << 20, "more than 67108864 bytes"},
		{"not gzip where gzip is required", tarball(false, reg("a", 1)), true, 0, "not a gzip tarball"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "root")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			err := untarArtifact(bytes.NewReader(c.data), dest, c.gz, c.limit)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error about %q, got %v", c.want, err)
			}
			if _, err := os.Stat(filepath.Join(parent, "escape")); err == nil {
				t.Error("a file was written outside the artifact")
			}
		})
	}
}

// FuzzUntarArtifact: a registry's layer is anyone's; unpacking any bytes
// never panics and never writes outside its folder, within its bound.
func FuzzUntarArtifact(f *testing.F) {
	f.Add(reconcilers.Tarball(f, map[string]string{"a/": "", "a/b.yaml": "x: 1\n", "l -> ../../x": ""}, true), true)
	f.Add(reconcilers.Tarball(f, map[string]string{"../escape": "x"}, false), false)
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00}, true)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "root")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = untarArtifact(bytes.NewReader(data), dest, gz, 1<<20)
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("unpacking wrote %d entries beside its folder", len(entries)-1)
		}
		var total int64
		_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if d.Type()&os.ModeSymlink != 0 {
					t.Errorf("a symbolic link was written: %s", p)
				}
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		if total > 1<<20 {
			t.Errorf("%d bytes unpacked past the bound of %d", total, 1<<20)
		}
	})
}
