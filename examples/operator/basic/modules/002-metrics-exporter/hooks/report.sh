#!/bin/sh
# A schedule hook writing metrics: every minute, and once after Helm.
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
afterHelm: 10
schedule:
- name: every-minute
  crontab: "* * * * *"
  allowFailure: true
CFG
  exit 0
fi
echo '{"name":"exporter_reports_total","action":"add","value":1,"labels":{"source":"report.sh"}}' >> "$METRICS_PATH"
