{{/*
Chart name, overridable.
*/}}
{{- define "drainguard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, used for every namespaced object. Truncated to 63 characters (DNS label);
the release name is not repeated when it already contains the chart name.
*/}}
{{- define "drainguard.fullname" -}}
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

{{- define "drainguard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: immutable on a Deployment, so they never include the version.
*/}}
{{- define "drainguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "drainguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "drainguard.labels" -}}
helm.sh/chart: {{ include "drainguard.chart" . }}
{{ include "drainguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: drainguard
{{- end }}

{{- define "drainguard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "drainguard.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The webhook's image reference (the server and `helm test`'s check): by digest when one is given, else
by tag (default: the chart's appVersion).
*/}}
{{- define "drainguard.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The drain program's image, which the webhook writes into Envoy pods (the installer's image, or the image
volume's reference): tag and digest when the digest is known (a released chart package), else the tag.
*/}}
{{- define "drainguard.drainImage" -}}
{{- $reference := printf "%s:%s" .Values.drainImage.repository (default .Chart.AppVersion .Values.drainImage.tag) }}
{{- if .Values.drainImage.digest }}
{{- printf "%s@%s" $reference .Values.drainImage.digest }}
{{- else }}
{{- $reference }}
{{- end }}
{{- end }}

{{/*
Cluster-scoped MutatingWebhookConfiguration name: the fullname alone could collide with a release of
the same name in another namespace, so the namespace is part of it.
*/}}
{{- define "drainguard.webhookConfigName" -}}
{{- printf "%s-%s" (include "drainguard.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/*
`drainguard check` as the helm test runs it: the name of its pod, ServiceAccount, Role and RoleBinding
(tests/check.yaml, check-rbac.yaml).
*/}}
{{- define "drainguard.check.name" -}}
{{- printf "%s-check" (include "drainguard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Secret holding the serving certificate, per TLS mode.
*/}}
{{- define "drainguard.tlsSecretName" -}}
{{- if eq .Values.tls.mode "secret" }}
{{- required "tls.secret.name is required when tls.mode is secret" .Values.tls.secret.name }}
{{- else if eq .Values.tls.mode "certManager" }}
{{- printf "%s-serving-cert" (include "drainguard.fullname" .) }}
{{- else }}
{{- default (printf "%s-tls" (include "drainguard.fullname" .)) .Values.tls.self.secretName }}
{{- end }}
{{- end }}

{{- define "drainguard.certManager.servingCertName" -}}
{{- printf "%s-serving" (include "drainguard.fullname" .) }}
{{- end }}

{{- define "drainguard.certManager.caName" -}}
{{- printf "%s-ca" (include "drainguard.fullname" .) }}
{{- end }}

{{/*
Only self mode talks to the Kubernetes API (its Secret and the caBundle): the other modes read
mounted files and get neither a token nor RBAC.
*/}}
{{- define "drainguard.needsApiAccess" -}}
{{- if eq .Values.tls.mode "self" }}true{{ end }}
{{- end }}

{{/*
drainguard's config file: .Values.config with the drain program's image defaulting to drainImage, the
image released with this chart. Image volumes need a control plane whose API server keeps
`volumes[].image` (feature gate ImageVolume, on by default from 1.35, GA from 1.36): an API server with
the gate off drops the volume and Envoy's mount of it silently after the webhook answered, and the pod
would run a preStop that points at nothing (docs/configuration.md). So image-volume is refused below 1.35.
*/}}
{{- define "drainguard.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $installer := $config.installer }}
{{- if not $installer.image }}
{{- $_ := set $installer "image" (include "drainguard.drainImage" .) }}
{{- end }}
{{- if and (eq (toString $installer.delivery) "image-volume") (not (semverCompare ">=1.35.0-0" .Capabilities.KubeVersion.Version)) }}
{{- fail (printf "config.installer.delivery image-volume needs Kubernetes 1.35 or newer (this cluster: %s): below it the API server drops image volumes unless the ImageVolume feature gate was turned on; use copy (helm template: pass --kube-version)" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
Whether the webhook gets matchConditions: `auto` renders them for Kubernetes 1.30 or newer (where
they are GA; helm knows the cluster's version on install, `helm template` needs --kube-version);
true/false decide regardless.
*/}}
{{- define "drainguard.matchConditions.enabled" -}}
{{- $setting := toString .Values.webhook.matchConditions }}
{{- if eq $setting "auto" }}
{{- semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version }}
{{- else }}
{{- eq $setting "true" }}
{{- end }}
{{- end }}

{{/*
The CEL expression: true for a pod drainguard may change or deny, false for every other pod.
drainguard acts on a pod only when one of its containers may be Envoy (named config.envoyContainerName,
running an image of config.envoyImageRepositories at any registry or mirror prefix, with any tag or
digest, or whose command, or without one its first argument, runs the envoy binary), or when it
carries a drainguard.io/ annotation (which may name the Envoy container, opt out, or be invalid and
so be denied). Any other pod is skipped by drainguard anyway; the core then decides on evidence.
*/}}
{{- define "drainguard.matchConditions.expression" -}}
{{- $repositories := list }}
{{- range .Values.config.envoyImageRepositories }}
{{- $repositories = append $repositories (regexQuoteMeta .) }}
{{- end }}
{{- $imagePattern := printf "^(.*/)?(%s)(:[^/@]*)?(@.*)?$" (join "|" $repositories) }}
{{- $program := "^([^\\s]*/)?envoy(\\s|$)" }}
{{- printf "object.spec.containers.exists(c, c.name == '%s' || (has(c.image) && c.image.matches(r'%s')) || ((has(c.command) && size(c.command) > 0) ? c.command[0].matches(r'%s') : (has(c.args) && size(c.args) > 0 && c.args[0].matches(r'%s')))) || (has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.startsWith('drainguard.io/')))" .Values.config.envoyContainerName $imagePattern $program $program }}
{{- end }}

{{/*
The memory limit (MiB) of the server for its limits: the formula of src/server/sizing.ts (a test
keeps them equal), explained in values.yaml under `resources`.
*/}}
{{- define "drainguard.memoryLimitMiB" -}}
{{- $server := .Values.server }}
{{- $mib := 1048576 }}
{{- $bodyMiB := div (add (int64 $server.maxBodyBytes) (sub $mib 1)) $mib }}
{{- $workerHeap := add 16 (div (add (mul 24 (int64 $server.maxBodyBytes)) (sub $mib 1)) $mib) }}
{{- $connections := div (add (mul (int64 $server.maxConnections) 192) 1023) 1024 }}
{{- $small := div (add (mul (int64 $server.maxConcurrentSmallAdmissions) 512) 1023) 1024 }}
{{- add 138 $connections $small (mul (int64 $server.maxConcurrentAdmissions) (add $workerHeap 24 $bodyMiB)) }}
{{- end }}

{{/*
resources, with the memory limit derived from the server's limits unless one is given.
*/}}
{{- define "drainguard.resources" -}}
{{- $resources := deepCopy .Values.resources }}
{{- $limits := default dict $resources.limits }}
{{- if not (hasKey $limits "memory") }}
{{- $_ := set $limits "memory" (printf "%sMi" (include "drainguard.memoryLimitMiB" .)) }}
{{- end }}
{{- $_ := set $resources "limits" $limits }}
{{- toYaml $resources }}
{{- end }}

{{/*
The reporter (`drainguard report`): its own name, selector labels and ServiceAccount. Its
app.kubernetes.io/name differs from the webhook's, so no selector of the webhook (Deployment, Service,
PodDisruptionBudget, NetworkPolicy) ever selects a reporter pod, and the other way round.
*/}}
{{- define "drainguard.reporter.fullname" -}}
{{- printf "%s-reporter" (include "drainguard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "drainguard.reporter.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-reporter" (include "drainguard.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "drainguard.reporter.labels" -}}
helm.sh/chart: {{ include "drainguard.chart" . }}
{{ include "drainguard.reporter.selectorLabels" . }}
app.kubernetes.io/component: reporter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: drainguard
{{- end }}

{{- define "drainguard.reporter.serviceAccountName" -}}
{{- if .Values.report.serviceAccount.create }}
{{- default (include "drainguard.reporter.fullname" .) .Values.report.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.report.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Cluster-scoped name of the reporter's ClusterRole and binding: the namespace is part of it, as for
the webhook configuration, so two releases of the same name in different namespaces never collide.
*/}}
{{- define "drainguard.reporter.clusterRoleName" -}}
{{- printf "%s-%s" (include "drainguard.reporter.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/*
The Node runtime's environment of a container from its `runtime` values (server.runtime,
report.runtime; values.yaml says what each setting does and how it was measured), with more
NODE_OPTIONS first when given: (dict "runtime" .Values.server.runtime "nodeOptions" "").
*/}}
{{- define "drainguard.runtimeEnv" -}}
{{- $options := list }}
{{- with .nodeOptions }}{{ $options = append $options . }}{{ end }}
{{- $options = append $options (printf "--max-semi-space-size=%d" (int .runtime.semiSpaceMiB)) }}
{{- $options = append $options (printf "--v8-pool-size=%d" (int .runtime.v8PoolSize)) }}
- name: NODE_OPTIONS
  value: {{ join " " $options | quote }}
- name: MALLOC_MMAP_THRESHOLD_
  value: {{ int64 .runtime.mallocMmapThresholdBytes | quote }}
{{- end }}

{{/*
Seconds of a tls.self duration (whole hours, minutes or seconds, as values.schema.json allows).
*/}}
{{- define "drainguard.self.seconds" -}}
{{- $unit := dict "h" 3600 "m" 60 "s" 1 }}
{{- mul (regexFind "^[0-9]+" .) (get $unit (regexFind "[hms]$" .)) }}
{{- end }}
