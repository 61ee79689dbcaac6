{{/* The name of every object: the release name when it already says metascript. */}}
{{- define "metascript.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "metascript.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* What selects the engine's pods (Deployment, PDB, metrics Service). */}}
{{- define "metascript.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: engine
{{- end -}}

{{/* The mode, checked: single, ha or sharded. */}}
{{- define "metascript.mode" -}}
{{- if not (has .Values.mode (list "single" "ha" "sharded")) -}}
{{- fail (printf "mode %q: want single, ha or sharded" .Values.mode) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/* Replicas: the value, else the mode's own (single 1, ha 2, sharded 3). */}}
{{- define "metascript.replicas" -}}
{{- $mode := include "metascript.mode" . -}}
{{- $default := get (dict "single" 1 "ha" 2 "sharded" 3) $mode -}}
{{- $replicas := .Values.replicas | default $default | int -}}
{{- if and (eq $mode "single") (ne $replicas 1) -}}
{{- fail (printf "mode single runs 1 replica, not %d: use mode ha for standbys or sharded to share the work" $replicas) -}}
{{- end -}}
{{- if lt $replicas 1 -}}
{{- fail (printf "replicas %d: want at least 1" $replicas) -}}
{{- end -}}
{{- $replicas -}}
{{- end -}}
