package source

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
)

// The media types an OCI artifact's layers are read by. Argo CD's repo
// server accepts, by default (--oci-layer-media-types), a plain or gzipped
// OCI layer and a Helm chart's layer; a manifest whose config is Helm's is
// a chart, of which only the chart's layer is read.
const (
	helmConfigType = "application/vnd.cncf.helm.config.v1+json"
	// maxManifestBytes bounds an artifact's manifest (oras-go's own
	// default for a manifest it fetches).
	maxManifestBytes = 4 << 20
	// maxArtifactLayers is Argo CD's bound on an artifact's layers.
	maxArtifactLayers = 10
	// maxArtifactEntries bounds the entries of a layer's tarball: a
	// repository of manifests has thousands, not millions.
	maxArtifactEntries = 200_000
)

var argoLayerTypes = []string{"application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip", chartLayerType}

// ArtifactOptions say which OCI artifact to fetch and how to read it.
// Start from the scan's Options (Resolve fills them).
type ArtifactOptions struct {
	// Repo is the artifact's repository: oci://host/path.
	Repo string
	// Reference is a tag, a semver constraint over the tags (the newest
	// tag that meets it), or a digest: sha256:<hex>, or <tag>@sha256:<hex>
	// as Flux records a revision. "" is the tag latest.
	Reference string
	// Layer and Flux pick the layer (config.Source.Layer, FluxArtifact).
	Layer string
	Flux  bool
	// MaxBytes bounds the sum of the unpacked files; 0 is no bound.
	MaxBytes    int64
	Auth        config.GitAuth
	Credentials []config.GitCredential
	CABundle    []byte
	PlainHTTP   bool
	Cache       *Cache
	Getenv      func(string) string
}

// Artifact is an OCI artifact fetched and unpacked.
type Artifact struct {
	// Dir is the unpacked layer: the root of the artifact's files.
	Dir string
	// Revision is the manifest's digest, after its tag when one was
	// named: <tag>@sha256:<hex>, or sha256:<hex>, as Flux and Argo CD
	// record what they applied.
	Revision string
}

var (
	digestRef = regexp.MustCompile(`^(?:([\w][\w.-]{0,127})@)?(sha256:[0-9a-f]{64})$`)
	tagText   = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
)

// FetchArtifact fetches an OCI artifact's manifest and the layer that holds
// its files, as source-controller (Flux) or Argo CD's repo server read them,
// into the cache, and unpacks it:
//   - the reference is resolved to a manifest digest; an artifact named by
//     digest, once unpacked, is read from the cache without asking the
//     registry (a digest names one content forever);
//   - the layer is picked by Flux's rules (the first, or the first of the
//     media type its layerSelector names) or Argo CD's (the one content
//     layer, of a type its repo server accepts by default), its digest
//     checked as it is read;
//   - the tarball is unpacked as they unpack it: regular files and folders,
//     no symbolic link, nothing outside its root, within MaxBytes and a
//     bound on entries; gzip is required by Flux, and read by Argo CD for
//     a layer whose type says so.
//
// Errors name the repository (without credentials) and the reference.
func FetchArtifact(ctx context.Context, opts ArtifactOptions) (Artifact, error) {
	repo := strings.TrimRight(opts.Repo, "/")
	ref := opts.Reference
	if ref == "" {
		ref = "latest"
	}
	a, err := fetchArtifact(ctx, repo, ref, opts)
	if err != nil {
		return Artifact{}, fmt.Errorf("OCI artifact %s at %s: %w", redact.URL(repo), ref, err)
	}
	return a, nil
}

