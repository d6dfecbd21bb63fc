{{/* The chart name, or nameOverride. */}}
{{- define "driftscan.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The fully qualified app name, 63 characters at most: fullnameOverride, or the
release name when it already contains the chart name, or <release>-<chart>.
*/}}
{{- define "driftscan.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart@version, for the helm.sh/chart label. */}}
{{- define "driftscan.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "driftscan.labels" -}}
helm.sh/chart: {{ include "driftscan.chart" . }}
{{ include "driftscan.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select this release's objects. */}}
{{- define "driftscan.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftscan.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the scan runs as. */}}
{{- define "driftscan.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "driftscan.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The state ConfigMap's name; shards append -<index>. */}}
{{- define "driftscan.stateName" -}}
{{- default (printf "%s-state" (include "driftscan.fullname" .)) .Values.state.name }}
{{- end }}

{{/* The state ConfigMap names, one per shard, as a JSON list. */}}
{{- define "driftscan.stateNames" -}}
{{- $base := include "driftscan.stateName" . }}
{{- $names := list }}
{{- if gt (int .Values.shards) 1 }}
{{- range $i := until (int .Values.shards) }}
{{- $names = append $names (printf "%s-%d" $base $i) }}
{{- end }}
{{- else }}
{{- $names = list $base }}
{{- end }}
{{- toJson $names }}
{{- end }}

{{/* The image reference: repository@digest, or repository:tag. */}}
{{- define "driftscan.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* Whether the scan runs as an Indexed Job ("true" or ""). */}}
{{- define "driftscan.sharded" -}}
{{- if gt (int .Values.shards) 1 }}true{{ end }}
{{- end }}

{{/*
The read rules: what the scan compares. get and list only, on the resources
named in rbac.rules and rbac.extraRules (the schema refuses "*" and
subresources), and on Secrets only with rbac.secrets.
*/}}
{{- define "driftscan.readRules" -}}
{{- range concat .Values.rbac.rules .Values.rbac.extraRules }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: ["get", "list"]
{{- end }}
{{- if .Values.rbac.secrets }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list"]
{{- end }}
{{- end }}

{{/*
The writes --auto-resume needs, with autoResume only: get and patch on the
reconciler objects breakglass suspends.
*/}}
{{- define "driftscan.resumeRules" -}}
- apiGroups: ["argoproj.io"]
  resources: ["applications"]
  verbs: ["get", "patch"]
- apiGroups: ["kustomize.toolkit.fluxcd.io"]
  resources: ["kustomizations"]
  verbs: ["get", "patch"]
- apiGroups: ["helm.toolkit.fluxcd.io"]
  resources: ["helmreleases"]
  verbs: ["get", "patch"]
{{- end }}

{{/*
The scan's own deadline in seconds (--timeout): timeoutSeconds, or
activeDeadlineSeconds minus 60 (three quarters of it below 240). It must be
below activeDeadlineSeconds, where the pod is killed and nothing is written.
*/}}
{{- define "driftscan.timeoutSeconds" -}}
{{- $deadline := int .Values.activeDeadlineSeconds }}
{{- $t := int .Values.timeoutSeconds }}
{{- if eq $t 0 }}
{{- if ge $deadline 240 }}
{{- $t = sub $deadline 60 }}
{{- else }}
{{- $t = div (mul $deadline 3) 4 }}
{{- end }}
{{- end }}
{{- if ge (int $t) $deadline }}
{{- fail (printf "timeoutSeconds %d must be below activeDeadlineSeconds %d: at activeDeadlineSeconds the pod is killed and no report is written" (int $t) $deadline) }}
{{- end }}
{{- if lt (int $t) 1 }}
{{- fail (printf "activeDeadlineSeconds %d leaves the scan no time: give at least 10" $deadline) }}
{{- end }}
{{- int $t }}
{{- end }}

{{/* The cluster-scoped reads every scan needs, whatever the scope. */}}
{{- define "driftscan.clusterRules" -}}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingwebhookconfigurations"]
  verbs: ["get", "list"]
{{- end }}

{{/*
The claim the cache volume mounts: cache.existingClaim, else with
cache.persistence.enabled the chart's own <fullname>-cache, else "" (an
emptyDir).
*/}}
{{- define "driftscan.cacheClaimName" -}}
{{- if .Values.cache.existingClaim }}
{{- .Values.cache.existingClaim }}
{{- else if .Values.cache.persistence.enabled }}
{{- printf "%s-cache" (include "driftscan.fullname" .) }}
{{- end }}
{{- end }}

{{/*
"true" when a run's scan cache can be read by a later run: the cache volume
is a claim, or extraArgs point --cache-dir at a volume of their own. Else the
cache volume is an emptyDir and every run a new pod (restartPolicy Never, a
retry too), so a scan cache written there is never read.
*/}}
{{- define "driftscan.scanCacheKept" -}}
{{- $kept := include "driftscan.cacheClaimName" . }}
{{- range .Values.extraArgs }}
{{- if or (eq . "--cache-dir") (hasPrefix "--cache-dir=" .) }}{{ $kept = "extraArgs" }}{{ end }}
{{- end }}
{{- if $kept }}true{{ end }}
{{- end }}
