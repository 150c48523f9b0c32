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

{{/*
qcp.generatedRules renders the rules of the role of kind .kind in .file, a
copy of the role controller-gen generates from the controllers'
+kubebuilder:rbac markers (make generate writes it). The chart keeps its own
role names, namespaces and bindings; only the rules come from the markers.
*/}}
{{- define "qcp.generatedRules" -}}
{{- $found := false -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $role := fromYaml $doc -}}
{{- if and $role.rules (eq ($role.kind | default "") $.kind) -}}
{{- $found = true -}}
{{- toYaml $role.rules -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "%s holds no %s with rules; run make generate" .file .kind) -}}
{{- end -}}
{{- end -}}

{{/* Name of this release's ValidatingWebhookConfiguration (cluster-scoped, so it names the DR namespace). */}}
{{- define "qcp.webhookConfiguration" -}}
{{- printf "siterecovery-quorum-%s" .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* qcp.image renders repository:tag with the appVersion as default tag, and @digest when set. */}}
{{- define "qcp.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion) -}}
{{- with .image.digest }}@{{ . }}{{ end -}}
{{- end -}}

{{/* qcp.quotedList renders a list of strings as CEL string literals: 'a', 'b'. */}}
{{- define "qcp.quotedList" -}}
{{- $out := list -}}
{{- range . }}{{ $out = append $out (printf "'%s'" .) }}{{ end -}}
{{- join ", " $out -}}
{{- end -}}
