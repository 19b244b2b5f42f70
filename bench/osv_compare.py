#!/usr/bin/env python3
"""Packages found per source: the Trusthub agent against OSV-Scanner (issue 37).

OSV-Scanner comes from PyPI's `osvpy` wheel (OSV-Scanner/osv-scalibr built as a shared
library). The wheel's Python module needs CPython 3.13; its library does not, so it is loaded
here through ctypes with the C ABI the wheel's `_abi.pxd` declares and the record fields its
`_native.pyx` reads. osvpy scans container images from a registry: the corpus is packed into
a one-layer image that a local registry (Docker Registry HTTP API v2, on 127.0.0.1) serves.
The agent reads the same files through `trusthub-agent dependencies`.

Run by hand: python3 bench/osv_compare.py <corpus folder> [<trusthub-agent binary>]
[--record=<file>] (`--record` writes what OSV-Scanner found per file as JSON; the agent's
unit tests hold its parsers against crates/agent/tests/data/corpus/osv-scanner.json).
(the wheel is fetched with pip into ~/.cache/trusthub-osvpy the first time). Every source is
a path under the corpus; the output is one line per source with both counts, then a line per
format with the files whose counts agree.
"""

import ctypes
import glob
import gzip
import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile

CACHE = os.path.expanduser("~/.cache/trusthub-osvpy")
PLUGINS = [
    "javascript/packagelockjson", "javascript/yarnlock", "javascript/pnpmlock", "javascript/bunlock",
    "javascript/nodemodules", "python/requirements", "python/poetrylock", "python/pipfilelock",
    "python/pdmlock", "python/pylock", "python/uvlock", "python/wheelegg", "php/composerlock",
    "ruby/gemfilelock", "go/gomod", "go/binary",
]


def library():
    """The wheel's shared library (downloaded once)."""
    so = os.path.join(CACHE, "osvpy/_lib/libosvpy.so")
    if not os.path.exists(so):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "osvpy==0.3.0", "--no-deps",
                        "--python-version", "3.13", "--only-binary=:all:", "-d", CACHE, "-q"], check=True)
        wheel = glob.glob(os.path.join(CACHE, "osvpy-0.3.0-*.whl"))[0]
        zipfile.ZipFile(wheel).extractall(CACHE)
    return ctypes.CDLL(so)


class Value(ctypes.Structure):
    _fields_ = [("tag", ctypes.c_uint32), ("kind", ctypes.c_uint32), ("row", ctypes.c_uint32),
                ("sub", ctypes.c_uint32), ("number", ctypes.c_uint32), ("size", ctypes.c_size_t)]


class Osv:
    def __init__(self):
        lib = library()
        U = ctypes.c_size_t
        lib.osv_batch_create.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(U)]
        for f in ("osv_batch_start", "osv_batch_wait", "osv_batch_release", "osv_result_release"):
            getattr(lib, f).argtypes = [U]
        lib.osv_batch_finish.argtypes = [U, ctypes.POINTER(U)]
        lib.osv_result_get.argtypes = [U, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                       ctypes.c_uint32, ctypes.c_int64, ctypes.c_char_p,
                                       ctypes.c_size_t, ctypes.POINTER(Value)]
        self.lib = lib

    def scan(self, image):
        payload = json.dumps({"inputs": [image], "all_packages": True, "allowed_licenses": None,
                              "auth": None, "platform": "", "workers": 1, "languages": PLUGINS}).encode()
        op, res = ctypes.c_size_t(0), ctypes.c_size_t(0)
        for step in (lambda: self.lib.osv_batch_create(payload, len(payload), ctypes.byref(op)),
                     lambda: self.lib.osv_batch_start(op), lambda: self.lib.osv_batch_wait(op),
                     lambda: self.lib.osv_batch_finish(op, ctypes.byref(res))):
            status = step()
            if status:
                raise RuntimeError(f"osvpy batch failed: {status}")
        self.lib.osv_batch_release(op)
        self.handle = res.value

    def read(self, ref, field, index=-1):
        kind, row, sub = ref
        buf = ctypes.create_string_buffer(4096)
        v = Value()
        if self.lib.osv_result_get(self.handle, kind, row, sub, field, index, buf, 4096, ctypes.byref(v)):
            raise RuntimeError("osv_result_get")
        if v.tag == 0:
            return None
        if v.tag == 1:
            if v.size > 4096:
                buf = ctypes.create_string_buffer(v.size)
                self.lib.osv_result_get(self.handle, kind, row, sub, field, index, buf, v.size, ctypes.byref(v))
            return buf.raw[:v.size].decode()
        if v.tag == 2:
            return bool(v.number)
        if v.tag == 4:
            return (v.kind, v.row, v.sub)
        if v.tag == 5:
            return [self.read(ref, field, i) for i in range(v.number)]
        raise RuntimeError(f"value tag {v.tag}")

    def occurrences(self):
        """(path, package name, version, ecosystem) of every package of the image, and its
        status and diagnostics."""
        image = self.read((1, 0, 0), 1)[0]
        status = self.read(image, 3)
        diagnostics = [(self.read(d, 1), self.read(d, 2)) for d in self.read(image, 5) or []]
        out = []
        for occ in self.read(image, 6) or []:
            package, context = self.read(occ, 2), self.read(occ, 3)
            out.append((self.read(context, 1), self.read(package, 1), self.read(package, 2),
                        self.read(package, 3)))
        return status, diagnostics, out


