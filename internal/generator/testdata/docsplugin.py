#!/usr/bin/env python3
"""A generator plugin as Argo CD's documentation teaches users to write one:
Python's http.server speaking HTTP/1.0, the token read from a file and
stripped, the request read by its Content-Length, answers without a
Content-Type or Content-Length, and a wrong token answered with a bare 403
after which the handler goes on (the documented example does not return).

Usage: docsplugin.py TOKEN_FILE
Listens on 127.0.0.1 on a free port and prints the port on stdout.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

with open(sys.argv[1]) as f:
    TOKEN = f.read().strip()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=None):
        self.send_response(status)
        self.end_headers()
        if body is not None:
            self.wfile.write(json.dumps(body).encode("UTF-8"))

    def do_POST(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.answer(403)
        if self.path != "/api/v1/getparams.execute":
            self.answer(404)
            return
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length"))))
        params = request["input"].get("parameters", {})
        sets = [
            {"app": request["applicationSetName"], "env": env, "replicas": 3, "tags": {"tier": params.get("tier", "none")}}
            for env in params.get("envs", ["dev"])
        ]
        self.answer(200, {"output": {"parameters": sets}})


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
