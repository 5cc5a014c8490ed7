#!/usr/bin/env python3
"""evil-registry.py LAYOUT CERT KEY ADDR PORT LOOPBACK_PORT LOG — a registry (distribution's HTTP
API v2, anonymous, over TLS) that lies, for tests/image/bounded_pulls.bats. It serves the image
tagged "t" of the OCI layout LAYOUT under every repository name; the repository's first component
says how it misbehaves on blob GETs:

  honest             the blob as it is
  oversize           the blob, then up to 256 MiB more, without Content-Length (chunked)
  oversize-cl        a Content-Length of 256 MiB more than the blob, then that many bytes
  redirect-loopback  307 to https://127.0.0.1:LOOPBACK_PORT/ (the same blob, served there)
  redirect-http      307 to http://<this host>/ (plain http)
  redirect-loop      307 to itself, for ever
  redirect-same      307 to /v2/honest/… on this same registry (allowed: the registry named)
  realm-loopback     401 on the manifest, naming a token realm on https://127.0.0.1:LOOPBACK_PORT/

Every request and, for the oversize modes, the bytes it managed to send before the client hung
up go to LOG, one line each. The listener on 127.0.0.1:LOOPBACK_PORT logs "loopback GET PATH":
a puller that refuses the redirect never appears there. Runs only inside the image suite's own
network namespace (run.sh): it refuses to start without CM_IMAGE_IN_NS=1."""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

if os.environ.get("CM_IMAGE_IN_NS") != "1":
    sys.exit("evil-registry.py: only inside tests/image/run.sh's network namespace")

layout, cert, key, addr, port, lport, logpath = sys.argv[1:8]
port, lport = int(port), int(lport)
log_lock = threading.Lock()


def log(line):
    with log_lock, open(logpath, "a") as f:
        f.write(line + "\n")


def blob(digest):
    if not digest.startswith("sha256:") or "/" in digest:
        return None
    p = os.path.join(layout, "blobs", "sha256", digest[7:])
    return open(p, "rb").read() if os.path.isfile(p) else None


index = json.load(open(os.path.join(layout, "index.json")))
top = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "t")
manifest_bytes = blob(top["digest"])
manifest = json.loads(manifest_bytes)
EXTRA = 256 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stream(self, data, chunked, declared):
        """data then EXTRA bytes; how much went out before the client stopped reading."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(declared))
        self.end_headers()
        sent = 0
        chunk = bytes(1 << 16)
        try:
            for piece in [data] + [chunk] * (EXTRA // len(chunk)):
                if chunked:
                    self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                else:
                    self.wfile.write(piece)
                sent += len(piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        log("sent %d of %d" % (sent, len(data) + EXTRA))
        self.close_connection = True

    def do_GET(self):
        path = self.path.split("?")[0]
        log("GET " + self.path)
        if self.server.server_port == lport:
            log("loopback GET " + self.path)
        if path == "/v2/":
            return self.send(200, b"{}")
        parts = path.split("/")
        # /v2/<mode>/<name>/(manifests|blobs)/<ref>
        if len(parts) < 6 or parts[1] != "v2":
            return self.send(404)
        mode, kind, ref = parts[2], parts[-2], parts[-1]
        if kind == "manifests":
            if mode == "realm-loopback":
                realm = 'Bearer realm="https://127.0.0.1:%d/token",service="evil"' % lport
                return self.send(401, b"{}", [("WWW-Authenticate", realm)])
            return self.send(200, manifest_bytes, [("Content-Type", manifest["mediaType"]),
                                                   ("Docker-Content-Digest", top["digest"])])
        if kind != "blobs":
            return self.send(404)
        data = blob(ref)
        if data is None:
            return self.send(404)
        is_layer = any(l["digest"] == ref for l in manifest["layers"])
        if mode == "honest" or not is_layer:
            return self.send(200, data, [("Content-Type", "application/octet-stream")])
        if mode == "oversize":
            return self.stream(data, True, None)
        if mode == "oversize-cl":
            return self.stream(data, False, len(data) + EXTRA)
        here = "evil.test:%d" % port
        target = {
            "redirect-loopback": "https://127.0.0.1:%d/v2/honest/x/blobs/%s" % (lport, ref),
            "redirect-http": "http://%s/v2/honest/x/blobs/%s" % (here, ref),
            "redirect-loop": "https://%s%s?n=%d" % (here, path, int(self.path.partition("n=")[2] or 0) + 1),
            "redirect-same": "/v2/honest/x/blobs/%s" % ref,
        }.get(mode)
        if target is None:
            return self.send(404)
        return self.send(307, b"", [("Location", target)])


def serve(host, p):
    srv = ThreadingHTTPServer((host, p), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


threading.Thread(target=serve, args=("127.0.0.1", lport), daemon=True).start()
serve(addr, port)