func fetchArtifact(ctx context.Context, repo, ref string, opts ArtifactOptions) (Artifact, error) {
	if opts.Cache == nil || opts.Cache.Dir == "" {
		return Artifact{}, errors.New("no cache folder")
	}
	base, err := repoURL(repo)
	if err != nil {
		return Artifact{}, err
	}
	switch {
	case base.Scheme != "oci":
		return Artifact{}, fmt.Errorf("repository URL: want oci://, got %q", base.Scheme+"://")
	case base.RawQuery != "" || base.Fragment != "":
		return Artifact{}, errors.New("repository URL: an oci:// URL has no query or fragment")
	case strings.Trim(base.Path, "/") == "":
		return Artifact{}, errors.New("repository URL: want oci://host/path, the artifact's repository")
	}
	f, err := newChartFetch(ChartOptions{Repo: repo, Auth: opts.Auth, Credentials: opts.Credentials, CABundle: opts.CABundle,
		PlainHTTP: opts.PlainHTTP, Cache: opts.Cache, Getenv: opts.Getenv})
	if err != nil {
		return Artifact{}, err
	}
	r, sent, err := f.registry(base.Host + strings.TrimRight(base.Path, "/"))
	if err != nil {
		return Artifact{}, err
	}

	// One cache folder per repository and way of reading its layers: the
	// same manifest unpacks to other files by Flux's rules than Argo CD's.
	rule := "argocd"
	if opts.Flux {
		rule = "flux"
	}
	sum := sha256.Sum256([]byte(repo + "\n" + rule + "\n" + opts.Layer))
	dir := filepath.Join(opts.Cache.Dir, "artifacts", hex.EncodeToString(sum[:16]))
	unlock, err := opts.Cache.lock(ctx, dir)
	if err != nil {
		return Artifact{}, err
	}
	defer unlock()

	tag, digest := ref, ""
	if m := digestRef.FindStringSubmatch(ref); m != nil {
		tag, digest = m[1], m[2]
		if a, ok := unpackedArtifact(dir, digest); ok {
			a.Revision = revisionOf(tag, digest)
			return a, opts.Cache.used(dir, treeOf(digest))
		}
	}
	var desc ocispec.Descriptor
	switch {
	case digest != "":
		desc, err = r.Resolve(ctx, digest)
	case tagText.MatchString(ref):
		desc, err = r.Resolve(ctx, ref)
		if errors.Is(err, errdef.ErrNotFound) {
			if c, cerr := semver.NewConstraint(ref); cerr == nil && strings.ContainsAny(ref, "<>=~^*xX ,|") {
				tag, desc, err = newestTag(ctx, r, c, sent)
			}
		}
	default:
		c, cerr := semver.NewConstraint(ref)
		if cerr != nil {
			return Artifact{}, fmt.Errorf("reference: want a tag, a semver constraint or a digest (sha256:<hex>): %v", cerr)
		}
		tag, desc, err = newestTag(ctx, r, c, sent)
	}
	if err != nil {
		return Artifact{}, explainRegistry(err, sent)
	}
	digest = string(desc.Digest)
	if !digestRef.MatchString(digest) {
		return Artifact{}, fmt.Errorf("the manifest's digest %q is not a SHA-256", digest)
	}
	if a, ok := unpackedArtifact(dir, digest); ok {
		a.Revision = revisionOf(tag, digest)
		return a, opts.Cache.used(dir, treeOf(digest))
	}
	layer, helm, err := pickLayer(ctx, r, desc, opts)
	if err != nil {
		return Artifact{}, err
	}
	a, err := unpackLayer(ctx, r, dir, digest, layer, helm, opts)
	if err != nil {
		return Artifact{}, explainRegistry(err, sent)
	}
	a.Revision = revisionOf(tag, digest)
	return a, opts.Cache.used(dir, treeOf(digest))
}

// newestTag lists the repository's tags and resolves the newest that meets
// c, as Flux's ref.semver and Argo CD's targetRevision constraints pick.
func newestTag(ctx context.Context, r *remote.Repository, c *semver.Constraints, sent bool) (string, ocispec.Descriptor, error) {
	var best *semver.Version
	var tag string
	err := r.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			v, err := semver.NewVersion(t)
			if err != nil || !c.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(best) {
				best, tag = v, t
			}
		}
		return nil
	})
	if err != nil {
		return "", ocispec.Descriptor{}, fmt.Errorf("list the tags: %w", explainRegistry(err, sent))
	}
	if best == nil {
		return "", ocispec.Descriptor{}, fmt.Errorf("no tag meets %s", c)
	}
	desc, err := r.Resolve(ctx, tag)
	return tag, desc, err
}

