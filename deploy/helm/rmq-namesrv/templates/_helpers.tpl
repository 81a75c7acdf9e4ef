{{/*
Names. The StatefulSet's name is at most 52 characters: its pods' controller-revision-hash label
is "<name>-<10 characters>" and must fit in 63.
*/}}
{{- define "rmq-namesrv.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "rmq-namesrv.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rmq-namesrv.headless" -}}
{{- printf "%s-headless" (include "rmq-namesrv.fullname" .) }}
{{- end }}

{{- define "rmq-namesrv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rmq-namesrv.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rmq-namesrv.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rmq-namesrv.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: namesrv
{{- end }}

{{- define "rmq-namesrv.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* host:port for a listen address (IPv6 hosts in brackets). */}}
{{- define "rmq-namesrv.listen" -}}
{{- $host := index . 0 }}{{ $port := index . 1 }}
{{- if contains ":" $host }}{{ printf "[%s]:%d" $host (int $port) }}{{ else }}{{ printf "%s:%d" $host (int $port) }}{{ end }}
{{- end }}

{{/* The stable remoting address of every pod, ";"-separated (namesrvAddr). */}}
{{- define "rmq-namesrv.namesrvAddr" -}}
{{- $full := include "rmq-namesrv.fullname" . }}
{{- $headless := include "rmq-namesrv.headless" . }}
{{- $addrs := list }}
{{- range $i := until (int .Values.replicaCount) }}
{{- $addrs = append $addrs (printf "%s-%d.%s.%s.svc.%s:%d" $full $i $headless $.Release.Namespace $.Values.clusterDomain (int $.Values.ports.remoting)) }}
{{- end }}
{{- join ";" $addrs }}
{{- end }}

{{/*
The server's defaults the chart relies on (config.toml; deploy/check.sh compares them with the
server's own, so a changed default fails the check rather than the pods).
*/}}
{{- define "rmq-namesrv.serverDefaults" -}}
server:
  shutdown_gracefully: false
  shutdown_wait: 30s
  shutdown_grace: 5s
tls:
  mode: permissive
  need_client_auth: none
{{- end }}

{{/* The HTTP port's stop: open requests get this long (src/http/mod.rs HTTP_SHUTDOWN). */}}
{{- define "rmq-namesrv.httpShutdownSeconds" -}}2{{- end }}

{{/*
A humantime duration in whole seconds, rounded up ("30s", "2m", "1m30s", "500ms", "1h"); empty
when it has another form (the render-time check is then skipped; deploy/check.sh still runs).
*/}}
{{- define "rmq-namesrv.seconds" -}}
{{- $text := toString . | replace " " "" }}
{{- $parts := regexFindAll "[0-9]+(ms|s|min|m|h)" $text -1 }}
{{- if and $parts (eq (join "" $parts) $text) }}
{{- $ms := 0 }}
{{- range $part := $parts }}
{{- $n := regexFind "^[0-9]+" $part | atoi }}
{{- $unit := trimPrefix (regexFind "^[0-9]+" $part) $part }}
{{- $ms = add $ms (mul $n (get (dict "ms" 1 "s" 1000 "m" 60000 "min" 60000 "h" 3600000) $unit)) }}
{{- end }}
{{- div (add $ms 999) 1000 }}
{{- end }}
{{- end }}

{{/*
The configuration as a map: the chart's settings, then .Values.config over them.
*/}}
{{- define "rmq-namesrv.config" -}}
{{- $v := .Values }}
{{- $cfg := dict }}
{{- $server := dict "listen" (include "rmq-namesrv.listen" (list $v.bindAddress $v.ports.remoting)) }}
{{- $http := dict "listen" (include "rmq-namesrv.listen" (list $v.bindAddress $v.ports.http)) }}
{{- if $v.addressServer.dns }}
{{- $_ := set $http "nsaddr_dns" (printf "%s.%s.svc.%s:%d" (include "rmq-namesrv.headless" .) .Release.Namespace $v.clusterDomain (int $v.ports.remoting)) }}
{{- else }}
{{- $_ := set $http "nsaddr" (include "rmq-namesrv.namesrvAddr" .) }}
{{- end }}
{{- $_ := set $cfg "server" $server }}
{{- $_ := set $cfg "http" $http }}
{{- $tls := dict }}
{{- if $v.tls.mode }}{{ $_ := set $tls "mode" $v.tls.mode }}{{ end }}
{{- if $v.tls.secretName }}
{{- $_ := set $tls "cert_path" (printf "/etc/rmq-namesrv-tls/%s" $v.tls.certFile) }}
{{- $_ := set $tls "key_path" (printf "/etc/rmq-namesrv-tls/%s" $v.tls.keyFile) }}
{{- if ne $v.tls.clientAuth "none" }}
{{- $_ := set $tls "need_client_auth" $v.tls.clientAuth }}
{{- $_ := set $tls "auth_client" true }}
{{- $_ := set $tls "trust_cert_path" (printf "/etc/rmq-namesrv-tls/%s" $v.tls.caFile) }}
{{- end }}
{{- end }}
{{- if $tls }}{{ $_ := set $cfg "tls" $tls }}{{ end }}
{{- $access := dict }}
{{- if $v.access.profile }}{{ $_ := set $access "profile" $v.access.profile }}{{ end }}
{{- if $v.access.aclSecretName }}
{{- $_ := set $access "acl_file" (printf "/etc/rmq-namesrv-acl/%s" $v.access.aclFile) }}
{{- end }}
{{- if $access }}{{ $_ := set $cfg "access" $access }}{{ end }}
{{- $etcd := join "," $v.etcd.endpoints }}
{{- if $v.kvOnEtcd }}
{{- $_ := set $cfg "kv" (dict "backend" "etcd" "etcd_endpoints" $etcd) }}
{{- end }}
{{- if $v.controller.enabled }}
{{- $controller := dict "enabled" true }}
{{- if $etcd }}{{ $_ := set $controller "etcd_endpoints" $etcd }}{{ end }}
{{- $_ := set $cfg "controller" $controller }}
{{- end }}
{{- toYaml (mustMergeOverwrite $cfg (deepCopy (default dict $v.config))) }}
{{- end }}

{{/* A TOML value: strings quoted (a JSON string is a TOML basic string), lists inline. */}}
{{- define "rmq-namesrv.tomlValue" -}}
{{- if kindIs "bool" . }}{{ . }}{{ else }}{{ toJson . }}{{ end }}
{{- end }}

{{/* A TOML table and its sub-tables: {prefix, table}. */}}
{{- define "rmq-namesrv.tomlTable" -}}
{{- $prefix := .prefix }}
{{- $table := .table }}
{{- range $key := keys $table | sortAlpha }}
{{- $value := index $table $key }}
{{- if and (not (kindIs "map" $value)) (not (kindIs "invalid" $value)) }}
{{ $key }} = {{ include "rmq-namesrv.tomlValue" $value }}
{{- end }}
{{- end }}
{{- range $key := keys $table | sortAlpha }}
{{- $value := index $table $key }}
{{- if kindIs "map" $value }}
{{- $name := $key }}
{{- if $prefix }}{{ $name = printf "%s.%s" $prefix $key }}{{ end }}

[{{ $name }}]
{{- include "rmq-namesrv.tomlTable" (dict "prefix" $name "table" $value) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The drain the grace period must cover, in seconds, from the rendered configuration; empty when a
duration has a form the chart does not read.
*/}}
{{- define "rmq-namesrv.stopSeconds" -}}
{{- $defaults := include "rmq-namesrv.serverDefaults" . | fromYaml }}
{{- $server := mustMergeOverwrite (deepCopy $defaults.server) (default dict (include "rmq-namesrv.config" . | fromYaml).server) }}
{{- $wait := include "rmq-namesrv.seconds" $server.shutdown_wait }}
{{- $grace := include "rmq-namesrv.seconds" $server.shutdown_grace }}
{{- if and $wait $grace }}
{{- $total := add (int $grace) (include "rmq-namesrv.httpShutdownSeconds" . | int) (int .Values.preStopSleepSeconds) }}
{{- if $server.shutdown_gracefully }}{{ $total = add $total (int $wait) }}{{ end }}
{{- $total }}
{{- end }}
{{- end }}

{{/* Probe scheme: the HTTP port follows tls.mode; enforcing is HTTPS only. */}}
{{- define "rmq-namesrv.scheme" -}}
{{- $defaults := include "rmq-namesrv.serverDefaults" . | fromYaml }}
{{- $tls := mustMergeOverwrite (deepCopy $defaults.tls) (default dict (include "rmq-namesrv.config" . | fromYaml).tls) }}
{{- if eq $tls.mode "enforcing" }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* Render-time checks of values that would give pods that cannot work. */}}
{{- define "rmq-namesrv.validate" -}}
{{- $v := .Values }}
{{- if and (or $v.kvOnEtcd (and $v.controller.enabled (gt (int $v.replicaCount) 1))) (not $v.etcd.endpoints) }}
{{- fail "etcd.endpoints is required with kvOnEtcd, and with controller.enabled and more than one replica (each controller would keep a state of its own and could elect a second master)" }}
{{- end }}
{{- if not (has $v.tls.clientAuth (list "none" "optional" "require")) }}
{{- fail (printf "tls.clientAuth must be none, optional or require, not %q" $v.tls.clientAuth) }}
{{- end }}
{{- if and (ne $v.tls.clientAuth "none") (not $v.tls.secretName) }}
{{- fail "tls.clientAuth needs tls.secretName (the CA is read from that Secret's tls.caFile)" }}
{{- end }}
{{- $defaults := include "rmq-namesrv.serverDefaults" . | fromYaml }}
{{- $tls := mustMergeOverwrite (deepCopy $defaults.tls) (default dict (include "rmq-namesrv.config" . | fromYaml).tls) }}
{{- if and (eq $tls.mode "enforcing") (eq $tls.need_client_auth "require") }}
{{- fail "tls.mode enforcing with client certificates required: the HTTP port would need one too, and the kubelet's probes cannot present one (use tls.clientAuth optional, or tls.mode permissive: the probes then use plain HTTP)" }}
{{- end }}
{{- if not (has $v.podAntiAffinity (list "soft" "hard" "none")) }}
{{- fail (printf "podAntiAffinity must be soft, hard or none, not %q" $v.podAntiAffinity) }}
{{- end }}
{{- $stop := include "rmq-namesrv.stopSeconds" . }}
{{- if and $stop (le (int $v.terminationGracePeriodSeconds) (int $stop)) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + the server's drain (shutdown_wait when shutdown_gracefully) + shutdown_grace + the HTTP port's 2 s: %s s" (int $v.terminationGracePeriodSeconds) $stop) }}
{{- end }}
{{- end }}
