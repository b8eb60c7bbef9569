{{/* The labels of every object: the component's name and Helm's. */}}
{{- define "strata.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: {{ .partOf | default "strata" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The selector labels of a component's pods. */}}
{{- define "strata.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* strata's image reference. */}}
{{- define "strata.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end }}

{{/* The arguments of strata's image that copy the strata binary to the
path given (the init container of the operator; deploy/cmp/install-binary
runs the same for the plugin sidecar). */}}
{{- define "strata.installBinaryArgs" -}}
[copy-self, {{ . }}]
{{- end }}

{{/* The memory contract: STRATA_MEMORY_LIMIT holds the container's memory
limit, from which strata sizes its budgets. */}}
{{- define "strata.memoryEnv" -}}
- name: STRATA_MEMORY_LIMIT
  valueFrom:
    resourceFieldRef:
      containerName: {{ . }}
      resource: limits.memory
{{- end }}

{{/* The generator's namespace. */}}
{{- define "strata.generatorNamespace" -}}
{{ .Values.generator.namespace | default .Release.Namespace }}
{{- end }}

{{/* The generator token's Secret. */}}
{{- define "strata.generatorTokenSecret" -}}
{{ .Values.generator.token.existingSecret | default "strata-generator-token" }}
{{- end }}

{{/* A PodDisruptionBudget for a component with more than one replica.
Arguments: root, name, component values. */}}
{{- define "strata.pdb" -}}
{{- if gt (int .values.replicas) 1 }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "strata.labels" . | nindent 4 }}
spec:
  minAvailable: {{ .values.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      {{- include "strata.selector" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* Scheduling of a component's pods. */}}
{{- define "strata.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .values.affinity }}
affinity:
  {{- toYaml .values.affinity | nindent 2 }}
{{- else if gt (int .values.replicas) 1 }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "strata.selector" . | nindent 14 }}
{{- end }}
{{- end }}
