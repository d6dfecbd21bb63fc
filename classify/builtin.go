package classify

import (
	"slices"
	"strings"

	"github.com/calricon/driftscan/report"
)

// builtinAddition is a key that the API server, one of its built-in admission
// plugins or a built-in controller of kube-controller-manager adds to
// objects on every cluster. None of them is drift; each is listed with who
// adds it, so the dismissal says so.
type builtinAddition struct {
	group, kind string
	// path matches the whole path; prefix and suffix, when set instead,
	// match a path with any one list key between them, or with one of
	// keys between them when keys is set.
	path, prefix, suffix string
	keys                 []string
	detail               string // "added by" whom
	// gitEmpty: only when Git leaves the field out or empty (an
	// allocation the server makes when Git asks for none).
	gitEmpty bool
	// anyOwner: whoever managedFields name as the key's owner, as the API
	// server writes it on every write of the object.
	anyOwner bool
}

var builtinAdditions = []builtinAddition{
	// The StorageObjectInUseProtection admission plugin, on create:
	// https://kubernetes.io/docs/concepts/storage/persistent-volumes/#storage-object-in-use-protection
	{kind: "PersistentVolumeClaim", path: `.metadata.finalizers[="kubernetes.io/pvc-protection"]`, detail: "added by the StorageObjectInUseProtection admission plugin"},
	{kind: "PersistentVolume", path: `.metadata.finalizers[="kubernetes.io/pv-protection"]`, detail: "added by the StorageObjectInUseProtection admission plugin"},
	// The DaemonSet registry strategy, on create and on every template
	// change (pkg/registry/apps/daemonset/strategy.go).
	{group: "apps", kind: "DaemonSet", path: ".metadata.annotations.deprecated.daemonset.template.generation", detail: "added by the API server's DaemonSet strategy"},
	// The Deployment controller, through the status subresource.
	{group: "apps", kind: "Deployment", path: ".metadata.annotations.deployment.kubernetes.io/revision", detail: "added by kube-controller-manager's Deployment controller"},
	// The namespace registry strategy labels every namespace with its name
	// at every create and update (Canonicalize), and managedFields name
	// the manager of the request that created the namespace as its owner
	// (seen in e2e TestArgoCDManagedNamespaceMetadata), as they do of the
	// finalizers below.
	{kind: "Namespace", path: ".metadata.labels.kubernetes.io/metadata.name", detail: "added by the API server (every namespace is labelled with its own name)", anyOwner: true},
	// Set at create; an update keeps the old ones (PrepareForUpdate): only
	// the finalize subresource changes them.
	{kind: "Namespace", path: ".spec.finalizers", detail: "added by the API server (the namespace controller's finalizer)", anyOwner: true},
	// The Job registry strategy selects the Job's pods by its uid.
	{group: "batch", kind: "Job", path: ".spec.selector", detail: "added by the API server's Job strategy", gitEmpty: true},
	{group: "batch", kind: "Job", prefix: ".spec.template.metadata.labels.", detail: "added by the API server's Job strategy", keys: jobLabels},
	{group: "batch", kind: "Job", prefix: ".metadata.labels.", detail: "added by the API server's Job strategy", keys: jobLabels},
	// Service allocations, when Git asks for none.
	{kind: "Service", path: ".spec.clusterIP", detail: "added by the API server's Service IP allocator", gitEmpty: true},
	{kind: "Service", path: ".spec.clusterIPs", detail: "added by the API server's Service IP allocator", gitEmpty: true},
	{kind: "Service", path: ".spec.ipFamilies", detail: "added by the API server's Service IP allocator", gitEmpty: true},
	{kind: "Service", path: ".spec.ipFamilyPolicy", detail: "added by the API server's Service IP allocator", gitEmpty: true},
	{kind: "Service", prefix: ".spec.ports[", suffix: "].nodePort", detail: "added by the API server's node port allocator", gitEmpty: true},
	{kind: "Service", path: ".spec.healthCheckNodePort", detail: "added by the API server's node port allocator", gitEmpty: true},
}

