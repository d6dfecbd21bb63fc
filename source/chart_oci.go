package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// The media types of a Helm chart's archive in an OCI manifest: Helm's
// own, and what Helm 3.0 to 3.7 pushed.
const (
	chartLayerType       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	legacyChartLayerType = "application/tar+gzip"
	// maxTagPages bounds a tag listing (a page is up to the registry's
	// page size, often 100 or 1,000 tags, and at most oras-go's 4 MiB of
	// metadata).
	maxTagPages = 20
)

// ociRemote is a chart in an OCI registry, as `helm push` stores it: one
// repository per chart (oci://host/path/<chart>), one tag per version (a
// "+" in a version is "_" in its tag), a manifest whose layer is the chart's
// archive, named by its digest. It is read with oras-go, the client Helm
// itself uses.
type ociRemote struct {
	f     *chartFetch
	repo  *remote.Repository
	ref   string             // host/path/chart, as errors name it
	layer ocispec.Descriptor // the archive of the version resolve picked
	sent  bool               // a credential is sent
}

// explain adds what to do to a registry's refusal.
func (r *ociRemote) explain(err error) error { return explainRegistry(err, r.sent) }

// explainRegistry adds what to do to a registry's refusal; sent says
// whether a credential was sent.
func explainRegistry(err error, sent bool) error {
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("%w: the registry asks for a credential: give one in git.credentials for this URL (a user and tokenEnv)", err)
	case errors.As(err, &resp) && (resp.StatusCode == 401 || resp.StatusCode == 403) && sent:
		return fmt.Errorf("%w: the credential sent was refused", err)
	}
	return err
}

func newOCIRemote(f *chartFetch, base *url.URL) (*ociRemote, error) {
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, errors.New("repository URL: an oci:// URL has no query or fragment")
	}
	ref := base.Host + strings.TrimRight(base.Path, "/") + "/" + f.opts.Chart
	repo, sent, err := f.registry(ref)
	if err != nil {
		return nil, err
	}
	return &ociRemote{f: f, repo: repo, ref: ref, sent: sent}, nil
}

// registry is the repository ref (host/path) of an OCI registry, read with
// the fetch's client and the credential bound to its URL, as for an index
// repository; over plain HTTP none is (credential refuses a token there).
// sent says whether a credential is sent.
func (f *chartFetch) registry(ref string) (repo *remote.Repository, sent bool, err error) {
	repo, err = remote.NewRepository(ref)
	if err != nil {
		return nil, false, fmt.Errorf("repository URL: %w", err)
	}
	repo.PlainHTTP = f.opts.PlainHTTP
	repo.TagListMaxPages = maxTagPages
	scheme := "https://"
	if repo.PlainHTTP {
		scheme = "http://"
	}
	user, pass, _, err := f.credential(scheme + ref)
	if err != nil {
		return nil, false, err
	}
	client := &auth.Client{Client: f.client, Cache: auth.NewCache()}
	if pass != "" {
		client.Credential = auth.StaticCredential(repo.Reference.Registry, auth.Credential{Username: user, Password: pass})
	}
	repo.Client = client
	return repo, pass != "", nil
}

func (r *ociRemote) resolve(ctx context.Context, want string) (string, string, error) {
	version := want
	if _, err := semver.StrictNewVersion(want); err != nil {
		// A constraint, or the newest: list the tags.
		index := &chartIndex{Entries: map[string][]chartVersion{}}
		err := r.repo.Tags(ctx, "", func(tags []string) error {
			for _, t := range tags {
				index.Entries[r.f.opts.Chart] = append(index.Entries[r.f.opts.Chart], chartVersion{Version: strings.ReplaceAll(t, "_", "+")})
			}
			return nil
		})
		if err != nil {
			return "", "", fmt.Errorf("list the tags of %s: %w", r.ref, r.explain(err))
		}
		v, err := pickVersion(index, r.f.opts.Chart, want)
		if err != nil {
			return "", "", err
		}
		version = v.Version
	}
	tag := strings.ReplaceAll(version, "+", "_")
	desc, rc, err := r.repo.FetchReference(ctx, tag)
	if err != nil {
		return "", "", fmt.Errorf("version %s: %s:%s: %w", version, r.ref, tag, r.explain(err))
	}
	data, err := content.ReadAll(rc, desc)
	rc.Close()
	if err != nil {
		return "", "", fmt.Errorf("version %s: manifest: %w", version, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return "", "", fmt.Errorf("version %s: the manifest is not an OCI image manifest: %v", version, err)
	}
	for _, l := range m.Layers {
		if l.MediaType != chartLayerType && l.MediaType != legacyChartLayerType {
			continue
		}
		algo, hexDigest, _ := strings.Cut(string(l.Digest), ":")
		if algo != "sha256" || !digestText.MatchString(hexDigest) {
			return "", "", fmt.Errorf("version %s: the chart's layer digest %q is not a SHA-256", version, l.Digest)
		}
		r.layer = l
		return version, hexDigest, nil
	}
	return "", "", fmt.Errorf("version %s: %s:%s is not a Helm chart (no layer of type %s)", version, r.ref, tag, chartLayerType)
}

func (r *ociRemote) archive(ctx context.Context, version string) ([]byte, error) {
	if r.layer.Size > maxArchiveBytes {
		return nil, fmt.Errorf("the chart's layer is %d bytes, more than the %d driftscan reads", r.layer.Size, int64(maxArchiveBytes))
	}
	rc, err := r.repo.Fetch(ctx, r.layer)
	if err != nil {
		return nil, fmt.Errorf("fetch %s@%s: %w", r.ref, r.layer.Digest, r.explain(err))
	}
	defer rc.Close()
	// ReadAll reads no more than the layer's size and checks its digest.
	return content.ReadAll(rc, r.layer)
}