// pickLayer reads the manifest desc names and picks the layer that holds
// the artifact's files; helm says it is a Helm chart's (Argo CD unpacks
// the chart's folder as the root).
func pickLayer(ctx context.Context, r *remote.Repository, desc ocispec.Descriptor, opts ArtifactOptions) (ocispec.Descriptor, bool, error) {
	if desc.MediaType == ocispec.MediaTypeImageIndex || desc.MediaType == "application/vnd.docker.distribution.manifest.list.v2+json" {
		return ocispec.Descriptor{}, false, fmt.Errorf("%s is an image index: driftscan reads an artifact of one manifest", desc.Digest)
	}
	if desc.Size > maxManifestBytes {
		return ocispec.Descriptor{}, false, fmt.Errorf("the manifest is %d bytes, more than the %d driftscan reads", desc.Size, maxManifestBytes)
	}
	rc, err := r.Fetch(ctx, desc)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	data, err := content.ReadAll(rc, desc)
	rc.Close()
	if err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("manifest: %w", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("the manifest is not an OCI image manifest: %v", err)
	}
	if len(m.Layers) == 0 {
		return ocispec.Descriptor{}, false, errors.New("the artifact has no layer")
	}
	helm := m.Config.MediaType == helmConfigType
	var picked []ocispec.Descriptor
	for _, l := range m.Layers {
		switch {
		case opts.Layer != "":
			if l.MediaType == opts.Layer {
				picked = append(picked, l)
			}
		case opts.Flux:
			picked = append(picked, l)
		case helm:
			if l.MediaType == chartLayerType {
				picked = append(picked, l)
			}
		case contentLayer(l.MediaType):
			picked = append(picked, l)
		}
	}
	switch {
	case opts.Layer != "" && len(picked) == 0:
		return ocispec.Descriptor{}, false, fmt.Errorf("the artifact has no layer of media type %s", opts.Layer)
	case opts.Layer != "" || opts.Flux:
		// source-controller takes the first that matches.
		return picked[0], helm && picked[0].MediaType == chartLayerType && !opts.Flux, nil
	case len(m.Layers) > maxArtifactLayers:
		return ocispec.Descriptor{}, false, fmt.Errorf("the artifact has %d layers: Argo CD reads no more than %d", len(m.Layers), maxArtifactLayers)
	case len(picked) != 1:
		return ocispec.Descriptor{}, false, fmt.Errorf("the artifact has %d content layers (tar or tar+gzip): Argo CD reads one, and driftscan too; name one with source.layer", len(picked))
	}
	l := picked[0]
	for _, t := range argoLayerTypes {
		if l.MediaType == t {
			return l, helm, nil
		}
	}
	return ocispec.Descriptor{}, false, fmt.Errorf("layer media type %s is not one Argo CD's repo server accepts by default (%s)", l.MediaType, strings.Join(argoLayerTypes, ", "))
}

// contentLayer is Argo CD's test of a content layer: a tarball, gzipped or
// not, by its media type.
func contentLayer(mediaType string) bool {
	return strings.HasSuffix(mediaType, "tar+gzip") || strings.HasSuffix(mediaType, "tar.gzip") || strings.HasSuffix(mediaType, "tar")
}

// ArtifactDigest is the manifest digest (sha256:<hex>) an OCI artifact's
// revision names, <tag>@sha256:<hex> or sha256:<hex> as Flux and Argo CD
// record it; "" when rev is no such revision.
func ArtifactDigest(rev string) string {
	if m := digestRef.FindStringSubmatch(rev); m != nil {
		return m[2]
	}
	return ""
}

// SameRevision reports whether two revisions a fetch resolved (Location's)
// are the same content: equal, or the same OCI artifact digest, whichever
// tag named it.
func SameRevision(a, b string) bool {
	if a == b {
		return true
	}
	da := ArtifactDigest(a)
	return da != "" && da == ArtifactDigest(b)
}

// BuildRevision is the revision Argo CD's build environment names
// ($ARGOCD_APP_REVISION): the commit of a Git source, the manifest digest
// of an OCI artifact, "" otherwise.
func (l Location) BuildRevision() string {
	if d := ArtifactDigest(l.Version); l.Commit == "" && d != "" {
		return d
	}
	return l.Commit
}

// treeOf is the cache tree of a manifest digest: 40 hex digits, as a Git
// tree's, so Cache.used prunes it.
func treeOf(digest string) string { return strings.TrimPrefix(digest, "sha256:")[:40] }

func revisionOf(tag, digest string) string {
	if tag == "" {
		return digest
	}
	return tag + "@" + digest
}

