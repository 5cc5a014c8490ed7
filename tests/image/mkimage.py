#!/usr/bin/env python3
"""mkimage.py SPEC.json OUT — build test images from a description, with full control over every
tar entry (hostile layers included), as an OCI image layout (OUT is a directory) or a
`docker save` archive (OUT ends in .tar).

SPEC: {"images": [{"tag": "t", "platforms": [{"arch": "amd64", "layers": [LAYER…], "config": {…}, "history": […]}]}],
       "format": "oci" | "docker-archive", "gzip": true}
LAYER: a list of entries {"name": …, "type": "file|dir|symlink|hardlink|char|block|fifo",
       "data": "text", "size": N (random bytes; with "zeros": true, N zero bytes streamed, so
       a small gzip layer can say a huge file: a decompression bomb), "target": …, "mode": 0o644, "uid": 0, "gid": 0,
       "major": 1, "minor": 3, "xattrs": {"user.x": "v"}}
       or {"from_dir": PATH} to pack a directory tree as one layer.
A single-platform image gets a plain manifest; several platforms an image index."""
import hashlib
import zlib
import io
import json
import os
import random
import sys
import tarfile
import time

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar"
TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
         "char": tarfile.CHRTYPE, "block": tarfile.BLKTYPE, "fifo": tarfile.FIFOTYPE}


class Zeros(io.RawIOBase):
    """n zero bytes, read in chunks: a bomb's content is never held in memory."""
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


class Sink:
    """The raw tar as it is written: hashed (the diff_id) and, when asked, gzipped on the fly."""
    def __init__(self, use_gzip):
        self.sha = hashlib.sha256()
        self.z = zlib.compressobj(9, zlib.DEFLATED, 31) if use_gzip else None
        self.out = []
        self.n = 0

    def tell(self):
        return self.n

    def write(self, b):
        self.n += len(b)
        self.sha.update(b)
        self.out.append(self.z.compress(b) if self.z else bytes(b))
        return len(b)

    def finish(self):
        if self.z:
            self.out.append(self.z.flush())
        return "sha256:" + self.sha.hexdigest(), b"".join(self.out)


def layer_tar(layer, use_gzip=False):
    """(diff_id, body): the layer's tar, gzipped when use_gzip."""
    sink = Sink(use_gzip)
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in layer:
            if "from_dir" in e:
                tar.add(e["from_dir"], arcname=".", recursive=True)
                continue
            ti = tarfile.TarInfo(e["name"])
            ti.type = TYPES[e.get("type", "file")]
            ti.mode = e.get("mode", 0o755 if ti.type == tarfile.DIRTYPE else 0o644)
            ti.uid, ti.gid = e.get("uid", 0), e.get("gid", 0)
            ti.mtime = e.get("mtime", 1700000000)
            data = None
            if ti.type == tarfile.REGTYPE and e.get("zeros"):
                ti.size = e["size"]
                tar.addfile(ti, Zeros(ti.size))
                continue
            if ti.type == tarfile.REGTYPE:
                data = e["data"].encode() if "data" in e else random.Random(e.get("seed", 1)).randbytes(e.get("size", 0))
                ti.size = len(data)
            if ti.type in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                ti.linkname = e["target"]
            if ti.type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                ti.devmajor, ti.devminor = e.get("major", 1), e.get("minor", 3)
            if "xattrs" in e:
                ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in e["xattrs"].items()}
            tar.addfile(ti, io.BytesIO(data) if data is not None else None)
    return sink.finish()


class Blobs:
    def __init__(self):
        self.blobs = {}

    def add(self, data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[d] = data
        return {"digest": d, "size": len(data)}


def build_platform(blobs, plat, use_gzip):
    diff_ids, layers = [], []
    for layer in plat.get("layers", []):
        diff_id, body = layer_tar(layer, use_gzip)
        diff_ids.append(diff_id)
        layers.append(dict(blobs.add(body), mediaType=MT_LAYER + ("+gzip" if use_gzip else "")))
    config = {"architecture": plat.get("arch", "amd64"), "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": plat.get("config", {}), "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    if "history" in plat:  # one entry per layer, as builders write it (podman build reads it)
        config["history"] = plat["history"]
    cdesc = dict(blobs.add(json.dumps(config).encode()), mediaType=MT_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST, "config": cdesc, "layers": layers}
    mdesc = dict(blobs.add(json.dumps(manifest).encode()), mediaType=MT_MANIFEST)
    mdesc["platform"] = {"os": "linux", "architecture": plat.get("arch", "amd64")}
    return mdesc, config, layers


def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    blobs = Blobs()
    use_gzip = spec.get("gzip", True)
    index_entries = []
    archive_images = []
    for img in spec["images"]:
        plats = img["platforms"]
        descs = [build_platform(blobs, p, use_gzip and spec.get("format", "oci") == "oci") for p in plats]
        if len(plats) == 1:
            top = {k: v for k, v in descs[0][0].items() if k != "platform"}
        else:
            idx = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [d[0] for d in descs]}
            top = dict(blobs.add(json.dumps(idx).encode()), mediaType=MT_INDEX)
        top["annotations"] = {"org.opencontainers.image.ref.name": img.get("tag", "latest")}
        index_entries.append(top)
        archive_images.append((img, descs[0]))
    if spec.get("format", "oci") == "oci":
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
        for d, data in blobs.blobs.items():
            with open(os.path.join(out, "blobs", "sha256", d[7:]), "wb") as f:
                f.write(data)
        json.dump({"imageLayoutVersion": "1.0.0"}, open(os.path.join(out, "oci-layout"), "w"))
        json.dump({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": index_entries},
                  open(os.path.join(out, "index.json"), "w"))
        print(json.dumps({"top": [e["digest"] for e in index_entries]}))
        return
    # docker save (the format before Docker 25): <config hex>.json, <id>/layer.tar, manifest.json
    with tarfile.open(out, "w") as tar:
        def put(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = int(time.time())
            tar.addfile(ti, io.BytesIO(data))
        manifest = []
        for img, (mdesc, config, layers) in archive_images:
            cjson = json.dumps(config).encode()
            cname = hashlib.sha256(cjson).hexdigest() + ".json"
            lnames = []
            for i, l in enumerate(layers):
                lid = hashlib.sha256(("layer%d" % i + cname).encode()).hexdigest()
                put(lid + "/layer.tar", blobs.blobs[l["digest"]])
                lnames.append(lid + "/layer.tar")
            put(cname, cjson)
            manifest.append({"Config": cname, "RepoTags": ["test/" + img.get("tag", "latest") + ":latest"],
                             "Layers": lnames})
        put("manifest.json", json.dumps(manifest).encode())


if __name__ == "__main__":
    main()
