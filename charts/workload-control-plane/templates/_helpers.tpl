{{/* Labels every object of the chart carries. */}}
{{- define "wcp.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: siterecovery
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* image renders repository:tag with the appVersion as default tag, and @digest when set. */}}
{{- define "wcp.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion) -}}
{{- with .image.digest }}@{{ . }}{{ end -}}
{{- end -}}

{{/*
wcp.generatedRules renders the rules of the role of kind .kind (and, when
given, of namespace .namespace) in .file, a copy of the role controller-gen
generates from the controllers' +kubebuilder:rbac markers (make generate writes
it). The chart keeps its own role names, namespaces and bindings; only the
rules come from the markers.
*/}}
{{- define "wcp.generatedRules" -}}
{{- $found := false -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $role := fromYaml $doc -}}
{{- $ns := "" -}}
{{- with $role.metadata }}{{ $ns = .namespace | default "" }}{{ end -}}
{{- if and $role.rules (eq ($role.kind | default "") $.kind) (or (not $.namespace) (eq $ns $.namespace)) -}}
{{- $found = true -}}
{{- toYaml $role.rules -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "%s holds no %s %s with rules; run make generate" .file .kind (.namespace | default "")) -}}
{{- end -}}
{{- end -}}

{{/* Name of the release's ValidatingWebhookConfiguration. */}}
{{- define "wcp.webhookConfiguration" -}}
{{- printf "siterecovery-workload-%s" .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Identities the workload webhooks let through for every object: siterecovery's own service accounts, then the configured ones. The quorum-manager of each DR namespace passes only for its own objects (--admission-dr-namespaces). */}}
{{- define "wcp.admissionUsers" -}}
{{- $users := list (printf "system:serviceaccount:%s:pg-controller" .Release.Namespace) (printf "system:serviceaccount:%s:drbd-node-agent" .Release.Namespace) -}}
{{- join "," (concat $users .Values.webhooks.allowedUsers) -}}
{{- end -}}