// unpackedArtifact is the artifact of digest in the cache folder dir, when
// a complete one is there (the tree is renamed into place whole).
func unpackedArtifact(dir, digest string) (Artifact, bool) {
	tree := filepath.Join(dir, treeOf(digest))
	root := filepath.Join(tree, "root")
	if data, err := os.ReadFile(filepath.Join(tree, "root.txt")); err == nil && config.InRepo(string(data)) {
		root = filepath.Join(root, filepath.FromSlash(string(data)))
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return Artifact{}, false
	}
	return Artifact{Dir: root}, true
}

// unpackLayer fetches layer, checks its digest, and unpacks it into
// <dir>/<tree>/root through a temporary folder renamed into place whole. A
// Helm chart's one folder is the root Argo CD renders (root.txt names it).
func unpackLayer(ctx context.Context, r *remote.Repository, dir, digest string, layer ocispec.Descriptor, helm bool, opts ArtifactOptions) (Artifact, error) {
	if layer.Size > maxArchiveBytes {
		return Artifact{}, fmt.Errorf("the layer is %d bytes, more than the %d driftscan reads", layer.Size, int64(maxArchiveBytes))
	}
	rc, err := r.Fetch(ctx, layer)
	if err != nil {
		return Artifact{}, fmt.Errorf("fetch the layer %s: %w", layer.Digest, err)
	}
	defer rc.Close()
	tmp, err := os.MkdirTemp(dir, ".tree-")
	if err != nil {
		return Artifact{}, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return Artifact{}, err
	}
	vr := content.NewVerifyReader(io.LimitReader(rc, layer.Size), layer)
	gz := opts.Flux || strings.HasSuffix(layer.MediaType, "gzip")
	if err := untarArtifact(vr, root, gz, opts.MaxBytes); err != nil {
		return Artifact{}, fmt.Errorf("the layer %s: %w", layer.Digest, err)
	}
	// The rest of the stream (a tarball's padding) counts for the digest.
	if _, err := io.Copy(io.Discard, vr); err != nil {
		return Artifact{}, fmt.Errorf("the layer %s: %w", layer.Digest, err)
	}
	if err := vr.Verify(); err != nil {
		return Artifact{}, fmt.Errorf("the layer %s: %w: refused", layer.Digest, err)
	}
	if helm {
		entries, err := os.ReadDir(root)
		if err != nil {
			return Artifact{}, err
		}
		if len(entries) != 1 || !entries[0].IsDir() {
			return Artifact{}, fmt.Errorf("the chart's layer holds %d entries at its top, not one folder", len(entries))
		}
		if err := os.WriteFile(filepath.Join(tmp, "root.txt"), []byte(entries[0].Name()), 0o644); err != nil {
			return Artifact{}, err
		}
	}
	tree := filepath.Join(dir, treeOf(digest))
	if err := os.RemoveAll(tree); err != nil {
		return Artifact{}, err
	}
	if err := os.Rename(tmp, tree); err != nil {
		return Artifact{}, err
	}
	a, ok := unpackedArtifact(dir, digest)
	if !ok {
		return Artifact{}, errors.New("the unpacked artifact is not where it was put")
	}
	return a, nil
}

// untarArtifact unpacks a tarball into dest (an empty folder) as
// source-controller and Argo CD's repo server do: folders and regular
// files, each name inside dest; symbolic links and other entries left out
// (Flux skips them; Argo CD keeps a link inside the tree, driftscan does
// not write one). The files' sum is bounded by maxBytes (0: no bound), the
// entries by maxArtifactEntries.
func untarArtifact(r io.Reader, dest string, gz bool, maxBytes int64) error {
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("not a gzip tarball: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tarball: %w", err)
		}
		if n >= maxArtifactEntries {
			return fmt.Errorf("more than %d entries in the tarball", maxArtifactEntries)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." && h.Typeflag == tar.TypeDir {
			continue
		}
		if name == "." || !config.InRepo(name) || strings.Contains(name, `\`) {
			return fmt.Errorf("tarball entry %q leaves the artifact", h.Name)
		}
		p := filepath.FromSlash(name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if maxBytes > 0 && total > maxBytes {
				return fmt.Errorf("the files are more than %d bytes (--git-max-size)", maxBytes)
			}
			if dir := filepath.Dir(p); dir != "." {
				if err := root.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			written, err := io.Copy(w, io.LimitReader(tr, h.Size))
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("tarball entry %s: %w", name, err)
			}
			if written != h.Size {
				return fmt.Errorf("tarball entry %s: %d bytes, its header says %d", name, written, h.Size)
			}
		}
	}
}
