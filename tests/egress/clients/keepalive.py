# python3 clients/keepalive.py HOST PATH=VHOST… — one HTTPS connection to HOST:443 (no proxy:
# captured transparently), one GET per argument, in order, on that same connection, each with
# "Host: VHOST" and "Authorization: Bearer $GL_TOKEN" (the placeholder); VHOST "2" sends the
# Host header twice, "split" twice with the second one's name cut across two TLS records
# ("Ho", 0.3 s, "st: evil.test"). Prints "STATUS X-Echo BODY" per response, then
# "connections N" (the distinct connections used).
import http.client, os, ssl, sys, time

host = sys.argv[1]
c = http.client.HTTPSConnection(host, 443, context=ssl.create_default_context(), timeout=15)
socks = set()
for arg in sys.argv[2:]:
    path, vhost = arg.split("=", 1)
    if vhost == "split":
        if c.sock is None:
            c.connect()
        auth = "Authorization: Bearer " + os.environ.get("GL_TOKEN", "")
        c.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\nHo" % (path, host, auth)).encode())
        time.sleep(0.3)
        c.sock.sendall(b"st: evil.test\r\n\r\n")
        r = http.client.HTTPResponse(c.sock)
        r.begin()
        body = r.read().decode(errors="replace").strip().replace("\n", " ")
        print(r.status, r.getheader("X-Echo"), body, flush=True)
        socks.add(c.sock.getsockname())
        c.close()
        continue
    c.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
    for v in ([host, host] if vhost == "2" else [vhost]):
        c.putheader("Host", v)
    c.putheader("Authorization", "Bearer " + os.environ.get("GL_TOKEN", ""))
    c.endheaders()
    r = c.getresponse()
    body = r.read().decode(errors="replace").strip().replace("\n", " ")
    print(r.status, r.getheader("X-Echo"), body, flush=True)
    if c.sock is not None:
        socks.add(c.sock.getsockname())
    if r.getheader("Connection", "").lower() == "close":
        c.close()
print("connections", len(socks))
