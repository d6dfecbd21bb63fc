// Package kubekeys keeps one copy of each key Kubernetes objects hold over
// and over ("metadata", "containerPort", "app.kubernetes.io/name"), for
// the scan's JSON readers (the parse cache's, the live objects'): a key
// read from bytes is otherwise a string allocated anew in every object.
package kubekeys

// Intern is the string whose bytes are k: one kept copy for the keys
// Kubernetes objects repeat, a new string for any other. Looking k up
// allocates nothing.
func Intern(k []byte) string {
	if s, ok := keys[string(k)]; ok {
		return s
	}
	return string(k)
}

// keys are the keys Kubernetes objects hold over and over.
var keys = func() map[string]string {
	list := []string{
		"apiVersion", "kind", "metadata", "name", "namespace", "labels",
		"annotations", "generateName", "finalizers", "ownerReferences", "spec",
		"status", "data", "stringData", "binaryData", "type", "immutable",
		"items", "selector", "matchLabels", "matchExpressions", "key", "operator",
		"values", "template", "containers", "initContainers", "image",
		"imagePullPolicy", "imagePullSecrets", "command", "args", "workingDir",
		"ports", "containerPort", "hostPort", "protocol", "port", "targetPort",
		"nodePort", "appProtocol", "resources", "requests", "limits", "cpu",
		"memory", "ephemeral-storage", "env", "envFrom", "value", "valueFrom",
		"fieldRef", "fieldPath", "secretKeyRef", "configMapKeyRef",
		"configMapRef", "secretRef", "optional", "prefix", "volumeMounts",
		"mountPath", "subPath", "readOnly", "volumes", "configMap", "secret",
		"secretName", "emptyDir", "persistentVolumeClaim", "claimName",
		"defaultMode", "path", "readinessProbe", "livenessProbe", "startupProbe",
		"httpGet", "tcpSocket", "grpc", "exec", "scheme", "initialDelaySeconds",
		"periodSeconds", "timeoutSeconds", "failureThreshold", "successThreshold",
		"replicas", "revisionHistoryLimit", "progressDeadlineSeconds",
		"minReadySeconds", "strategy", "rollingUpdate", "maxSurge",
		"maxUnavailable", "serviceAccountName", "automountServiceAccountToken",
		"securityContext", "runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup",
		"allowPrivilegeEscalation", "readOnlyRootFilesystem", "privileged",
		"capabilities", "drop", "add", "seccompProfile", "nodeSelector",
		"tolerations", "effect", "tolerationSeconds", "affinity",
		"podAntiAffinity", "podAffinity", "nodeAffinity", "topologyKey", "weight",
		"podAffinityTerm", "labelSelector", "topologySpreadConstraints",
		"maxSkew", "whenUnsatisfiable", "terminationGracePeriodSeconds",
		"restartPolicy", "dnsPolicy", "priorityClassName", "hostNetwork",
		"lifecycle", "preStop", "clusterIP", "clusterIPs", "sessionAffinity",
		"externalTrafficPolicy", "loadBalancerIP", "rules", "host", "http",
		"paths", "backend", "service", "number", "pathType", "tls", "hosts",
		"ingressClassName", "scaleTargetRef", "minReplicas", "maxReplicas",
		"metrics", "target", "averageUtilization", "resource", "behavior",
		"schedule", "jobTemplate", "backoffLimit", "completions", "parallelism",
		"activeDeadlineSeconds", "ttlSecondsAfterFinished", "concurrencyPolicy",
		"suspend", "subjects", "roleRef", "apiGroup", "apiGroups",
		"resourceNames", "verbs", "nonResourceURLs", "storageClassName",
		"accessModes", "volumeName", "storage", "app", "component", "version",
		"part-of", "instance", "app.kubernetes.io/name",
		"app.kubernetes.io/instance", "app.kubernetes.io/version",
		"app.kubernetes.io/component", "app.kubernetes.io/part-of",
		"app.kubernetes.io/managed-by", "helm.sh/chart",
		// What the API server writes into every object it stores, and the
		// defaults it fills into the kinds most estates hold: every live
		// object has them, and Git's rarely do.
		"uid", "resourceVersion", "generation", "creationTimestamp",
		"schedulerName", "terminationMessagePath", "terminationMessagePolicy",
		"enableServiceLinks", "internalTrafficPolicy", "ipFamilies",
		"ipFamilyPolicy", "allocateLoadBalancerNodePorts", "updateStrategy",
		"podManagementPolicy", "serviceName",
		"persistentVolumeClaimRetentionPolicy", "whenDeleted", "whenScaled",
		"completionMode", "podReplacementPolicy", "manualSelector", "volumeMode",
	}
	m := make(map[string]string, len(list))
	for _, k := range list {
		m[k] = k
	}
	return m
}()

// Value is the value whose JSON text (between its quotes, without
// escapes) is v, boxed, for the strings the API server writes into the
// objects of most estates over and over ("TCP", "ClusterFirst", "25%"):
// one kept copy, rather than a string and its interface made anew in
// every object. false for any other text; looking v up allocates nothing.
func Value(v []byte) (any, bool) {
	if len(v) > MaxValue {
		return nil, false
	}
	b, ok := values[string(v)]
	return b, ok
}

// Values lists the strings Value keeps, in no order.
func Values() []string {
	out := make([]string, 0, len(values))
	for v := range values {
		out = append(out, v)
	}
	return out
}

// MaxValue bounds the length of the values Value keeps: a longer string
// need not be looked up.
const MaxValue = 24

// values are the strings the API server defaults or writes in most live
// objects: protocols, pull, DNS, restart and termination policies, the
// default scheduler, rollout strategies and their 25%, Service types,
// traffic and IP family policies, and the like.
var values = func() map[string]any {
	list := []string{
		"TCP", "UDP", "SCTP", "Always", "IfNotPresent", "Never", "OnFailure",
		"ClusterFirst", "ClusterFirstWithHostNet", "Default", "default-scheduler",
		"File", "FallbackToLogsOnError", "/dev/termination-log",
		"RollingUpdate", "Recreate", "OnDelete", "OrderedReady", "Parallel",
		"25%", "Cluster", "Local", "ClusterIP", "NodePort", "LoadBalancer",
		"None", "SingleStack", "PreferDualStack", "RequireDualStack", "IPv4",
		"IPv6", "Retain", "Delete", "NonIndexed", "Indexed",
		"TerminatingOrFailed", "Failed", "Filesystem", "Block", "Opaque",
		"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "Exists", "Equal",
		"In", "NotIn", "DoesNotExist", "NoSchedule", "NoExecute",
		"PreferNoSchedule", "RuntimeDefault", "Allow", "Forbid", "Replace",
		"http", "https", "HTTP", "HTTPS", "Deployment", "ReplicaSet",
		"StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Service",
		"ConfigMap", "Secret", "ServiceAccount", "v1", "apps/v1", "batch/v1",
	}
	m := make(map[string]any, len(list))
	for _, v := range list { // TestValuesFitMaxValue
		m[v] = v
	}
	return m
}()
