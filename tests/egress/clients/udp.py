# python3 clients/udp.py HOST PORT — send one datagram and wait for any answer: prints
# "ANSWER", or "ERROR KIND" (ECONNREFUSED: port unreachable at once; timeout: nothing came).
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.send(b"hello")
    s.recv(100)
    print("ANSWER")
except socket.timeout:
    print("ERROR timeout")
except OSError as e:
    print("ERROR", e.errno == 111 and "ECONNREFUSED" or e)
