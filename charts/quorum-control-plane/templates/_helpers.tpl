{{/*
qcp.fullname names the manager's objects of this release: fullnameOverride,
else <nameOverride or quorum-manager>-<DR namespace>. Its selector label
app.kubernetes.io/name stays quorum-manager: ServiceMonitors, the CLI's gather
and the runbooks select the manager's pods by it (instance tells releases apart).
*/}}
{{- define "qcp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" (.Values.nameOverride | default "quorum-manager") .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
qcp.componentName names a release's object of another component (.component):
siterecovery-<component>-<DR namespace> by default, as cluster-scoped names
must differ per DR namespace; <fullname>-<component> with nameOverride or
fullnameOverride (a fullnameOverride must then differ per DR namespace).
*/}}
{{- define "qcp.componentName" -}}
{{- if or .root.Values.fullnameOverride .root.Values.nameOverride -}}
{{- printf "%s-%s" (include "qcp.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "siterecovery-%s-%s" .component .root.Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
qcp.securityContext renders .user (a podSecurityContext or securityContext
value) over .required, the settings the chart's pods run with. A user value
may add keys but not change a required one, nor make a container privileged:
the chart fails, naming the key and .why, rather than install a weaker pod
silently.
*/}}
{{- define "qcp.securityContext" -}}
{{- $user := .user | default dict -}}
{{- range $k, $v := .required -}}
{{- if and (hasKey $user $k) (not (deepEqual (index $user $k) $v)) -}}
{{- fail (printf "%s.%s: must stay %s (%s)" $.path $k (toJson $v) $.why) -}}
{{- end -}}
{{- end -}}
{{- if index $user "privileged" -}}
{{- fail (printf "%s.privileged: must stay unset or false (%s)" .path .why) -}}
{{- end -}}
{{- toYaml (merge (deepCopy $user) .required) -}}
{{- end -}}

{{/* The pod and container security contexts every pod of the chart runs with. */}}
{{- define "qcp.podSecurity" -}}
{{- include "qcp.securityContext" (dict "user" .user "path" .path "why" "the chart's pods run as non-root under the runtime's seccomp profile, as PodSecurity restricted asks" "required" (dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault"))) -}}
{{- end -}}
{{- define "qcp.containerSecurity" -}}
{{- include "qcp.securityContext" (dict "user" .user "path" .path "why" "the chart's containers need no privilege, capability or write to their image" "required" (dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL")))) -}}
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
{{- include "qcp.componentName" (dict "root" . "component" "quorum") -}}
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