func (b builtinAddition) matches(o Object, path string) bool {
	if b.group != o.Group || b.kind != o.Kind {
		return false
	}
	if b.path != "" {
		return path == b.path
	}
	mid, ok := strings.CutPrefix(path, b.prefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, b.suffix)
	if b.keys != nil {
		return ok && slices.Contains(b.keys, mid)
	}
	return ok && !strings.ContainsAny(mid, "[]")
}

// jobLabels are the labels the Job strategy puts on a Job and its pod
// template to select the Job's pods by its uid
// (pkg/registry/batch/job/strategy.go).
var jobLabels = []string{"batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"}

// builtinKey dismisses a key that the API server or a built-in controller
// adds, when Git does not declare it (or, for an allocation, declares it
// empty) and it is owned by nobody, by kube-controller-manager or by the
// applier (which owns what it created, for a client-side apply), or by
// anyone for a key the API server writes at every write (anyOwner).
func (c *Classifier) builtinKey(o Object, ch Change, f report.Finding) (Result, bool) {
	if ch.Type == report.TypeRemoved {
		return Result{}, false
	}
	for _, b := range builtinAdditions {
		if !b.matches(o, ch.Path) {
			continue
		}
		if m := ch.Owner; m != nil && !b.anyOwner && !c.appliers[m.Manager] && m.Manager != "kube-controller-manager" {
			// Someone else wrote the key: the ordinary rules name them.
			return Result{}, false
		}
		if ch.Type == report.TypeChanged && !(b.gitEmpty && ch.ZeroGit) {
			return Result{}, false
		}
		if b.kind == "Namespace" && strings.HasSuffix(b.path, "metadata.name") && ch.Live != o.Name {
			return Result{}, false
		}
		return dismissed(f, report.Builtin, b.detail), true
	}
	return Result{}, false
}

// podTemplates are where a workload kind holds its pod template's spec.
var podTemplates = map[string]string{
	"apps/Deployment": ".spec.template.spec", "apps/StatefulSet": ".spec.template.spec",
	"apps/DaemonSet": ".spec.template.spec", "apps/ReplicaSet": ".spec.template.spec",
	"batch/Job": ".spec.template.spec", "batch/CronJob": ".spec.jobTemplate.spec.template.spec",
}

// neverDefaulted reports whether rest, a path below a workload's pod
// template spec (podSpecOf), is a field the API server never fills in: a security context's
// fields, a container's resource limits and requests, the affinity. A
// field there that nobody owns was not a default; something set it at
// admission, a webhook most likely (Kyverno's add-default-securitycontext,
// a resources defaulter). Checked on kube-apiserver v1.37.2: a template's
// empty security contexts, affinity and limits-only resources are stored
// as sent (requests are copied from limits for Pods, not for templates,
// and LimitRanger defaults Pods only, which is why Pods are not listed).
func neverDefaulted(rest string) bool {
	if within(rest, "securityContext") || within(rest, "affinity") {
		return true
	}
	field := containerField(rest)
	return field != "" && (within(field, "securityContext") || within(field, "resources"))
}

// podSpecOf is the path of o's pod spec (a workload's pod template, or a
// Pod's own spec) and what of path lies below it; ok false elsewhere.
func podSpecOf(o Object, path string) (rest string, pod bool, ok bool) {
	spec, ok := podTemplates[o.Group+"/"+o.Kind]
	if !ok {
		if o.Group != "" || o.Kind != "Pod" {
			return "", false, false
		}
		spec, pod = ".spec", true
	}
	rest, ok = strings.CutPrefix(path, spec+".")
	return rest, pod, ok
}

// containerField is the field path below a container of a pod spec (rest
// relative to the spec), "" when rest is in no container.
func containerField(rest string) string {
	for _, list := range []string{"containers[", "initContainers[", "ephemeralContainers["} {
		if c, ok := strings.CutPrefix(rest, list); ok {
			_, field, _ := strings.Cut(c, "].")
			return field
		}
	}
	return ""
}

