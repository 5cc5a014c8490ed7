# python3 clients/banner.py HOST PORT — connect (the name resolved as any client does), print
# the first line the server sends, or "ERROR KIND".
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
    print(s.makefile().readline().strip())
except Exception as e:
    print("ERROR", type(e).__name__, e)
