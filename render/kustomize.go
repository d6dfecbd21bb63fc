package render

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/internal/sourceignore"
	"github.com/calricon/driftscan/redact"

	kyaml "go.yaml.in/yaml/v3"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	kyamlrnode "sigs.k8s.io/kustomize/kyaml/yaml"
)

// kustomizeLock serializes kustomize builds: krusty is not safe for
// concurrent use (concurrent map writes in its OpenAPI schema globals,
// https://github.com/kubernetes-sigs/kustomize/issues/3659). Flux's
// kustomize-controller serializes them the same way. It is a channel so
// that a build waiting for it gives up with its context.
var kustomizeLock = make(chan struct{}, 1)

// renderKustomize builds the kustomization in opts.Dir with krusty, the
// library behind `kustomize build`, and its default options, as
// `kustomize build` has them: a file a kustomization names (a patch, a
// generator's input) must lie under that kustomization's folder; exec and
// container plugins are off; no managed-by label is added. Unlike `kustomize
// build`, krusty sees the disk through boundedFS: only inside opts.Root (a
// base outside the repository is an error), read-only, every file within
// the size and YAML alias limits of the plain renderer, and offline: a
// remote resource or base is an error unless opts.KustomizeRemote is set.
//
// Every object is one Manifest with File "." and Line 0. A build error
// returns no manifests. With opts.Parsed, a build whose reads all read as
// they did for the last build is taken from it (buildcache.go).
func renderKustomize(ctx context.Context, opts Options) ([]Manifest, error) {
	ms, err := buildKustomize(ctx, opts)
	if k := opts.Kustomize; err != nil && k != nil && k.Flux != nil && len(k.Flux.Secret) > 0 {
		// A variable from a Secret may be quoted by an error.
		err = redact.Error(err, redact.Maskable(k.Flux.Secret)...)
	}
	return ms, err
}

