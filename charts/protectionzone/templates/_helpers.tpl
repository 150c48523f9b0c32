{{/*
protectionzone.fullname prefixes the names of the release's own objects (the
zone webhook's Deployment, ServiceAccount, Service, Secret, roles and webhook
configuration): fullnameOverride, else nameOverride, else "siterecovery". The
user roles (siterecovery-viewer, -operator, -disaster-operator, -admin), the
confirmation policies and siterecovery-zone-webhook-reader keep their names:
they are the product's interface, named by the runbooks, by RoleBindings users
create and by every quorum-control-plane release.
*/}}
{{- define "protectionzone.fullname" -}}
{{- .Values.fullnameOverride | default .Values.nameOverride | default "siterecovery" | trunc 48 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the zone webhook's objects. */}}
{{- define "protectionzone.zoneWebhook" -}}
{{- printf "%s-zone-webhook" (include "protectionzone.fullname" .) -}}
{{- end -}}

{{/* Labels every object of the chart carries. */}}
{{- define "protectionzone.labels" -}}
app.kubernetes.io/name: protectionzone
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
protectionzone.securityContext renders .user (a podSecurityContext or
securityContext value) over .required, the settings the chart's pods run with.
A user value may add keys but not change a required one: the chart fails,
naming the key and .why, rather than install a weaker pod silently.
*/}}
{{- define "protectionzone.securityContext" -}}
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
