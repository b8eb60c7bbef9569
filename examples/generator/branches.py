#!/usr/bin/env python3
"""The branches plugin: the open pull requests of a repository that carry all
the requested labels, one parameter set each.

strata runs it once per request (unless its cache answers): the request is
on stdin, {"applicationSetName": ..., "input": {"parameters": {...}}}, and
the parameter sets go to stdout as a JSON list. A real plugin would ask the
Git host's API; this one reads pulls.json next to it. Exiting non-zero (with
a message on stderr) makes the server answer an error, and the
ApplicationSet controller then leaves the existing Applications alone.
"""

import json
import os
import sys

request = json.load(sys.stdin)
params = request.get("input", {}).get("parameters", {})
repo = params.get("repo")
if not repo:
    sys.exit("input.parameters.repo is required")
wanted = set(params.get("labels", []))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pulls.json")) as f:
    pulls = json.load(f)

sets = [
    {"branch": p["branch"], "pr": p["number"], "sha": p["sha"]}
    for p in pulls.get(repo, [])
    if wanted <= set(p["labels"])
]
json.dump(sets, sys.stdout)
