{{/* The name of every object: the release name, or nameOverride. */}}
{{- define "mcp-edge.name" -}}
{{- default .Release.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What selects the pods of this release. */}}
{{- define "mcp-edge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-edge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mcp-edge.labels" -}}
{{ include "mcp-edge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mcp-edge.image" -}}
{{- printf "%s:%s" .repository (default $.appVersion .tag) -}}
{{- end -}}

{{/* The environment variable holding one API key hash: tenant and Secret key, upper case, [A-Z0-9_]. */}}
{{- define "mcp-edge.keyEnv" -}}
{{- regexReplaceAll "[^A-Z0-9_]" (printf "MCP_EDGE_KEY_%s_%s" (index . 0) (index . 1) | upper) "_" -}}
{{- end -}}

{{/*
A tenant header resolver of config.tenancy.resolve must list the peers it believes: rendering stops on one
without them (mcp-edge would refuse the file too, but only once the pod starts). `--set 'x={}'` makes [""].
*/}}
{{- define "mcp-edge.checkTenantHeaders" -}}
{{- $tenancy := default (dict) .tenancy -}}
{{- range $index, $item := default (list) $tenancy.resolve -}}
{{- if and (kindIs "map" $item) (hasKey $item "header") -}}
{{- $proxies := $item.trustedProxies -}}
{{- if kindIs "slice" $proxies -}}{{- $proxies = compact $proxies -}}{{- end -}}
{{- if empty $proxies -}}
{{- fail (printf "config.tenancy.resolve[%d].trustedProxies: list the CIDRs of the proxies that set %s (your gateway's pods); only they are believed. Never the pod network: from there any pod could pick a tenant" $index (toString $item.header)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The config file: .Values.config, with the apiKey resolver and its tenants when apiKeys.tenants is set. */}}
{{- define "mcp-edge.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- include "mcp-edge.checkTenantHeaders" $config -}}
{{- with .Values.apiKeys.tenants -}}
{{- if not $.Values.apiKeys.secretName -}}
{{- fail "apiKeys.secretName: name the Secret that holds the hashes of apiKeys.tenants" -}}
{{- end -}}
{{- $hashes := dict -}}
{{- $tenants := default (dict) $config.tenants -}}
{{- range $tenant, $keys := . -}}
{{- $refs := list -}}
{{- range $keys -}}
{{- $refs = append $refs (printf "${%s}" (include "mcp-edge.keyEnv" (list $tenant .))) -}}
{{- end -}}
{{- $_ := set $hashes $tenant $refs -}}
{{- if not (hasKey $tenants $tenant) -}}{{- $_ := set $tenants $tenant (dict) -}}{{- end -}}
{{- end -}}
{{- $resolver := dict "apiKey" (dict "header" $.Values.apiKeys.header "bearer" $.Values.apiKeys.bearer "tenants" $hashes) -}}
{{- $tenancy := default (dict) $config.tenancy -}}
{{- $_ := set $tenancy "resolve" (prepend (default (list) $tenancy.resolve) $resolver) -}}
{{- $_ := set $config "tenancy" $tenancy -}}
{{- $_ := set $config "tenants" $tenants -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/* mcp-edge's memory limit: resources.limits.memory, else the formula of values.yaml rounded up to 64 MiB. */}}
{{- define "mcp-edge.memoryLimit" -}}
{{- with .Values.resources.limits.memory -}}
{{- . -}}
{{- else -}}
{{- $m := .Values.memory -}}
{{- $mib := addf $m.restingMiB $m.headroomMiB $m.largestMessageMiB (mulf $m.factor $m.messagesInFlight $m.largestMessageMiB) -}}
{{- printf "%dMi" (mul (ceil (divf $mib 64) | int) 64) -}}
{{- end -}}
{{- end -}}
