#!/usr/bin/env python3
"""treecmp.py A B — compare two directory trees file by file: type, mode (with setuid/setgid/
sticky bits), owner, symlink target, device numbers, size and content (sha256). Prints each
difference and exits 1 if there is one. Used to hold codemode's unpacked rootfs against
`umoci unpack` of the same image. Times are not compared (umoci and codemode both keep the
layer's mtimes, but directories' are touched by later entries in either)."""
import hashlib
import os
import stat
import sys


def describe(path):
    st = os.lstat(path)
    d = {"type": stat.S_IFMT(st.st_mode), "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}
    if stat.S_ISLNK(st.st_mode):
        d["target"] = os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        d["size"] = st.st_size
        d["sha256"] = h.hexdigest()
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d["rdev"] = (os.major(st.st_rdev), os.minor(st.st_rdev))
    return d


def walk(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, root)] = describe(full)
    out["."] = describe(root)
    return out


def main():
    a, b = walk(sys.argv[1]), walk(sys.argv[2])
    diffs = 0
    for name in sorted(set(a) | set(b)):
        if name not in a:
            print(f"only in {sys.argv[2]}: {name}")
        elif name not in b:
            print(f"only in {sys.argv[1]}: {name}")
        elif a[name] != b[name]:
            print(f"differs: {name}: {a[name]} vs {b[name]}")
        else:
            continue
        diffs += 1
    print(f"{len(a)} entries compared, {diffs} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
