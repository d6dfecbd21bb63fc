package scanner

import (
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
)

// applyAs rewrites every rendered object (and its second render) as the
// app's applier does before applying it: its SOPS-encrypted values sealed
// (sops.go), then rewritten as the applier sends it, the references to a
// Secret generated from SOPS-encrypted files under a hash suffix sealed too.
// It returns the Secrets generated from SOPS-encrypted files.
func applyAs(app config.App, renders ...[]render.Manifest) (map[*unstructured.Unstructured]bool, error) {
	var errs []error
	var fromFiles map[*unstructured.Unstructured]bool
	for _, mfs := range renders {
		for _, mf := range mfs {
			if app.Decryption == config.DecryptionSOPS && sealSOPS(mf.Object) {
				if fromFiles == nil {
					fromFiles = map[*unstructured.Unstructured]bool{}
				}
				fromFiles[mf.Object] = true
			}
			if err := appliedAs(app.AppliedAs, mf.Object); err != nil {
				errs = append(errs, fmt.Errorf("%s line %d: %w", mf.File, mf.Line, err))
			}
		}
		if fromFiles != nil {
			sealGeneratedNames(mfs, fromFiles)
		}
	}
	return fromFiles, errors.Join(errs...)
}

// appliedAs rewrites a rendered object the way the app's applier rewrites it
// before applying it, so that the scan compares what was really sent.
func appliedAs(how config.AppliedAs, obj *unstructured.Unstructured) error {
	if how == config.AppliedAsFlux {
		return appliedByFlux(obj)
	}
	return nil
}

// appliedByFlux rewrites obj as Flux's kustomize-controller does before its
// server-side apply (it normalises every object it built:
// https://github.com/fluxcd/kustomize-controller/blob/v1.9.6/internal/controller/kustomization_controller.go#L891,
// fluxcd/pkg/ssa/normalize). What it sends, and so owns, differs from Git:
//
//   - A kind the Kubernetes client knows goes through its Go type and back.
//     Fields the type does not have are gone; struct fields without
//     omitempty come back empty: a Deployment's spec.strategy: {}, a
//     container's resources: {}. A kind the client does not know (a custom
//     resource), or an object that does not fit its type, is left as is.
//   - A port of a Pod template's containers (not initContainers) and of a
//     Service gets protocol: TCP when it names none.
//   - A Service port without targetPort is sent with targetPort 0, which
//     the API server turns into the port: so it is compared as the port.
//   - A Secret's stringData moves into data (stringData wins on a key in
//     both).
//   - status is dropped, except from a CustomResourceDefinition.
//
// Roles and ClusterRoles are sent unchanged (Flux skips them for an upstream
// serialisation bug: fluxcd/kustomize-controller#1041).
func appliedByFlux(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	if gvk.Group == "rbac.authorization.k8s.io" && gvk.Version == "v1" && (gvk.Kind == "Role" || gvk.Kind == "ClusterRole") {
		return nil
	}
	if typed, err := scheme.Scheme.New(gvk); err == nil {
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed) == nil {
			out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				return fmt.Errorf("%s %s as Flux applies it: %w", gvk.Kind, obj.GetName(), err)
			}
			obj.Object = out
			defaultProtocols(obj)
			if gvk.Group == "" && gvk.Kind == "Secret" {
				if err := stringDataIntoData(obj); err != nil {
					return fmt.Errorf("secret %s as Flux applies it: %w", obj.GetName(), err)
				}
			}
		}
	}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	if gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
		unstructured.RemoveNestedField(obj.Object, "status")
	}
	return nil
}

// podSpecPath is where each workload kind Flux defaults ports in holds its
// Pod spec.
var podSpecPath = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// defaultProtocols gives protocol TCP to the ports of the containers of a
// workload's Pod spec, and of a Service, that name none.
func defaultProtocols(obj *unstructured.Unstructured) {
	kind := obj.GetKind()
	if kind == "Service" && obj.GroupVersionKind().Group == "" {
		if spec, ok := obj.Object["spec"].(map[string]any); ok {
			tcpPorts(spec["ports"])
			targetPorts(spec["ports"])
		}
		return
	}
	path, ok := podSpecPath[kind]
	if !ok {
		return
	}
	containers, _, _ := unstructured.NestedFieldNoCopy(obj.Object, append(path, "containers")...)
	list, _ := containers.([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			tcpPorts(m["ports"])
		}
	}
}

func tcpPorts(ports any) {
	list, _ := ports.([]any)
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			if proto, _ := m["protocol"].(string); proto == "" {
				m["protocol"] = "TCP"
			}
		}
	}
}

// targetPorts gives each Service port that the typed round trip wrote with
// targetPort 0 (Git named none: intstr.IntOrString has no empty form) the
// port itself, as the API server does with the 0 Flux sends
// (SetDefaults_Service in k8s.io/kubernetes/pkg/apis/core/v1/defaults.go):
// kustomize-controller owns targetPort, and live holds the port.
func targetPorts(ports any) {
	list, _ := ports.([]any)
	for _, p := range list {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if tp, ok := m["targetPort"].(int64); ok && tp == 0 {
			m["targetPort"] = m["port"]
		}
	}
}

// stringDataIntoData moves a Secret's stringData into its data, base64
// encoded as data is.
func stringDataIntoData(obj *unstructured.Unstructured) error {
	sd, found, err := unstructured.NestedStringMap(obj.Object, "stringData")
	if err != nil || !found || len(sd) == 0 {
		return err
	}
	data, _ := obj.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	obj.Object["data"] = data
	delete(obj.Object, "stringData")
	return nil
}