def layer(folder):
    """The corpus as an uncompressed tar under /corpus, and gzipped."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        t.add(folder, arcname="corpus")
    data = raw.getvalue()
    return data, gzip.compress(data, mtime=0)


def registry(blobs, manifest):
    """A read-only registry serving one image `corpus:latest` on 127.0.0.1."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, body, kind):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self):
            if self.path == "/v2/":
                return self.answer(b"{}", "application/json")
            if self.path.startswith("/v2/corpus/manifests/"):
                return self.answer(manifest, "application/vnd.oci.image.manifest.v1+json")
            if self.path.startswith("/v2/corpus/blobs/"):
                digest = self.path.rsplit("/", 1)[1]
                if digest in blobs:
                    return self.answer(blobs[digest], "application/octet-stream")
            self.send_response(404)
            self.end_headers()

        do_HEAD = do_GET

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def key(name, ecosystem):
    """A package name as both sides compare it: lowercase, PEP 503 for Python."""
    name = name.lower()
    if ecosystem in ("PyPI", "pip"):
        name = "-".join(p for p in name.replace("_", "-").replace(".", "-").split("-") if p)
    return name


def osv_counts(folder):
    raw, gz = layer(folder)
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}}).encode()
    digest = lambda b: "sha256:" + hashlib.sha256(b).hexdigest()
    blobs = {digest(config): config, digest(gz): gz}
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": digest(config), "size": len(config)},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                       "digest": digest(gz), "size": len(gz)}]}).encode()
    server = registry(blobs, manifest)
    osv = Osv()
    osv.scan(f"127.0.0.1:{server.server_address[1]}/corpus:latest")
    status, diagnostics, occurrences = osv.occurrences()
    server.shutdown()
    counts = {}
    for path, name, version, _eco in occurrences:
        # Paths are the image's: /corpus/<relative>.
        rel = (path or "").lstrip("/").removeprefix("corpus/")
        counts.setdefault(rel, set()).add((key(name, _eco), version))
    return status, diagnostics, counts


def agent_counts(folder, agent):
    out = subprocess.run([agent, "dependencies", "--project-path", folder, "--binary-path", folder,
                          "--no-process-discovery", "--no-system"], capture_output=True, text=True, check=True)
    counts, errors = {}, {}
    for line in out.stdout.splitlines():
        e = json.loads(line)
        rel = os.path.relpath(e["source"], folder)
        if "error" in e:
            errors[rel] = e["error"]
            continue
        if "name" not in e:  # a source without packages
            counts.setdefault(rel, set())
            continue
        counts.setdefault(rel, set()).add((key(e["name"], e["ecosystem"]), e["version"]))
    return counts, errors


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--record=")]
    record = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--record=")]
    folder = os.path.abspath(args[0])
    agent = args[1] if len(args) > 1 else "target/release/trusthub-agent"
    status, diagnostics, osv = osv_counts(folder)
    if record:
        # What OSV-Scanner found per file, for the agent's unit test to hold against.
        with open(record[0], "w") as f:
            json.dump({k: sorted(f"{n}@{v}" for n, v in vs) for k, vs in sorted(osv.items())}, f, indent=1)
            f.write("\n")
    ours, errors = agent_counts(folder, agent)
    print(f"osv-scanner (osvpy 0.3.0): image {status}; {diagnostics or 'no diagnostics'}")
    per_format = {}
    for source in sorted(set(osv) | set(ours) | set(errors)):
        # OSV-Scanner names an installed tree's packages by their own metadata files; the
        # agent names the tree's root: compare at the root.
        if any(source.startswith(s.rstrip("/") + "/") for s in ours if s != source):
            continue
        o = set().union(*[v for p, v in osv.items() if p == source or p.startswith(source.rstrip("/") + "/")])
        a = ours.get(source, set())
        fmt = os.path.basename(source.rstrip("/"))
        # Packages found: the same names. Versions may differ where there is none to read: an
        # unpinned requirement (`sphinx>=4.0.0`) is reported by OSV-Scanner at its bound and by
        # the agent without a version (it cannot be checked, and the hub says so).
        same = {n for n, _ in a} == {n for n, _ in o} and source not in errors
        per_format.setdefault(fmt, []).append(same)
        line = f"{'=' if same else '≠'} {source}: agent {len(a)}, osv-scanner {len(o)}"
        if source in errors:
            line += f" (agent: not covered: {errors[source]})"
        if a != o:
            only_o = sorted(o - a)[:5]
            only_a = sorted(a - o)[:5]
            line += f"; only osv-scanner: {only_o}; only the agent: {only_a}"
        print(line)
    for fmt, results in sorted(per_format.items()):
        print(f"{fmt}: {sum(results)} of {len(results)} files agree")


if __name__ == "__main__":
    main()
