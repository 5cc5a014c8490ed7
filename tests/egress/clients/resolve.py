# python3 clients/resolve.py NAME [SERVER [TIMES]] — TIMES (default 1) A questions to SERVER
# (default, or "-": the resolv.conf nameserver) over UDP; prints "RCODE n ADDR…" for each.
import socket, struct, sys

def ask(name, server):
    q = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0\0\1\0\1"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(q, (server, 53))
    r, _ = s.recvfrom(512)
    rcode, an = r[3] & 15, struct.unpack("!H", r[6:8])[0]
    addrs, p = [], len(q)
    for _ in range(an):
        rtype, rdlen = struct.unpack("!H", r[p + 2:p + 4])[0], struct.unpack("!H", r[p + 10:p + 12])[0]
        if rtype == 1:
            addrs.append(socket.inet_ntoa(r[p + 12:p + 16]))
        p += 12 + rdlen
    print("RCODE", rcode, *addrs, flush=True)

name = sys.argv[1]
server = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else \
    [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 1):
    ask(name, server)
