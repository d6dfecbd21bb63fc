package charts

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// values parses a values file the way `helm install -f` does.
func values(t testing.TB, doc string) map[string]any {
	t.Helper()
	v, err := loader.LoadValues(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("values: %v\n%s", err, doc)
	}
	return v
}

func render(t testing.TB, doc string) *Release {
	t.Helper()
	opts := DefaultOptions()
	opts.Values = values(t, doc)
	r, err := Render(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scenario is one set of values the chart must render, with what its
// CronJob's container must run.
type scenario struct {
	name   string
	values string
	args   []string
	states []string
	// params is the contract params ConfigMap the scan may patch.
	params string
}

var scenarios = []scenario{
	{
		name:   "default",
		values: ``,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "480s"},
		states: []string{"driftscan-state"},
	},
	{
		name:   "sharded",
		values: `shards: 4`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state-$(JOB_COMPLETION_INDEX)", "--fail-on", "none", "--no-cache", "--timeout", "480s",
			"--shard", "$(JOB_COMPLETION_INDEX)/4", "--shard-by", "namespace"},
		states: []string{"driftscan-state-0", "driftscan-state-1", "driftscan-state-2", "driftscan-state-3"},
	},
	{
		name:   "sharded-by-app",
		values: `{shards: 2, shardBy: app}`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state-$(JOB_COMPLETION_INDEX)", "--fail-on", "none", "--no-cache", "--timeout", "480s",
			"--shard", "$(JOB_COMPLETION_INDEX)/2", "--shard-by", "app"},
		states: []string{"driftscan-state-0", "driftscan-state-1"},
	},
	{
		name: "narrowed-rbac",
		values: `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  namespaces: [team-a, team-b]
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "480s"},
		states: []string{"driftscan-state"},
	},
	{
		name: "secrets-and-auto-resume",
		values: `
activeDeadlineSeconds: 120
autoResume: true
rbac:
  secrets: true
  extraRules: [{apiGroups: [example.com], resources: [widgets]}]
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "90s", "--auto-resume"},
		states: []string{"driftscan-state"},
	},
	{
		name: "render-bounds",
		values: `
render: {timeout: 90s, kustomizeRemote: true}
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "480s",
			"--render-timeout", "90s", "--kustomize-remote"},
		states: []string{"driftscan-state"},
	},
	{
		name: "html-report",
		values: `
report:
  html: {enabled: true, existingClaim: driftscan-reports}
reportURL: https://drift.example.com/report.html
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--output", "html=/var/lib/driftscan/report/report.html",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "480s",
			"--report-url", "https://drift.example.com/report.html"},
		states: []string{"driftscan-state"},
	},
	{
		name: "contracts-and-audit",
		values: `
contractParams: driftscan-system/driftscan-contract-params
audit:
  files: [/var/log/kubernetes/audit]
  volume: {hostPath: {path: /var/log/kubernetes/audit, type: Directory}}
  supplementalGroups: [2000]
nodeSelector: {node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--no-cache", "--timeout", "480s",
			"--contract-params", "driftscan-system/driftscan-contract-params",
			"--audit-log", "/var/log/kubernetes/audit"},
		states: []string{"driftscan-state"},
		params: "driftscan-contract-params",
	},
	{
		name: "cache-persistence",
		values: `
cache:
  persistence:
    enabled: true
    storageClass: fast-ssd
    size: 10Gi
    annotations: {backup.example.com/exclude: "true"}
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state", "--fail-on", "none", "--timeout", "480s"},
		states: []string{"driftscan-state"},
	},
	{
		name: "sharded-cache-read-write-many",
		values: `
shards: 3
cache:
  persistence: {enabled: true, storageClass: "-", accessModes: [ReadWriteMany]}
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/driftscan-state-$(JOB_COMPLETION_INDEX)", "--fail-on", "none", "--timeout", "480s",
			"--shard", "$(JOB_COMPLETION_INDEX)/3", "--shard-by", "namespace"},
		states: []string{"driftscan-state-0", "driftscan-state-1", "driftscan-state-2"},
	},
	{
		name: "pushgateway",
		values: `
image:
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
imagePullSecrets: [{name: ghcr}]
timeZone: Europe/Berlin
schedule: "@hourly"
shards: 2
state: {name: drift-notified}
metrics:
  pushgateway: http://pushgateway.monitoring:9091
  file: /var/lib/node-exporter/textfile/driftscan.prom
reportURL: https://grafana.example.com/d/driftscan
config:
  apps:
  - name: web
    owner: team-web
    namespace: web
    source: {repo: "https://git.example.com/apps.git", path: web, auth: {tokenEnv: GIT_TOKEN}}
secrets:
  slack: {name: driftscan-slack, env: {SLACK_BOT_TOKEN: token}}
  pagerduty: {name: driftscan-pagerduty, optional: false, env: {PD_KEY_WEB: web, PD_KEY_PAY: pay}}
  git: {name: git-https, env: {GIT_TOKEN: token}}
extraArgs: ["--renotify-after", "24h"]
extraEnv: [{name: LOG_FORMAT, value: json}]
extraVolumes: [{name: textfile, hostPath: {path: /var/lib/node-exporter/textfile, type: Directory}}]
extraVolumeMounts: [{name: textfile, mountPath: /var/lib/node-exporter/textfile}]
cache: {existingClaim: driftscan-git-cache}
podAnnotations: {team: platform}
podLabels: {sidecar.istio.io/inject: "false"}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: tools, effect: NoSchedule}]
priorityClassName: low
serviceAccount: {annotations: {iam.gke.io/gcp-service-account: driftscan@example.iam.gserviceaccount.com}}
`,
		args: []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
			"--state", "configmap:$(NAMESPACE)/drift-notified-$(JOB_COMPLETION_INDEX)", "--fail-on", "none", "--timeout", "480s",
			"--shard", "$(JOB_COMPLETION_INDEX)/2", "--shard-by", "namespace",
			"--pushgateway", "http://pushgateway.monitoring:9091",
			"--metrics-file", "/var/lib/node-exporter/textfile/driftscan-$(JOB_COMPLETION_INDEX).prom",
			"--report-url", "https://grafana.example.com/d/driftscan",
			"--renotify-after", "24h"},
		states: []string{"drift-notified-0", "drift-notified-1"},
	},
}

func (sc scenario) autoResume() bool { return strings.Contains(sc.values, "autoResume: true") }

func TestTheChartRendersItsGoldens(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := render(t, sc.values)
			got := "# values:\n" + strings.TrimSpace(sc.values) + "\n\n# NOTES.txt\n" + r.Notes + "\n\n# manifest\n" + r.Manifest
			golden.Check(t, sc.name+".golden", []byte(got))
		})
	}
}

func TestTheContainerRunsTheScanWithTheDocumentedArgs(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := container(t, render(t, sc.values))
			if diff := cmp.Diff(sc.args, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if len(c.Command) != 0 {
				t.Errorf("command %v overrides the image's entrypoint", c.Command)
			}
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			// Every $(VAR) in args must be an env var of the container, or
			// Kubernetes passes it on literally.
			for _, a := range c.Args {
				for _, v := range []string{"NAMESPACE", "JOB_COMPLETION_INDEX"} {
					if strings.Contains(a, "$("+v+")") {
						if _, ok := env[v]; !ok {
							t.Errorf("arg %q uses $(%s), which the container's env lacks", a, v)
						}
					}
				}
			}
			if ns := env["NAMESPACE"]; ns.ValueFrom == nil || ns.ValueFrom.FieldRef == nil || ns.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("NAMESPACE = %+v, want the pod's namespace", ns)
			}
		})
	}
}

func TestArgsExpandLikeTheKubelet(t *testing.T) {
	r := render(t, `{shards: 3, extraArgs: ["--note", "$$(NOT_A_VAR)"]}`)
	got, err := r.Args(map[string]string{"NAMESPACE": "gitops", "JOB_COMPLETION_INDEX": "2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scan", "--config", "/etc/driftscan/scan.yaml", "--output", "json",
		"--state", "configmap:gitops/driftscan-state-2", "--fail-on", "none", "--no-cache", "--timeout", "480s", "--shard", "2/3", "--shard-by", "namespace", "--note", "$(NOT_A_VAR)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if _, err := r.Args(map[string]string{"NAMESPACE": "gitops"}); err == nil || !strings.Contains(err.Error(), "JOB_COMPLETION_INDEX") {
		t.Errorf("Args without JOB_COMPLETION_INDEX: %v, want an error naming it", err)
	}
}

func TestShardsMakeAnIndexedJobWithOneStatePerShard(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := render(t, sc.values)
			cj := cronJob(t, r)
			job := cj.Spec.JobTemplate.Spec
			n := int32(len(sc.states))
			if n > 1 {
				if job.CompletionMode == nil || *job.CompletionMode != batchv1.IndexedCompletion {
					t.Errorf("completionMode %v, want Indexed", job.CompletionMode)
				}
				if job.Completions == nil || *job.Completions != n || job.Parallelism == nil || *job.Parallelism != n {
					t.Errorf("completions %v, parallelism %v, want both %d", job.Completions, job.Parallelism, n)
				}
			} else if job.CompletionMode != nil || job.Completions != nil || job.Parallelism != nil {
				t.Errorf("one shard renders completionMode %v, completions %v, parallelism %v; want none", job.CompletionMode, job.Completions, job.Parallelism)
			}
			var states []string
			for _, u := range r.OfKind("ConfigMap") {
				if u.GetLabels()["app.kubernetes.io/component"] != "state" {
					continue
				}
				states = append(states, u.GetName())
				if u.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("state ConfigMap %s is not kept on uninstall", u.GetName())
				}
				if _, ok := u.Object["data"]; ok {
					t.Errorf("state ConfigMap %s renders data, which an upgrade would reset", u.GetName())
				}
			}
			if diff := cmp.Diff(sc.states, states); diff != "" {
				t.Errorf("state ConfigMaps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTheCronJobNeverOverlapsAndStopsInTime(t *testing.T) {
	cj := cronJob(t, render(t, ``))
	s := cj.Spec
	if s.Schedule != "*/10 * * * *" || s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("schedule %q, concurrencyPolicy %q; want every 10 minutes, Forbid", s.Schedule, s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || s.SuccessfulJobsHistoryLimit == nil || s.FailedJobsHistoryLimit == nil {
		t.Errorf("startingDeadlineSeconds, history limits unset: %+v", s)
	}
	if d := s.JobTemplate.Spec.ActiveDeadlineSeconds; d == nil || *d >= 600 {
		t.Errorf("activeDeadlineSeconds %v, want set and below the 10 minute interval", d)
	}
	if p := s.JobTemplate.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", p)
	}
}

func TestThePodIsLockedDown(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := render(t, sc.values)
			pod := cronJob(t, r).Spec.JobTemplate.Spec.Template.Spec
			psc := pod.SecurityContext
			if psc == nil || !isTrue(psc.RunAsNonRoot) || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
				psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod securityContext %+v, want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", psc)
			}
			c := container(t, r)
			sc := c.SecurityContext
			if sc == nil || !isTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
				!isTrue(sc.ReadOnlyRootFilesystem) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Privileged == nil || *sc.Privileged ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
				sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("container securityContext %+v, want non-root 65532, read-only root, no escalation, no privilege, drop ALL, seccomp RuntimeDefault", sc)
			}
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = m
			}
			volumes := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				volumes[v.Name] = v
			}
			for path, want := range map[string]string{"/etc/driftscan": "configMap", "/tmp": "emptyDir", "/var/cache/driftscan": "emptyDir or claim"} {
				m, ok := mounts[path]
				if !ok {
					t.Errorf("nothing mounted at %s", path)
					continue
				}
				v := volumes[m.Name]
				switch want {
				case "configMap":
					if v.ConfigMap == nil || v.ConfigMap.Name != "driftscan-config" || !m.ReadOnly {
						t.Errorf("%s: volume %+v, want the config ConfigMap, read-only", path, v)
					}
				case "emptyDir":
					if v.EmptyDir == nil {
						t.Errorf("%s: volume %+v, want an emptyDir", path, v)
					}
				default:
					if v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
						t.Errorf("%s: volume %+v, want an emptyDir or a claim", path, v)
					}
				}
			}
			if pod.HostNetwork || pod.HostPID || pod.HostIPC {
				t.Error("the pod shares a host namespace")
			}
			if pod.ServiceAccountName != "driftscan" {
				t.Errorf("serviceAccountName %q, want driftscan", pod.ServiceAccountName)
			}
		})
	}
}

func TestSecretsAreReferencedNeverCreated(t *testing.T) {
	r := render(t, scenarios[len(scenarios)-1].values)
	if s := r.OfKind("Secret"); len(s) != 0 {
		t.Errorf("the chart creates %d Secrets, want none", len(s))
	}
	got := map[string]string{}
	for _, e := range container(t, r).Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			got[e.Name] = ref.Name + "/" + ref.Key
			if want := ref.Name != "driftscan-pagerduty"; ref.Optional == nil || *ref.Optional != want {
				t.Errorf("%s: optional %v, want %v", e.Name, ref.Optional, want)
			}
		}
	}
	want := map[string]string{
		"GIT_TOKEN":       "git-https/token",
		"SLACK_BOT_TOKEN": "driftscan-slack/token",
		"PD_KEY_WEB":      "driftscan-pagerduty/web",
		"PD_KEY_PAY":      "driftscan-pagerduty/pay",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret env (-want +got):\n%s", diff)
	}
}

func TestTheScanConfigIsMountedFromValues(t *testing.T) {
	r := render(t, scenarios[len(scenarios)-1].values)
	data, err := r.ScanConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: ScanConfig", "apiVersion: driftscan.dev/v1alpha1", "name: web", "tokenEnv: GIT_TOKEN", "- argocd-controller"} {
		if !strings.Contains(data, want) {
			t.Errorf("scan.yaml lacks %q:\n%s", want, data)
		}
	}
}

// allowedRule reports why a rule is within what the chart may grant: get and
// list on named resources that are not subresources; get and update on the
// state ConfigMaps and their Leases by name; with autoResume only, get and
// patch on the reconciler objects breakglass suspends; and with
// contractParams, get and patch on that one ConfigMap.
func allowedRule(rule rbacv1.PolicyRule, states []string, autoResume bool, params string) (bool, string) {
	if len(rule.NonResourceURLs) > 0 {
		return false, "grants non-resource URLs"
	}
	for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
		if slices.Contains(list, "*") {
			return false, `grants "*": that includes pods/exec, pods/attach, pods/portforward, nodes/proxy and services/proxy`
		}
	}
	for _, res := range rule.Resources {
		if strings.Contains(res, "/") {
			return false, "grants the subresource " + res
		}
	}
	readOnly := true
	for _, v := range rule.Verbs {
		if v != "get" && v != "list" {
			readOnly = false
		}
	}
	if readOnly && len(rule.ResourceNames) == 0 {
		return true, ""
	}
	if autoResume && slices.Equal(rule.Verbs, []string{"get", "patch"}) && len(rule.Resources) == 1 && len(rule.APIGroups) == 1 &&
		slices.Contains([]string{"applications.argoproj.io", "kustomizations.kustomize.toolkit.fluxcd.io", "helmreleases.helm.toolkit.fluxcd.io"}, rule.Resources[0]+"."+rule.APIGroups[0]) {
		return true, ""
	}
	state := slices.Equal(rule.APIGroups, []string{""}) && slices.Equal(rule.Resources, []string{"configmaps"})
	if params != "" && state && slices.Equal(rule.Verbs, []string{"get", "patch"}) && slices.Equal(rule.ResourceNames, []string{params}) {
		return true, ""
	}
	lease := slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}) && slices.Equal(rule.Resources, []string{"leases"})
	if !state && !lease {
		return false, "writes something other than the state ConfigMaps and their Leases"
	}
	for _, v := range rule.Verbs {
		if v != "get" && v != "update" {
			return false, "grants " + v + " on " + rule.Resources[0]
		}
	}
	if len(rule.ResourceNames) == 0 {
		return false, "writes " + rule.Resources[0] + " without resourceNames"
	}
	for _, n := range rule.ResourceNames {
		if !slices.Contains(states, n) {
			return false, "writes " + n + ", which is not a state ConfigMap or its Lease"
		}
	}
	return true, ""
}

func TestNoRoleGrantsMoreThanReadsAndItsOwnState(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := render(t, sc.values)
			roles := map[string]bool{}
			var stateWrites int
			for _, u := range r.Objects {
				if u.GetKind() != "Role" && u.GetKind() != "ClusterRole" {
					continue
				}
				roles[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = true
				var role rbacv1.ClusterRole // Role has the same rules
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
					t.Fatal(err)
				}
				if role.AggregationRule != nil {
					t.Errorf("%s %s aggregates other roles", u.GetKind(), u.GetName())
				}
				for _, rule := range role.Rules {
					ok, why := allowedRule(rule, sc.states, sc.autoResume(), sc.params)
					if !ok {
						t.Errorf("%s %s/%s: rule %+v %s", u.GetKind(), u.GetNamespace(), u.GetName(), rule, why)
					}
					if slices.Contains(rule.Verbs, "update") {
						stateWrites++
						if u.GetKind() != "Role" || u.GetNamespace() != "driftscan" {
							t.Errorf("the state write is granted by %s %s/%s, want a Role in the release namespace", u.GetKind(), u.GetNamespace(), u.GetName())
						}
						if diff := cmp.Diff(sc.states, rule.ResourceNames); diff != "" {
							t.Errorf("state resourceNames (-want +got):\n%s", diff)
						}
					}
				}
			}
			if stateWrites != 2 {
				t.Errorf("%d rules write the state, want exactly 2 (its ConfigMaps and its Leases)", stateWrites)
			}
			for _, u := range r.Objects {
				if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" {
					continue
				}
				var b rbacv1.RoleBinding
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
					t.Fatal(err)
				}
				ns := u.GetNamespace()
				if b.RoleRef.Kind == "ClusterRole" {
					ns = ""
				}
				if !roles[b.RoleRef.Kind+"/"+ns+"/"+b.RoleRef.Name] {
					t.Errorf("%s %s binds %s %s, which the chart does not define", u.GetKind(), u.GetName(), b.RoleRef.Kind, b.RoleRef.Name)
				}
				want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "driftscan", Namespace: "driftscan"}}
				if diff := cmp.Diff(want, b.Subjects); diff != "" {
					t.Errorf("%s %s subjects (-want +got):\n%s", u.GetKind(), u.GetName(), diff)
				}
			}
		})
	}
}

func TestNarrowedRBACUsesRolesInTheNamedNamespacesOnly(t *testing.T) {
	r := render(t, `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  namespaces: [team-a, team-b]
