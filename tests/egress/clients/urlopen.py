# python3 clients/urlopen.py URL — Python's urllib, which honours HTTPS_PROXY (through the
# broker's CONNECT) unless NO_PROXY says otherwise. Prints "STATUS BODY" or "ERROR KIND MESSAGE".
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=15) as r:
        print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    reason = getattr(e, "reason", e)
    print("ERROR", type(reason).__name__, reason)
    sys.exit(1)
