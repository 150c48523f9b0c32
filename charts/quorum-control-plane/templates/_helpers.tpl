{{/* Name of the objects of this release. */}}
{{- define "qcp.fullname" -}}
{{- printf "quorum-manager-%s" .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the manager's pods. */}}
{{- define "qcp.selectorLabels" -}}
app.kubernetes.io/name: quorum-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels every object of the chart carries. */}}
{{- define "qcp.labels" -}}
{{ include "qcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
