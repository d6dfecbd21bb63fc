package charts

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// cacheClaim returns the PersistentVolumeClaim the chart rendered for the
// cache, or nil.
func cacheClaim(t *testing.T, r *Release) *corev1.PersistentVolumeClaim {
	t.Helper()
	claims := r.OfKind("PersistentVolumeClaim")
	switch len(claims) {
	case 0:
		return nil
	case 1:
	default:
		t.Fatalf("the chart rendered %d PersistentVolumeClaims, want at most one", len(claims))
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(claims[0].Object, pvc, true); err != nil {
		t.Fatalf("PersistentVolumeClaim %s: %v", claims[0].GetName(), err)
	}
	return pvc
}

// cacheVolume returns the pod's volume mounted at /var/cache/driftscan.
func cacheVolume(t *testing.T, r *Release) corev1.Volume {
	t.Helper()
	name := ""
	for _, m := range container(t, r).VolumeMounts {
		if m.MountPath == "/var/cache/driftscan" {
			name = m.Name
		}
	}
	for _, v := range cronJob(t, r).Spec.JobTemplate.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume is mounted at /var/cache/driftscan")
	return corev1.Volume{}
}

// claimSpec is the PersistentVolumeClaimSpec the chart renders from
// cache.persistence.
func claimSpec(class *string, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaimSpec {
	return &corev1.PersistentVolumeClaimSpec{
		AccessModes:      modes,
		StorageClassName: class,
		Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		},
	}
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// TestTheCacheIsKeptOnTheClaimTheValuesName: an emptyDir by default; with
// cache.persistence a claim the chart makes, of the class the values name
// ("-" for none, as Bitnami charts do); cache.existingClaim wins over both.
func TestTheCacheIsKeptOnTheClaimTheValuesName(t *testing.T) {
	cases := []struct {
		name, values string
		// claim is the claim the cache volume mounts; "" for an emptyDir.
		claim string
		// spec is the claim the chart renders, nil for none.
		spec *corev1.PersistentVolumeClaimSpec
	}{
		{name: "the default values keep it in an emptyDir for one run", values: ``},
		{
			name:   "persistence asks the cluster's default class for 2Gi ReadWriteOnce",
			values: `cache: {persistence: {enabled: true}}`,
			claim:  "driftscan-cache",
			spec:   claimSpec(nil, "2Gi", corev1.ReadWriteOnce),
		},
		{
			name:   "a storage class is asked for by name",
			values: `cache: {persistence: {enabled: true, storageClass: fast-ssd, size: 500Mi}}`,
			claim:  "driftscan-cache",
			spec:   claimSpec(strPtr("fast-ssd"), "500Mi", corev1.ReadWriteOnce),
		},
		{
			name:   `storageClass "-" asks for no class, a volume bound by hand`,
			values: `cache: {persistence: {enabled: true, storageClass: "-"}}`,
			claim:  "driftscan-cache",
			spec:   claimSpec(strPtr(""), "2Gi", corev1.ReadWriteOnce),
		},
		{
			name:   "shards share a ReadWriteMany claim",
			values: `{shards: 3, cache: {persistence: {enabled: true, accessModes: [ReadWriteMany]}}}`,
			claim:  "driftscan-cache",
			spec:   claimSpec(nil, "2Gi", corev1.ReadWriteMany),
		},
		{
			name:   "an existing claim wins over persistence",
			values: `cache: {existingClaim: team-cache, persistence: {enabled: true, storageClass: fast-ssd}}`,
			claim:  "team-cache",
		},
		{
			name:   "an existing claim wins over persistence that shards could not share",
			values: `{shards: 3, cache: {existingClaim: team-cache, persistence: {enabled: true}}}`,
			claim:  "team-cache",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c.values)
			v := cacheVolume(t, r)
			switch {
			case c.claim == "" && v.EmptyDir == nil:
				t.Errorf("cache volume %+v, want an emptyDir", v.VolumeSource)
			case c.claim != "" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != c.claim || v.PersistentVolumeClaim.ReadOnly):
				t.Errorf("cache volume %+v, want claim %s, writable", v.VolumeSource, c.claim)
			}
			pvc := cacheClaim(t, r)
			if c.spec == nil {
				if pvc != nil {
					t.Errorf("the chart renders claim %s, want none", pvc.Name)
				}
				return
			}
			if pvc == nil {
				t.Fatal("the chart renders no claim")
			}
			if pvc.Name != c.claim || pvc.Namespace != "driftscan" {
				t.Errorf("claim %s/%s, want driftscan/%s", pvc.Namespace, pvc.Name, c.claim)
			}
			if diff := cmp.Diff(*c.spec, pvc.Spec, quantityEqual); diff != "" {
				t.Errorf("claim spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheCacheClaimGoesWithTheRelease: the claim carries the chart's labels
// and the values' annotations, and no helm.sh/resource-policy: keep (a cache
// is rebuilt by the next run; a kept claim would hold a volume after
// uninstall that nothing mounts), unless the values add it.
func TestTheCacheClaimGoesWithTheRelease(t *testing.T) {
	pvc := cacheClaim(t, render(t, `cache: {persistence: {enabled: true, annotations: {backup.example.com/exclude: "true"}}}`))
	wantLabels := map[string]string{
		"helm.sh/chart":                "driftscan-0.1.0",
		"app.kubernetes.io/name":       "driftscan",
		"app.kubernetes.io/instance":   "driftscan",
		"app.kubernetes.io/version":    "0.1.0",
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/component":  "cache",
	}
	if diff := cmp.Diff(wantLabels, pvc.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"backup.example.com/exclude": "true"}, pvc.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	pvc = cacheClaim(t, render(t, `cache: {persistence: {enabled: true, annotations: {helm.sh/resource-policy: keep}}}`))
	if got := pvc.Annotations["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("helm.sh/resource-policy %q, want the values' keep", got)
	}
}

// TestShardsRefuseACacheClaimOneNodeMounts: the shards of a run are pods
// that run at once, maybe on different nodes, so a claim the chart makes for
// them must be ReadWriteMany; anything else fails rendering, saying so.
func TestShardsRefuseACacheClaimOneNodeMounts(t *testing.T) {
	cases := []struct{ values, want string }{
		{`{shards: 3, cache: {persistence: {enabled: true}}}`, "cache.persistence.accessModes [ReadWriteOnce] cannot serve shards 3"},
		{`{shards: 3, cache: {persistence: {enabled: true, accessModes: [ReadWriteOnce]}}}`, "cache.persistence.accessModes [ReadWriteOnce] cannot serve shards 3"},
		{`{shards: 2, cache: {persistence: {enabled: true, accessModes: [ReadWriteOncePod]}}}`, "cache.persistence.accessModes [ReadWriteOncePod] cannot serve shards 2"},
	}
	for _, c := range cases {
		t.Run(c.values, func(t *testing.T) {
			renderFails(t, c.values, c.want, "different nodes", "Add ReadWriteMany to cache.persistence.accessModes")
		})
	}
	for _, ok := range []string{
		`{shards: 3, cache: {persistence: {enabled: true, accessModes: [ReadWriteMany]}}}`,
		`{shards: 3, cache: {persistence: {enabled: true, accessModes: [ReadWriteOnce, ReadWriteMany]}}}`,
		`{shards: 1, cache: {persistence: {enabled: true, accessModes: [ReadWriteOncePod]}}}`,
		`{shards: 3, cache: {persistence: {enabled: false}}}`,
	} {
		t.Run(ok, func(t *testing.T) { render(t, ok) })
	}
}

// TestTheAPIServerTakesTheCacheClaimAndThePodThatMountsIt creates the
// rendered claim and CronJob on the test API server: the claim's spec (the
// empty class of "-" included) and the pod template that mounts it pass the
// API server's validation, the class is stored as rendered, and the
// ServiceAccount gets no right on the claim (Helm creates it, the kubelet
// mounts it).
func TestTheAPIServerTakesTheCacheClaimAndThePodThatMountsIt(t *testing.T) {
	cases := []struct {
		values string
		class  *string
	}{
		{`cache: {persistence: {enabled: true}}`, nil},
		{`cache: {persistence: {enabled: true, storageClass: "-"}}`, strPtr("")},
		{`{shards: 2, cache: {persistence: {enabled: true, storageClass: nfs-client, accessModes: [ReadWriteMany], size: 10Gi}}}`, strPtr("nfs-client")},
	}
	for _, c := range cases {
		t.Run(c.values, func(t *testing.T) {
			env.Need(t)
			r := install(t, c.values)
			env.Create(t, "helm", "", r.rel.OfKind("CronJob")[0])
			name := r.fullname + "-cache"
			live, err := env.Client.CoreV1().PersistentVolumeClaims(r.ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the rendered cache claim was not created: %v", err)
			}
			if diff := cmp.Diff(c.class, live.Spec.StorageClassName); diff != "" {
				t.Errorf("storageClassName (-want +got):\n%s", diff)
			}
			cj, err := env.Client.BatchV1().CronJobs(r.ns).Get(t.Context(), r.fullname, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var mounted string
			for _, v := range cj.Spec.JobTemplate.Spec.Template.Spec.Volumes {
				if v.Name == "cache" && v.PersistentVolumeClaim != nil {
					mounted = v.PersistentVolumeClaim.ClaimName
				}
			}
			if mounted != name {
				t.Errorf("the live CronJob's cache volume mounts claim %q, want %s", mounted, name)
			}
			for _, verb := range []string{"create", "update", "patch", "delete"} {
				if r.can(t, verb, "", "persistentvolumeclaims", r.ns, name) {
					t.Errorf("the ServiceAccount may %s the cache claim", verb)
				}
			}
		})
	}
}

func strPtr(s string) *string { return &s }

// TestARunKeepsNoScanCacheThatNoRunReads: on the default emptyDir every run
// is a new pod (restartPolicy Never, retries too), so a scan cache written
// there is never read, and writing it costs each run its hashing and
// encoding: the scan gets --no-cache. On a claim, or with extraArgs naming a
// --cache-dir of their own, it keeps the cache.
func TestARunKeepsNoScanCacheThatNoRunReads(t *testing.T) {
	cases := []struct {
		values string
		want   bool // --no-cache
	}{
		{``, true},
		{`shards: 3`, true},
		{`cache: {sizeLimit: ""}`, true},
		{`extraArgs: [--cache-directory-note, x]`, true},
		{`cache: {persistence: {enabled: true}}`, false},
		{`cache: {existingClaim: team-cache}`, false},
		{`{shards: 3, cache: {persistence: {enabled: true, accessModes: [ReadWriteMany]}}}`, false},
		{`{extraArgs: [--cache-dir, /mnt/scan-cache], extraVolumes: [{name: c, persistentVolumeClaim: {claimName: c}}], extraVolumeMounts: [{name: c, mountPath: /mnt/scan-cache}]}`, false},
		{`extraArgs: [--cache-dir=/mnt/scan-cache]`, false},
	}
	for _, c := range cases {
		t.Run(c.values, func(t *testing.T) {
			r := render(t, c.values)
			if got := slices.Contains(container(t, r).Args, "--no-cache"); got != c.want {
				t.Errorf("--no-cache in args: %v, want %v (args %q)", got, c.want, container(t, r).Args)
			}
			if spec := cronJob(t, r).Spec.JobTemplate.Spec.Template.Spec; spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %s: a retry in the same pod would read the emptyDir's cache", spec.RestartPolicy)
			}
		})
	}
}
