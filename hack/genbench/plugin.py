#!/usr/bin/env python3
"""An ApplicationSet generator plugin written the way Argo CD's documentation
teaches: Python's standard http.server, one request at a time, the token read
from a file, the same parameter sets for every request.

Usage: plugin.py PORT TOKEN_FILE

genbench runs it as the peer of strata's server; it answers what the bench's
command backend prints.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def load_token(path):
    with open(path) as f:
        return f.read().strip()


TOKEN = load_token(sys.argv[2])
PARAMETERS = [{"a": "b"}]


class GeneratorPlugin(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass  # the documentation's plugin logs every request; the bench keeps quiet

    def send_json(self, status, body):
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.send_json(403, {"message": "forbidden"})
            return
        if self.path != "/api/v1/getparams.execute":
            self.send_json(404, {"message": "not found"})
            return
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        _ = request.get("input", {}).get("parameters", {})
        self.send_json(200, {"output": {"parameters": PARAMETERS}})


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(sys.argv[1])), GeneratorPlugin).serve_forever()
