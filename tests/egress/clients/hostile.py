# python3 clients/hostile.py CASE ARGS… — what a hostile server inside the container would try
# against the egress broker (issue 25): raw sockets and the ssl module, no library that would
# tidy the bytes up. Prints what came back ("HTTP <status line>" lines and the bodies it saw, or
# "ERROR KIND"); the test decides. Runs only inside the egress suite's own bundle (the marker
# make-bundle.sh puts in its environment), never on a machine by accident.
#
#   tls-tunnel NAME:PORT SNI|- PAUSE      CONNECT NAME:PORT through the proxy, wait PAUSE s, then
#                                        TLS with that SNI (- none), GET /hello
#   tls-direct HOST PORT SNI|- PAUSE     the same, connecting to HOST (transparent capture)
#   http-tunnel NAME:PORT EARLY CUT RAW  CONNECT with RAW (an HTTP request, \r\n escapes) in the
#                                        same write (EARLY=1) or after the 200; CUT>0: the first
#                                        write stops CUT bytes into RAW, the rest 1 s later
#   http-direct HOST PORT RAW            RAW to HOST:PORT (transparent), read to the end
#   http-proxy RAW                       RAW to the HTTP proxy, read to the end
#   framed:CASE ARGS…                    CASE, and first a line "framed Content-Length=N body=M"
#                                        for the one response that came back
#   http-seq HOST PORT RAW1 RAW2         RAW1, its answer, then RAW2 on the same connection
#   tls-raw HOST PORT SNI RAW            TLS to HOST:PORT (transparent) with that SNI, RAW inside
#                                        it, read to the end
import os, socket, ssl, sys, time

if not os.environ.get("CODEMODE_TEST_CONTAINER"):
    sys.exit("hostile.py: not inside the egress suite's bundle, refusing to run")

PROXY = ("127.0.0.1", 3128)


def unescape(s):
    return s.encode().decode("unicode_escape").encode("latin-1")


def read_all(s, limit=8.0):
    s.settimeout(limit)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        data += b"\n<TIMEOUT>"
    except ConnectionResetError:
        data += b"\n<RESET>"
    return data


def show(data):
    if FRAMED:
        # One response: is its body exactly what its Content-Length says?
        raw = data
        for marker in (b"\n<TIMEOUT>", b"\n<RESET>"):
            raw = raw[: -len(marker)] if raw.endswith(marker) else raw
        head, _, body = raw.partition(b"\r\n\r\n")
        cl = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        print("framed Content-Length=%s body=%d" % (cl[0].decode() if len(cl) == 1 else "?", len(body)))
    for line in data.decode("latin-1").splitlines():
        if line.startswith("HTTP/") or line.startswith("hello from") or line.startswith("codemode egress") or line.startswith("SSH-") or line.startswith("<"):
            print(line.replace("HTTP/", "HTTP ", 1) if line.startswith("HTTP/") else line)


def connect_tunnel(target, first=b""):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()) + first)
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            raise ConnectionError("closed during CONNECT: %r" % head)
        head += d
    line = head.split(b"\r\n")[0].decode()
    if " 200 " not in line:
        raise ConnectionError("CONNECT refused: " + line)
    return s


def tls_get(s, sni, pause):
    time.sleep(pause)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False  # the test CA signs every lab name; the broker is what is tested
    ctx.verify_mode = ssl.CERT_NONE
    t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
    host = "api.allowed.test" if sni == "-" else sni
    t.sendall(b"GET /hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
    show(read_all(t))


FRAMED = False


def main():
    global FRAMED
    case, args = sys.argv[1], sys.argv[2:]
    if case.startswith("framed:"):
        FRAMED, case = True, case[len("framed:"):]
    try:
        if case == "tls-tunnel":
            tls_get(connect_tunnel(args[0]), args[1], float(args[2]))
        elif case == "tls-direct":
            tls_get(socket.create_connection((args[0], int(args[1])), timeout=10), args[2], float(args[3]))
        elif case == "http-tunnel":
            raw, early, cut = unescape(args[3]), args[1] == "1", int(args[2])
            first, rest = (raw[:cut], raw[cut:]) if cut else (raw, b"")
            s = connect_tunnel(args[0], first if early else b"")
            if not early:
                s.sendall(first)
            if rest:
                time.sleep(1)
                s.sendall(rest)
            show(read_all(s))
        elif case == "http-direct":
            s = socket.create_connection((args[0], int(args[1])), timeout=10)
            s.sendall(unescape(args[2]))
            show(read_all(s))
        elif case == "http-proxy":
            s = socket.create_connection(PROXY, timeout=10)
            s.sendall(unescape(args[0]))
            show(read_all(s))
        elif case == "tls-raw":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False  # the broker's per-run CA signs it; the broker is tested
            ctx.verify_mode = ssl.CERT_NONE
            t = ctx.wrap_socket(socket.create_connection((args[0], int(args[1])), timeout=10),
                                server_hostname=args[2])
            t.sendall(unescape(args[3]))
            show(read_all(t))
        elif case == "http-seq":
            s = socket.create_connection((args[0], int(args[1])), timeout=10)
            s.sendall(unescape(args[2]))
            s.settimeout(8)
            first = s.recv(65536)
            show(first)
            s.sendall(unescape(args[3]))
            show(read_all(s))
        else:
            sys.exit("hostile.py: unknown case " + case)
    except Exception as e:
        print("ERROR", type(e).__name__, e)


main()
