#!/bin/sh
# The clusters plugin: a fixed list, printed as JSON. The request is on
# stdin; this plugin does not need it.
cat <<'JSON'
[
  {"name": "prod-eu", "server": "https://prod-eu.k8s.example.com", "tier": "prod"},
  {"name": "prod-us", "server": "https://prod-us.k8s.example.com", "tier": "prod"},
  {"name": "staging", "server": "https://staging.k8s.example.com", "tier": "staging"}
]
JSON
