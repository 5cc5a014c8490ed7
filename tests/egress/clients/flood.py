# python3 clients/flood.py HOST FULL HALF SECONDS — FULL connections to HOST:443 that send a whole
# TLS ClientHello (SNI HOST) and HALF that send half of one, then all stall: nothing more is
# sent for SECONDS. Connections are transparent (no proxy). Prints "held N" (those still open
# after the writes), then, at the end, "open N" (those the broker had not closed meanwhile).
import select, socket, ssl, sys, time

host, full, half, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ctx = ssl.create_default_context()
inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inb, outb, server_hostname=host)
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = outb.read()
addr = socket.getaddrinfo(host, 443, socket.AF_INET, socket.SOCK_STREAM)[0][4]
socks = []
for i in range(full + half):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(addr)
        s.sendall(hello if i < full else hello[: len(hello) // 2])
    except OSError:
        s.close()
        continue
    socks.append(s)
print("held", len(socks), flush=True)
end = time.time() + seconds
while time.time() < end and socks:
    r, _, _ = select.select(socks, [], [], max(0.0, end - time.time()))
    for s in r:
        try:
            if not s.recv(65536):
                raise OSError
        except OSError:
            socks.remove(s)
            s.close()
print("open", len(socks), flush=True)
