package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A LIST page of 500 Deployments is a few MiB of JSON and, decoded into
// unstructured maps, several times that; a scan runs four LISTs at once.
// The scan reads its own LISTs as a stream instead: each item of a page is
// read from the response body as it arrives, its identity decoded, and only
// the items some app declares are decoded whole. Neither the body nor the
// decoded page is ever held, only the declared objects (and the reader's
// buffer: 64 KiB, or one item when an item is larger; pagereader.go).

// itemHead is what the scan decodes of every listed object to decide
// whether to keep it.
type itemHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		// UID and ResourceVersion identify what the object holds, for the
		// verdict cache (verdicts.go).
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// itemTracking is the rest of the head that Extra needs: the labels and
// annotations that may name an app.
type itemTracking struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// listItem is one item of a page as it is read.
type listItem struct {
	head itemHead
	raw  []byte // valid only during the call it is handed to, unless owned
	// owned says raw is the item's own copy (a planned LIST's item read
	// before the scan took it), which whoever it is handed to may keep.
	owned bool
}

// decode decodes the item for its compare (decodeLive): its content
// without status, with a typed list's kind and apiVersion (which the API
// server leaves out of its items) from the list, and the JSON of its
// managedFields.
func (it *listItem) decode() (*unstructured.Unstructured, []byte, error) {
	m, managedFields, err := decodeLive(it.raw)
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" && u.GetAPIVersion() == "" {
		u.SetKind(it.head.Kind)
		u.SetAPIVersion(it.head.APIVersion)
	}
	return u, managedFields, nil
}

// tracking decodes the item's labels and annotations.
func (it *listItem) tracking() (labels, annotations map[string]string) {
	var t itemTracking
	if err := json.Unmarshal(it.raw, &t); err != nil {
		return nil, nil
	}
	return t.Metadata.Labels, t.Metadata.Annotations
}

// streamPages reads every page of a paginated LIST of gvr in namespace ns
// ("" for all) of pageSize objects, following continue tokens, and hands
// each item to fn as the body brings it. gvk is the kind the items are,
// for a list whose kind comes after its items. It goes through the
// client-go REST client, so the scan's rate limiter, its retries on 429
// and the API server's status errors apply as to any request.
func (c *api) streamPages(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, pageSize int64, fn func(*listItem) error) error {
	path := []string{"api", gvr.Version}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group, gvr.Version}
	}
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, gvr.Resource)
	cont := ""
	for {
		req := c.lists.Get().AbsPath(path...)
		if pageSize > 0 {
			req = req.Param("limit", strconv.FormatInt(pageSize, 10))
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return listError(gvr, ns, err)
		}
		cont, err = readPage(body, gvk, fn)
		_ = body.Close()
		if err != nil {
			return listError(gvr, ns, err)
		}
		if cont == "" {
			return nil
		}
	}
}

// readPage reads one LIST response, handing each item to fn as it is
// read, and returns the page's continue token. An error from fn stops it.
func readPage(r io.Reader, gvk schema.GroupVersionKind, fn func(*listItem) error) (string, error) {
	p := newPageReader(r)
	if err := p.expect('{'); err != nil {
		return "", err
	}
	// The list's own kind and apiVersion name its items' when they do not
	// (a typed list); until they are read, the kind listed stands for them.
	apiVersion, kind := gvk.GroupVersion().String(), gvk.Kind
	cont := ""
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return "", err
		}
		if c == '}' {
			p.pos++
			return cont, nil
		}
		if !first {
			if err := p.expect(','); err != nil {
				return "", err
			}
		}
		raw, err := p.value()
		if err != nil {
			return "", err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return "", fmt.Errorf("a key of the LIST response: %w", err)
		}
		if err := p.expect(':'); err != nil {
			return "", err
		}
		if key == "items" {
			if err := readItems(p, apiVersion, kind, fn); err != nil {
				return "", err
			}
			continue
		}
		if raw, err = p.value(); err != nil {
			return "", err
		}
		switch key {
		case "apiVersion":
			err = json.Unmarshal(raw, &apiVersion)
		case "kind":
			var listKind string
			if err = json.Unmarshal(raw, &listKind); err == nil {
				if k, ok := strings.CutSuffix(listKind, "List"); ok && k != "" {
					kind = k
				}
			}
		case "metadata":
			var m struct {
				Continue string `json:"continue"`
			}
			err = json.Unmarshal(raw, &m)
			cont = m.Continue
		}
		if err != nil {
			return "", fmt.Errorf("%s of the LIST response: %w", key, err)
		}
	}
}

// readItems reads a page's items array (or null), handing each item to fn.
func readItems(p *pageReader, apiVersion, kind string, fn func(*listItem) error) error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c == 'n' {
		_, err := p.value() // "items": null
		return err
	}
	if c != '[' {
		return fmt.Errorf("items: want an array, got %q", c)
	}
	p.pos++
	var keys []int // each item's, reused
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return err
		}
		if c == ']' {
			p.pos++
			return nil
		}
		if !first {
			if err := p.expect(','); err != nil {
				return err
			}
		}
		raw, err := p.valueKeys(&keys)
		if err != nil {
			return err
		}
		it := listItem{raw: raw}
		if err := readHead(raw, keys, &it.head); err != nil {
			return err
		}
		if it.head.Kind == "" && it.head.APIVersion == "" {
			it.head.Kind, it.head.APIVersion = kind, apiVersion
		}
		if err := fn(&it); err != nil {
			return err
		}
	}
}

// keyOfHead is keyOf for an item not yet decoded.
func keyOfHead(h itemHead) objectKey {
	gv, _ := schema.ParseGroupVersion(h.APIVersion)
	return objectKey{gv.Group, h.Kind, h.Metadata.Namespace, h.Metadata.Name}
}