`)
	var cr rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.Find("ClusterRole", "driftscan-read").Object, &cr); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, Verbs: []string{"get", "list"}},
	}
	if diff := cmp.Diff(want, cr.Rules); diff != "" {
		t.Errorf("the ClusterRole in namespaces scope (-want +got):\n%s", diff)
	}
	var got []string
	for _, u := range r.OfKind("Role") {
		if u.GetName() == "driftscan-read" {
			got = append(got, u.GetNamespace())
		}
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, got); diff != "" {
		t.Errorf("read Roles by namespace (-want +got):\n%s", diff)
	}
}

// badValues are values the schema must reject, with the field its message
// must name and what it must say.
var badValues = []struct {
	name, values string
	want         []string
}{
	{"a schedule that is a number", `schedule: 10`, []string{"/schedule", "want string"}},
	{"a schedule that is not cron", `schedule: every ten minutes`, []string{"/schedule", "does not match pattern"}},
	{"zero shards", `shards: 0`, []string{"/shards", "minimum"}},
	{"shards as a string", `shards: "4"`, []string{"/shards", "want integer"}},
	{"a fraction of a shard", `shards: 1.5`, []string{"/shards", "want integer"}},
	{"shards by something else", `shardBy: cluster`, []string{"/shardBy", "must be one of 'namespace', 'app'"}},
	{"an unquoted numeric image tag", `image: {tag: 1.2}`, []string{"/image/tag", "want string"}},
	{"an unknown pull policy", `image: {pullPolicy: Sometimes}`, []string{"/image/pullPolicy", "must be one of 'Always', 'IfNotPresent', 'Never'"}},
	{"an unknown appliedAs", `config: {apiVersion: driftscan.dev/v1alpha1, kind: ScanConfig, apps: [{name: web, appliedAs: argocd}]}`, []string{"/config/apps/0/appliedAs", "must be one of"}},
	{"a contract params ConfigMap without its namespace", `contractParams: driftscan-contract-params`, []string{"/contractParams", "does not match pattern"}},
	{"an audit mount path that is relative", `audit: {mountPath: var/log}`, []string{"/audit/mountPath", "does not match pattern"}},
	{"an unknown RBAC scope", `rbac: {scope: everywhere}`, []string{"/rbac/scope", "must be one of 'cluster', 'namespaces'"}},
	{"namespaces scope without namespaces", `rbac: {scope: namespaces}`, []string{"/rbac/namespaces", "minItems"}},
	{"backport pull requests without a token secret", `backportPullRequests: {enabled: true}`, []string{"/backportPullRequests/tokenSecret", "name"}},
	{"a namespace that is not a DNS label", `rbac: {scope: namespaces, namespaces: [Team_A]}`, []string{"/rbac/namespaces/0", "does not match pattern"}},
	{"no API groups", `rbac: {rules: [{apiGroups: [], resources: [deployments]}]}`, []string{"/rbac/rules/0/apiGroups", "minItems"}},
	{"a typo in a top-level key", `shard: 4`, []string{"additional properties 'shard' not allowed"}},
	{"a config of another kind", `config: {kind: Scan}`, []string{"/config/kind", "ScanConfig"}},
	{"an app without a name", `config: {apps: [{owner: team-web}]}`, []string{"/config/apps/0", "missing property 'name'"}},
	{"a metrics file the textfile collector ignores", `metrics: {file: /metrics/driftscan.txt}`, []string{"/metrics/file", "does not match pattern"}},
	{"a pushgateway URL with a space", `metrics: {pushgateway: "http://pgw :9091"}`, []string{"/metrics/pushgateway"}},
	{"an HTML report without a claim to write it to", `report: {html: {enabled: true}}`, []string{"/report/html/existingClaim", "minLength"}},
	{"a typo under report.html", `report: {html: {enable: true}}`, []string{"/report/html", "additional properties 'enable' not allowed"}},
	{"a pod annotation that is not a string", `podAnnotations: {prometheus.io/scrape: true}`, []string{"/podAnnotations/prometheus.io~1scrape", "want string"}},
	{"a Secret name with capitals", `secrets: {slack: {name: Slack}}`, []string{"/secrets/slack/name"}},
	{"an env var name with a dash", `secrets: {git: {name: git, env: {GIT-TOKEN: token}}}`, []string{"/secrets/git/env", "additional properties 'GIT-TOKEN' not allowed"}},
	{"a Secret without env vars to map", `secrets: {slack: {name: slack}}`, []string{"/secrets/slack/env", "minProperties"}},
	{"a starting deadline the controller may miss", `startingDeadlineSeconds: 5`, []string{"/startingDeadlineSeconds", "minimum"}},
	{"a digest that is not sha256", `image: {digest: latest}`, []string{"/image/digest"}},
	{"extraArgs that are not strings", `extraArgs: [--renotify-after, 24]`, []string{"/extraArgs/1", "want string"}},
	{"every resource, which includes pods/exec", `rbac: {rules: [{apiGroups: [""], resources: ["*"]}]}`, []string{"/rbac/rules/0/resources/0", "does not match pattern"}},
	{"every API group", `rbac: {rules: [{apiGroups: ["*"], resources: [deployments]}]}`, []string{"/rbac/rules/0/apiGroups/0", "does not match pattern"}},
	{"a subresource", `rbac: {extraRules: [{apiGroups: [""], resources: [pods/exec]}]}`, []string{"/rbac/extraRules/0/resources/0", "does not match pattern"}},
	{"Secrets in a rule instead of rbac.secrets", `rbac: {extraRules: [{apiGroups: [""], resources: [secrets]}]}`, []string{"/rbac/extraRules/0/resources/0"}},
	{"the old apiGroups and resources values", `rbac: {apiGroups: ["*"], resources: ["*"]}`, []string{"/rbac", "additional properties", "'apiGroups'", "'resources'", "not allowed"}}, // the validator names them in map order
	{"a negative timeout", `timeoutSeconds: -1`, []string{"/timeoutSeconds", "minimum"}},
	{"a deadline that leaves the scan no time", `activeDeadlineSeconds: 5`, []string{"/activeDeadlineSeconds", "minimum"}},
	{"auto-resume as a string", `autoResume: "yes"`, []string{"/autoResume", "want boolean"}},
	{"a render timeout that is not a duration", `render: {timeout: 2 minutes}`, []string{"/render/timeout", "does not match pattern"}},
	{"cache persistence as a boolean", `cache: {persistence: true}`, []string{"/cache/persistence", "want object"}},
	{"a typo under cache.persistence", `cache: {persistence: {storgeClass: fast}}`, []string{"/cache/persistence", "additional properties 'storgeClass' not allowed"}},
	{"a cache size in GB, which is no Kubernetes quantity", `cache: {persistence: {size: 2GB}}`, []string{"/cache/persistence/size", "does not match pattern"}},
	{"a cache size as a number", `cache: {persistence: {size: 2}}`, []string{"/cache/persistence/size", "want string"}},
	{"a read-only cache", `cache: {persistence: {accessModes: [ReadOnlyMany]}}`, []string{"/cache/persistence/accessModes/0", "must be one of"}},
	{"a cache with no access mode", `cache: {persistence: {accessModes: []}}`, []string{"/cache/persistence/accessModes", "minItems"}},
	{"an access mode as a string", `cache: {persistence: {accessModes: ReadWriteMany}}`, []string{"/cache/persistence/accessModes", "want array"}},
	{"a storage class that is not a DNS name", `cache: {persistence: {storageClass: Fast_SSD}}`, []string{"/cache/persistence/storageClass"}},
	{"a cache claim annotation that is not a string", `cache: {persistence: {annotations: {backup.example.com/exclude: true}}}`, []string{"/cache/persistence/annotations/backup.example.com~1exclude", "want string"}},
	{"a cache claim name with capitals", `cache: {existingClaim: Cache}`, []string{"/cache/existingClaim"}},
}

// renderFails renders the chart with values and fails the test unless the
// render fails saying each of wants; it returns the error.
func renderFails(t *testing.T, valuesYAML string, wants ...string) error {
	t.Helper()
	opts := DefaultOptions()
	opts.Values = values(t, valuesYAML)
	_, err := Render(t.Context(), opts)
	if err == nil {
		t.Fatalf("values %s rendered, want an error", valuesYAML)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	return err
}

func TestBadValuesAreRejectedNamingTheField(t *testing.T) {
	for _, bad := range badValues {
		t.Run(bad.name, func(t *testing.T) {
			err := renderFails(t, bad.values, bad.want...)
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				t.Errorf("error is not Helm's schema validation:\n%v", err)
			}
		})
	}
}

// TestTheScanStopsItselfBeforeTheJobsDeadline: at activeDeadlineSeconds
// Kubernetes kills the pod and nothing is written, so the chart gives the
// scan its own, earlier deadline (--timeout), at which it writes the report
// of what finished and saves what it notified.
func TestTheScanStopsItselfBeforeTheJobsDeadline(t *testing.T) {
	cases := []struct {
		values string
		want   string
	}{
		{``, "480s"},
		{`activeDeadlineSeconds: 3000`, "2940s"},
		{`activeDeadlineSeconds: 120`, "90s"},
		{`activeDeadlineSeconds: 10`, "7s"},
		{`{activeDeadlineSeconds: 900, timeoutSeconds: 600}`, "600s"},
	}
	for _, c := range cases {
		t.Run(c.values, func(t *testing.T) {
			r := render(t, c.values)
			args := container(t, r).Args
			i := slices.Index(args, "--timeout")
			if i < 0 || i+1 == len(args) {
				t.Fatalf("args %q have no --timeout", args)
			}
			if args[i+1] != c.want {
				t.Errorf("--timeout %s, want %s", args[i+1], c.want)
			}
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			if ads := cronJob(t, r).Spec.JobTemplate.Spec.ActiveDeadlineSeconds; ads == nil || d >= time.Duration(*ads)*time.Second {
				t.Errorf("--timeout %s is not below activeDeadlineSeconds %v", d, ads)
			}
		})
	}
	for _, bad := range []string{`{activeDeadlineSeconds: 300, timeoutSeconds: 300}`, `{activeDeadlineSeconds: 300, timeoutSeconds: 900}`} {
		opts := DefaultOptions()
		opts.Values = values(t, bad)
		_, err := Render(t.Context(), opts)
		if err == nil || !strings.Contains(err.Error(), "must be below activeDeadlineSeconds 300") {
			t.Errorf("values %s: %v, want an error that the timeout must be below the deadline", bad, err)
		}
	}
}

// TestSecretsAreReadOnlyWhenAsked: by default no rule reaches Secrets; with
// rbac.secrets exactly one does, get and list.
func TestSecretsAreReadOnlyWhenAsked(t *testing.T) {
	secretRules := func(r *Release) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, u := range append(r.OfKind("ClusterRole"), r.OfKind("Role")...) {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
				t.Fatal(err)
			}
			for _, rule := range role.Rules {
				if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*") {
					out = append(out, rule)
				}
			}
		}
		return out
	}
	if got := secretRules(render(t, ``)); len(got) != 0 {
		t.Errorf("the default values grant Secrets: %+v", got)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}
	if diff := cmp.Diff(want, secretRules(render(t, `rbac: {secrets: true}`))); diff != "" {
		t.Errorf("rbac.secrets (-want +got):\n%s", diff)
	}
}

func TestTheChartPassesHelmLintStrict(t *testing.T) {
	lint := action.NewLint()
	lint.Strict = true
	lint.Namespace = "driftscan"
	kv, err := common.ParseKubeVersion("v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	lint.KubeVersion = kv
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			res := lint.Run([]string{ChartDir}, values(t, sc.values))
			var buf bytes.Buffer
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev { // INFO only suggests an icon
					buf.WriteString(m.Error() + "\n")
				}
			}
			for _, e := range res.Errors {
				buf.WriteString(e.Error() + "\n")
			}
			if buf.Len() > 0 {
				t.Errorf("helm lint --strict:\n%s", buf.String())
			}
		})
	}
}

func TestTheEmbeddedChartIsTheChartOnDisk(t *testing.T) {
	ch, err := loader.Load(ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	emb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	names := func(files []*common.File) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(names(ch.Raw), names(emb.Raw)); diff != "" {
		t.Errorf("files (-disk +embedded):\n%s", diff)
	}
}

func cronJob(t *testing.T, r *Release) *batchv1.CronJob {
	t.Helper()
	cj, err := r.CronJob()
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

func container(t *testing.T, r *Release) corev1.Container {
	t.Helper()
	c, err := r.Container()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func isTrue(b *bool) bool { return b != nil && *b }

func TestTheAuditLogIsMountedReadOnlyForAGroupThePodJoins(t *testing.T) {
	r := render(t, `
