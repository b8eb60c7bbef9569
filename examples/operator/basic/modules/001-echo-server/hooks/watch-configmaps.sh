#!/bin/sh
# A module hook watching objects: before Helm and on every change of a
# ConfigMap labelled echo=true it stores their names in the module's values.
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
beforeHelm: 10
kubernetes:
- name: configmaps
  apiVersion: v1
  kind: ConfigMap
  labelSelector:
    matchLabels:
      echo: "true"
  jqFilter: .metadata.name
  includeSnapshotsFrom: [configmaps]
CFG
  exit 0
fi
# The snapshot's filter results are the names, JSON strings, one per object.
names=$(grep -o '"filterResult":"[^"]*"' "$BINDING_CONTEXT_PATH" | sed 's/.*:"\(.*\)"/"\1"/' | sort -u | paste -sd, -)
printf '[{"op":"add","path":"/echoServer/watchedConfigMaps","value":[%s]}]\n' "$names" > "$VALUES_JSON_PATCH_PATH"