func buildKustomize(ctx context.Context, opts Options) ([]Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		root = opts.Dir
	}
	bounded, err := newBoundedFS(root, opts.KustomizeRemote)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, err)
	}
	var fb *config.FluxBuild
	var argo *config.ArgoKustomize
	if opts.Kustomize != nil {
		fb, argo = opts.Kustomize.Flux, opts.Kustomize.Argo
	}
	key := buildKey(opts.Dir, bounded.root)
	if !opts.KustomizeRemote && fb == nil && argo == nil {
		if ms, ok := opts.Parsed.built(key, bounded, opts.Lazy); ok {
			return ms, nil
		}
	}
	fsys := &recordingFS{boundedFS: bounded}
	if !opts.KustomizeRemote {
		// Nothing on disk changes while krusty builds (a remote clone,
		// which appears during the build, is not read this way): each
		// path is resolved once, from its folder's resolution.
		bounded.resolved = map[string]resolvedPath{}
		defer func() { bounded.resolved = nil }()
	}
	kopts := krusty.MakeDefaultOptions()
	if opts.KustomizeLoadAnywhere {
		kopts.LoadRestrictions = types.LoadRestrictionsNone // inside the repository all the same
	}
	if fb != nil || argo != nil {
		// The reconciler's overrides, written into the kustomization
		// krusty reads in its place.
		var kfile string
		var data []byte
		var err error
		if fb != nil {
			// The files of the source's artifact, not of the checkout.
			if !fb.Unfiltered {
				if bounded.ignore, err = sourceignore.MatcherAt(bounded.root, fb.SourceIgnore); err != nil {
					return nil, fmt.Errorf("kustomize %s: the Flux artifact's ignore patterns: %w", opts.Dir, err)
				}
			}
			kfile, data, err = fluxKustomization(bounded, opts.Dir, fb)
			kopts.LoadRestrictions = types.LoadRestrictionsNone // inside the repository all the same
		} else {
			kfile, data, err = argoKustomization(bounded, opts.Dir, argo)
		}
		if err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, err)
		}
		bounded.virtual = map[string][]byte{kfile: data}
		if r, err := bounded.resolve(filepath.Dir(kfile)); err == nil {
			bounded.virtual[filepath.Join(r, filepath.Base(kfile))] = data
		}
		fsys.unrecorded() // the kustomization read is none on disk
	}
	var helm *buildHelm
	if !opts.KustomizeWithoutHelm {
		if k := opts.Kustomize; k != nil {
			// The source's own capabilities replace the cluster's for its
			// charts, as Argo CD's kustomize.kubeVersion and apiVersions do.
			if k.KubeVersion != "" {
				opts.KubeVersion = k.KubeVersion
			}
			if len(k.APIVersions) > 0 {
				opts.APIVersions = k.APIVersions
			}
		}
		if helm = newBuildHelm(ctx, opts, bounded.root); helm != nil {
			defer helm.close()
			bounded.helm = helm
			kopts.PluginConfig.HelmConfig = types.HelmConfig{Enabled: true, Command: helm.command()}
		}
	}
	select {
	case kustomizeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomize %s: waiting for another build: %w", opts.Dir, ctx.Err())
	}
	resMap, err := krusty.MakeKustomizer(kopts).Run(fsys, opts.Dir)
	<-kustomizeLock
	if refused := fsys.Refused(); err != nil && refused != nil {
		// krusty words a refused read as a missing file: say why.
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, refused)
	}
	if err != nil && helm != nil {
		if failed := helm.failure(); failed != nil {
			// kustomize words it as the command line and its environment.
			return nil, fmt.Errorf("kustomize %s: helmCharts: %w", opts.Dir, failed)
		}
	}
	if err != nil && strings.Contains(err.Error(), "must specify --enable-helm") {
		// krusty's words are for its own CLI, whose flag driftscan does not have.
		why := "its reconciler builds without --enable-helm (Flux's kustomize-controller always, Argo CD unless argocd-cm kustomize.buildOptions has it), so this app fails there too"
		if !opts.KustomizeWithoutHelm {
			why = "this process cannot run as kustomize's helm (render.RunAsHelm was not called)"
		}
		return nil, fmt.Errorf("kustomize %s: a kustomization's helmCharts are not rendered: %s: %w", opts.Dir, why, err)
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, err)
	}
	var out []Manifest
	var badVars error
	if fluxSubstitutes(fb) {
		badVars = fluxVarNames(fb)
	}
	for _, r := range resMap.Resources() {
		obj, err := fluxObject(r, fb, badVars)
		if obj == nil && err == nil {
			obj, err = kyamlObject(r.YNode())
		}
		if err != nil {
			return nil, fmt.Errorf("kustomize %s: %s: %w", opts.Dir, r.CurId(), err)
		}
		setCommonMetadata(obj, fb)
		out = append(out, Manifest{Object: &unstructured.Unstructured{Object: obj}, File: "."})
	}
	if helm != nil && helm.used {
		// The charts' files are read by the helm child, not recorded.
		return out, nil
	}
	opts.Parsed.storeBuild(key, fsys, out)
	return out, nil
}

