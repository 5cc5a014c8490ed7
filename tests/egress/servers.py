#!/usr/bin/env python3
# tests/egress/servers.py — the test internet's hosts, run inside the "hosts" network namespace
# (tests/egress/lab.sh). Never reachable from anywhere else.
#   HTTPS on :443 and :8443 (one certificate for every test name, signed by the test's CA) and
#   plain HTTP on :80, on every address of the namespace:
#     /hello            "hello from HOST" (HOST: the request's Host header)
#     /headers          the request's headers as JSON
#     /bytes/N          N bytes
#     /api/v4/...       a GitLab-API-shaped answer, 401 unless "Authorization: Bearer $TOKEN"
#     /echo             a debug endpoint that hands the request's Authorization back, in a
#                       response header (X-Echo) and in the body, the body in two writes 0.3 s
#                       apart split inside the value; /echo-chunked: the same body chunked, the
#                       split between two chunks
#   a banner on :2222 (the server speaks first, as SSH does), then the connection closes
#   a DNS server on 203.0.113.54:53 for rebind.allowed.test: the first answer public
#   (203.0.113.10), every later one private (10.20.0.5): DNS rebinding.
#   Every request is appended to $LOG (one JSON line: host, path, headers).
import http.server, json, os, socket, socketserver, ssl, struct, sys, threading, time

if sys.argv[1] == "--machine":
    # servers.py --machine ADDR PORT: a service of "the machine" itself (the broker's network
    # namespace), answering "inside the machine" to any GET. A plain TCPServer: HTTPServer's
    # bind asks DNS for the address's name, which the machine's namespace cannot reach.
    class Machine(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a):
            pass
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "19")
            self.end_headers()
            self.wfile.write(b"inside the machine\n")
    socketserver.TCPServer.allow_reuse_address = True
    srv = socketserver.ThreadingTCPServer((sys.argv[2], int(sys.argv[3])), Machine)
    print("ready", flush=True)
    srv.serve_forever()

cert, key, log_path, token = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
log_lock = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def send_body(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        with log_lock, open(log_path, "a") as f:
            f.write(json.dumps({"host": host, "path": self.path, "port": self.server.server_address[1],
                                "headers": dict(self.headers.items())}) + "\n")
        if self.path == "/hello":
            self.send_body(200, ("hello from %s\n" % host).encode())
        elif self.path == "/headers":
            self.send_body(200, json.dumps(dict(self.headers.items())).encode(), "application/json")
        elif self.path in ("/echo", "/echo-chunked"):
            auth = self.headers.get("Authorization") or ""
            body = ("Authorization: %s\n" % auth).encode()
            half = len(body) // 2 + 3
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("X-Echo", auth)
            chunked = self.path == "/echo-chunked"
            self.send_header("Transfer-Encoding" if chunked else "Content-Length", "chunked" if chunked else str(len(body)))
            self.end_headers()
            for i, part in enumerate((body[:half], body[half:])):
                if i:
                    time.sleep(0.3)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        elif self.path.startswith("/bytes/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[: min(n, len(chunk))])
                n -= len(chunk)
        elif self.path.startswith("/api/v4/"):
            if self.headers.get("Authorization") != "Bearer " + token:
                self.send_body(401, b'{"message":"401 Unauthorized"}', "application/json")
            else:
                body = json.dumps([{"id": 1, "name": "egress-test", "path_with_namespace": "codemode/egress-test",
                                    "visibility": "private", "description": "seen with the real token",
                                    "web_url": "https://api.allowed.test/codemode/egress-test",
                                    "ssh_url_to_repo": "git@api.allowed.test:codemode/egress-test.git",
                                    "http_url_to_repo": "https://api.allowed.test/codemode/egress-test.git",
                                    "created_at": "2026-12-01T00:00:00Z", "last_activity_at": "2026-12-01T00:00:00Z",
                                    "default_branch": "main"}]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Total", "1")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        else:
            self.send_body(404, b"not found\n")
    do_HEAD = do_GET

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

def serve(port, tls):
    srv = Server(("0.0.0.0", port), Handler)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        # The handshake on the request's own thread (its first read), not in the accept loop:
        # 100 concurrent clients must not queue behind one another's handshakes.
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

def rebinding_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("203.0.113.54", 53))
    answered = set()
    while True:
        msg, peer = s.recvfrom(512)
        if len(msg) < 12:
            continue
        qend = 12
        while msg[qend] != 0:
            qend += msg[qend] + 1
        qend += 5
        qtype = struct.unpack("!H", msg[qend - 4:qend - 2])[0]
        hdr = msg[:2] + b"\x84\x00" + b"\x00\x01" + (b"\x00\x01" if qtype == 1 else b"\x00\x00") + b"\x00\x00\x00\x00"
        body = msg[12:qend]
        if qtype == 1:
            first = "A" not in answered
            answered.add("A")
            ip = "203.0.113.10" if first else "10.20.0.5"
            body += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04" + socket.inet_aton(ip)
        s.sendto(hdr + body, peer)

def banner_server():
    # A protocol where the server speaks first (SSH, SMTP, MySQL): nothing for SNI or Host.
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 2222))
    s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.sendall(b"SSH-2.0-egress-test\r\n")
        finally:
            c.close()

for port, tls in ((443, True), (8443, True), (80, False)):
    serve(port, tls)
threading.Thread(target=banner_server, daemon=True).start()
threading.Thread(target=rebinding_dns, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