audit:
  files: [/var/log/kubernetes/audit]
  volume: {hostPath: {path: /var/log/kubernetes/audit, type: Directory}}
  supplementalGroups: [2000]
`)
	cj, err := r.CronJob()
	if err != nil {
		t.Fatal(err)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := container(t, r)
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == "audit" {
			mounted = true
			if !m.ReadOnly || m.MountPath != "/var/log/kubernetes/audit" {
				t.Errorf("audit mount = %+v, want read-only at /var/log/kubernetes/audit", m)
			}
		}
	}
	if !mounted {
		t.Errorf("no audit mount in %+v", c.VolumeMounts)
	}
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == "audit" {
			vol = &pod.Volumes[i]
		}
	}
	if vol == nil || vol.HostPath == nil || vol.HostPath.Path != "/var/log/kubernetes/audit" {
		t.Errorf("audit volume = %+v, want the hostPath from values", vol)
	}
	if sc := pod.SecurityContext; sc == nil || !slices.Equal(sc.SupplementalGroups, []int64{2000}) || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod security context = %+v, want supplementalGroups [2000] and still user 65532", sc)
	}
	// Without audit values nothing is mounted.
	c = container(t, render(t, ``))
	for _, m := range c.VolumeMounts {
		if m.Name == "audit" {
			t.Errorf("the default values mount %+v", m)
		}
	}
}

func TestBackportPullRequestsPassTheFlagAndTheForgeToken(t *testing.T) {
	r := render(t, "backportPullRequests: {enabled: true, tokenSecret: {name: driftscan-forge, key: api-token}}\nsecrets: {git: {name: git-push, env: {GIT_TOKEN: token}}}\n")
	c := container(t, r)
	if !slices.Contains(c.Args, "--backport-prs") {
		t.Errorf("args %v lack --backport-prs", c.Args)
	}
	got := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			got[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			if e.Name == "DRIFTSCAN_FORGE_TOKEN" && e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional {
				t.Errorf("the forge token is optional: a missing Secret would fail every pull request silently")
			}
		}
	}
	want := map[string]string{"DRIFTSCAN_FORGE_TOKEN": "driftscan-forge/api-token", "GIT_TOKEN": "git-push/token"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret env (-want +got):\n%s", diff)
	}
	if s := r.OfKind("Secret"); len(s) != 0 {
		t.Errorf("the chart creates %d Secrets", len(s))
	}
	c = container(t, render(t, ``))
	for _, e := range c.Env {
		if e.Name == "DRIFTSCAN_FORGE_TOKEN" {
			t.Errorf("the default values pass a forge token: %+v", e)
		}
	}
	if slices.Contains(c.Args, "--backport-prs") {
		t.Errorf("the default values pass --backport-prs")
	}
}
