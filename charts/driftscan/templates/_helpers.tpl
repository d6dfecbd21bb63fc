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

{{/* The read rules: what the scan compares. */}}
{{- define "driftscan.readRules" -}}
- apiGroups: {{ toJson .Values.rbac.apiGroups }}
  resources: {{ toJson .Values.rbac.resources }}
  verbs: ["get", "list"]
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