// neverAddedWhole are fields of a workload's pod template, and of its
// containers, that the API server never fills in as a whole: added where
// Git has none and owned by nobody, something set them at admission. Below
// them it may fill in defaults (a probe's periodSeconds), so only the
// field itself counts. Checked on kube-apiserver v1.37.2
// (scanner TestTheServerDefaultsClassifyReliesOn). Pods are left out: the
// API server's admission plugins fill some of these in for Pods
// (tolerations, serviceAccountName, priority).
var neverAddedWhole = map[string]bool{
	"nodeSelector": true, "tolerations": true, "topologySpreadConstraints": true, "imagePullSecrets": true,
	"dnsConfig": true, "hostAliases": true, "priorityClassName": true, "runtimeClassName": true,
	"serviceAccountName": true, "automountServiceAccountToken": true, "readinessGates": true,
}

// neverAddedToContainer are the same for a container.
var neverAddedToContainer = map[string]bool{
	"livenessProbe": true, "readinessProbe": true, "startupProbe": true, "lifecycle": true,
	"env": true, "envFrom": true, "command": true, "args": true, "workingDir": true, "volumeMounts": true,
}

// defaultsToOneReplica reports whether o is a workload whose spec.replicas
// the API server defaults to 1 (outside the pod template, so not in
// serverDefault; unrecordedScale asks it).
func defaultsToOneReplica(o Object) bool {
	switch o.Group + "/" + o.Kind {
	case "apps/Deployment", "apps/StatefulSet", "apps/ReplicaSet", "/ReplicationController":
		return true
	}
	return false
}

// serverDefault is the value the API server fills in at path of a pod
// spec when nothing sets it, as text, for the fields whose default is
// known (checked on kube-apiserver v1.37.2, scanner
// TestTheServerDefaultsClassifyReliesOn); ok false for any other field.
// image is the live image of the container path is in: imagePullPolicy's
// default is Always for an image with no tag or the tag latest (and no
// digest), else IfNotPresent.
// rest is the path below the pod spec (podSpecOf).
func serverDefault(o Object, rest, image string) (string, bool) {
	if field := containerField(rest); field != "" {
		switch field {
		case "terminationMessagePath":
			return "/dev/termination-log", true
		case "terminationMessagePolicy":
			return "File", true
		case "imagePullPolicy":
			if image == "" {
				return "", false
			}
			return pullPolicyDefault(image), true
		}
		return "", false
	}
	switch rest {
	case "terminationGracePeriodSeconds":
		return "30", true
	case "dnsPolicy":
		return "ClusterFirst", true
	case "schedulerName":
		return "default-scheduler", true
	case "restartPolicy":
		if o.Group == "batch" {
			return "", false // a Job's pods name theirs: there is no default
		}
		return "Always", true
	}
	return "", false
}

// pullPolicyDefault is the imagePullPolicy the API server gives a
// container of image: Always for the tag latest or no tag, unless the
// image is named by digest; IfNotPresent otherwise.
func pullPolicyDefault(image string) string {
	if strings.Contains(image, "@") {
		return "IfNotPresent"
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); !ok || tag == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}

// notADefault reports whether an Added field nobody owns under a parent Git
// declares cannot be a server default: it is in a structure the API server
// never fills in (neverDefaulted), a field it never adds whole
// (neverAddedWhole, neverAddedToContainer), or a field whose default is
// known and live holds another value (serverDefault).
func notADefault(o Object, ch Change) bool {
	rest, pod, ok := podSpecOf(o, ch.Path)
	if !ok {
		return false
	}
	// Pods are left out of what is never filled in: admission plugins add
	// to them (LimitRanger resources, the ServiceAccount plugin a token's
	// volumeMounts, DefaultTolerationSeconds tolerations).
	if !pod {
		if neverDefaulted(rest) {
			return true
		}
		if field := containerField(rest); field != "" && neverAddedToContainer[field] || field == "" && neverAddedWhole[rest] {
			return true
		}
	}
	def, ok := serverDefault(o, rest, ch.ContainerImage)
	return ok && ch.Live != def
}

// within reports whether path is the field named or one below it. (The API
// server stores an empty resources or securityContext where Git has none;
// the compare drops empty values, so what is left of them was set.)
func within(path, field string) bool {
	rest, ok := strings.CutPrefix(path, field)
	return ok && (rest == "" || rest[0] == '.')
}
