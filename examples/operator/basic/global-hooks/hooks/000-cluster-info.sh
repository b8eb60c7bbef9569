#!/bin/sh
# A global hook: on start-up it sets global values every module sees.
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
onStartup: 10
CFG
  exit 0
fi
cat > "$VALUES_JSON_PATCH_PATH" <<'PATCH'
[{"op":"add","path":"/global/discovery","value":{"clusterDomain":"cluster.local"}}]
PATCH