// kyamlObject is the object a resource's node (kyaml's: go.yaml.in/yaml/v3,
// the maintained fork of gopkg.in/yaml.v3) holds: what its MarshalJSON
// gives read back with the API machinery's JSON decoder (integers int64).
// MarshalJSON writes the node as YAML, as `kustomize build` prints it, reads
// that into Go values and writes those as JSON. Where writing and reading
// the node again cannot change a value (kyamlCopy), the node tree is read
// as the plain renderer reads a document, by YAMLNodeValue, without the
// three conversions (TestAKustomizeBuildReadsAsMarshalJSON).
func kyamlObject(n *kyaml.Node) (map[string]any, error) {
	if n != nil && n.Kind == kyaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != kyaml.MappingNode {
		return nil, fmt.Errorf("not an object")
	}
	var v any
	k := kyamlCopy{exact: true}
	c := k.node(n, false)
	if k.exact {
		var err error
		if v, err = YAMLNodeValue(c); err != nil {
			return nil, err
		}
	} else {
		data, err := kyamlrnode.NewRNode(n).MarshalJSON()
		if err != nil {
			return nil, err
		}
		if err := utiljson.Unmarshal(data, &v); err != nil {
			return nil, err
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

// kyamlCopy copies a go.yaml.in/yaml/v3 node tree into gopkg.in/yaml.v3's
// types, whose kinds and styles have the same values. An alias points
// into the copy: anchored holds the copies of anchored nodes (and of any
// other an alias names), by the original.
//
// exact stays true while every scalar copied reads the same from the tree
// as from the YAML yaml.v3's encoder writes for it. Three that may not:
//   - a quoted or literal scalar with a tag other than !!str and
//     not marked TaggedStyle: the encoder drops a tag the value resolves
//     to, so "3" tagged !!int reads back as the string "3";
//   - an empty scalar with no tag or !!null, in plain style, inside a flow
//     collection or as a key: the encoder writes it quoted, as the empty
//     string, where the tree holds a null;
//   - a folded scalar: the encoder writes a more-indented line of one so
//     that it reads back with an extra line break;
//
// and a key that is not a string (MarshalJSON reads 00 as "00" at the top
// level and cannot write such a map below it).
//
// The parser makes the second ({a} is a flow mapping of a to null); a
// kustomize transformer may build any node. A tag outside the core
// schema's is not read from the tree either. The rest are read by
// MarshalJSON, as before.
type kyamlCopy struct {
	anchored map[*kyaml.Node]*yaml.Node
	exact    bool
}

// node copies n; flow says n lies in a flow collection or is a key.
func (k *kyamlCopy) node(n *kyaml.Node, flow bool) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Anchor != "" {
		if c, ok := k.anchored[n]; ok {
			return c
		}
	}
	c := &yaml.Node{
		Kind: yaml.Kind(n.Kind), Style: yaml.Style(n.Style), Tag: n.Tag, Value: n.Value,
		Anchor: n.Anchor, Line: n.Line, Column: n.Column,
	}
	if n.Kind == kyaml.ScalarNode {
		if !rereads(n, flow) {
			k.exact = false
		}
		if n.Tag == "" {
			// As the decoder reads it (kyaml's NewScalarRNode leaves
			// the tag out).
			c.Tag = n.ShortTag()
		}
	}
	if n.Anchor != "" {
		k.keep(n, c)
	}
	if n.Alias != nil {
		if c.Alias = k.anchored[n.Alias]; c.Alias == nil {
			c.Alias = k.node(n.Alias, flow)
			k.keep(n.Alias, c.Alias)
		}
	}
	if len(n.Content) > 0 {
		inFlow := flow || n.Style&kyaml.FlowStyle != 0
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			key := n.Kind == kyaml.MappingNode && i%2 == 0
			c.Content[i] = k.node(e, inFlow || key)
			if key && (c.Content[i] == nil || c.Content[i].Tag != "!!str") {
				// MarshalJSON reads the top level into a map of
				// strings (00 stays "00"), and fails on a map below
				// whose keys are not.
				k.exact = false
			}
		}
	}
	return c
}

func (k *kyamlCopy) keep(n *kyaml.Node, c *yaml.Node) {
	if k.anchored == nil {
		k.anchored = map[*kyaml.Node]*yaml.Node{}
	}
	k.anchored[n] = c
}

// coreTags are the tags a scalar of the tree may have (besides none) and
// still be read from the tree (kyamlCopy).
var coreTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!timestamp": true, "!!binary": true, "!!merge": true,
}

// rereads says whether the scalar n, in a flow collection or a key when
// flow is set, reads from the tree as from what the encoder writes for it
// (kyamlCopy).
func rereads(n *kyaml.Node, flow bool) bool {
	if n.Style&kyaml.TaggedStyle != 0 {
		return n.Tag == "" || coreTags[n.Tag]
	}
	if n.Tag != "" && !coreTags[n.Tag] {
		return false
	}
	if n.Style&kyaml.FoldedStyle != 0 {
		// The encoder does not always write a folded scalar back as it
		// was: a more-indented line (">\n 0\n  0", "0\n 0" in the tree)
		// comes back as "0\n\n 0". Folded scalars are rare in manifests;
		// MarshalJSON reads them all.
		return false
	}
	if n.Style&(kyaml.SingleQuotedStyle|kyaml.DoubleQuotedStyle|kyaml.LiteralStyle) != 0 {
		return n.Tag == "" || n.Tag == "!!str"
	}
	return !(flow && n.Value == "" && (n.Tag == "" || n.Tag == "!!null"))
}
