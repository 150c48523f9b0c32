{{/*
wcp.fullname prefixes the release's object names: fullnameOverride, else
nameOverride, else "siterecovery".
*/}}
{{- define "wcp.fullname" -}}
{{- .Values.fullnameOverride | default .Values.nameOverride | default "siterecovery" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/*
wcp.name names a namespaced object of component .component: <fullname>-<component>
with nameOverride or fullnameOverride, else the component's own name
(pg-controller, drbd-node-agent), as installs before these values had it. The
pods' app.kubernetes.io/name label stays the component's: ServiceMonitors, the
NetworkPolicy and `kubectl siterecovery gather` select pods by it.
*/}}
{{- define "wcp.name" -}}
{{- if or .root.Values.fullnameOverride .root.Values.nameOverride -}}
{{- printf "%s-%s" (include "wcp.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- .component -}}
{{- end -}}
{{- end -}}

{{/* wcp.clusterName names a cluster-scoped object (or one outside the release namespace): <fullname>-<component>. */}}
{{- define "wcp.clusterName" -}}
{{- printf "%s-%s" (include "wcp.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The ServiceAccount and workload names of pg-controller and of the agent. */}}
{{- define "wcp.pgController" -}}
{{- include "wcp.name" (dict "root" . "component" "pg-controller") -}}
{{- end -}}
{{- define "wcp.agent" -}}
{{- include "wcp.name" (dict "root" . "component" "drbd-node-agent") -}}
{{- end -}}

{{/*
wcp.securityContext renders .user (a podSecurityContext or securityContext
value) over .required, the settings the chart's pods run with. A user value
may add keys but not change a required one, nor make a container privileged
that the chart does not: the chart fails, naming the key and .why, rather than
install a weaker pod silently.
*/}}
{{- define "wcp.securityContext" -}}
{{- $user := .user | default dict -}}
{{- range $k, $v := .required -}}
{{- if and (hasKey $user $k) (not (deepEqual (index $user $k) $v)) -}}
{{- fail (printf "%s.%s: must stay %s (%s)" $.path $k (toJson $v) $.why) -}}
{{- end -}}
{{- end -}}
{{- if and (index $user "privileged") (not (index .required "privileged")) -}}
{{- fail (printf "%s.privileged: must stay unset or false (%s)" .path .why) -}}
{{- end -}}
{{- toYaml (merge (deepCopy $user) .required) -}}
{{- end -}}

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
{{- include "wcp.clusterName" (dict "root" . "component" (printf "workload-%s" .Release.Namespace)) -}}
{{- end -}}

{{/* Identities the workload webhooks let through for every object: siterecovery's own service accounts, then the configured ones. The quorum-manager of each DR namespace passes only for its own objects (--admission-dr-namespaces). */}}
{{- define "wcp.admissionUsers" -}}
{{- $users := list (printf "system:serviceaccount:%s:%s" .Release.Namespace (include "wcp.pgController" .)) (printf "system:serviceaccount:%s:%s" .Release.Namespace (include "wcp.agent" .)) -}}
{{- join "," (concat $users .Values.webhooks.allowedUsers) -}}
{{- end -}}

{{/* The application namespaces each DR namespace protects (quorumAccess.applicationNamespaces), as JSON: every DR namespace of quorumAccess.drNamespaces to its list, empty when none is given. A key that is no DR namespace of this cluster fails the render. */}}
{{- define "wcp.applicationNamespaces" -}}
{{- $qa := .Values.quorumAccess -}}
{{- $given := $qa.applicationNamespaces | default dict -}}
{{- range $dr, $_ := $given -}}
{{- if not (has $dr ($qa.drNamespaces | default list)) -}}
{{- fail (printf "quorumAccess.applicationNamespaces: %q is not one of quorumAccess.drNamespaces" $dr) -}}
{{- end -}}
{{- end -}}
{{- $out := dict -}}
{{- range $dr := $qa.drNamespaces | default list -}}
{{- $_ := set $out $dr (get $given $dr | default list) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* pg-controller's --admission-application-namespaces: <DR namespace>/<application namespace> pairs, comma-separated. */}}
{{- define "wcp.applicationNamespacePairs" -}}
{{- $pairs := list -}}
{{- range $dr, $apps := include "wcp.applicationNamespaces" . | fromJson -}}
{{- range $app := $apps -}}
{{- $pairs = append $pairs (printf "%s/%s" $dr $app) -}}
{{- end -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
