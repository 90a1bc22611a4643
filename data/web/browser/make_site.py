#!/usr/bin/env python3
"""Write the browser test page: ~40 small objects over three host names (bit-exact reproducible).

Usage: make_site.py OUTDIR

OUTDIR/<host>/... is each host's document root (nginx and h3_server.py serve the folder named
after the request's host). The page (www.example.com/index.html) pulls, before its load event:
3 stylesheets (one with a background image), 3 scripts (one blocking in <head>, one async from
the static host, one at the end of <body>) and 26 images from www.example.com and
static.example.com; after the load event app.js fetches 4 JSON objects and 2 images from
api.example.net (cross-origin fetch(), CORS) and sets ``window.__lateDone``. Images are small
PNGs of seeded noise (they do not compress: their size on the wire is their size here).
OUTDIR/manifest.json lists every object with its size and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import sys
import zlib
from pathlib import Path

WWW, STATIC, API = "www.example.com", "static.example.com", "api.example.net"  # RFC 2606 names
SEED = 22  # issue 22


def png(width: int, height: int, rng: random.Random) -> bytes:
    """A grey-scale 8-bit PNG of seeded noise (PNG spec, ISO/IEC 15948: IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(width)) for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def filler(kind: str, n: int, rng: random.Random) -> str:
    """n bytes (about) of harmless CSS/JS comment text, so the objects have realistic sizes."""
    words = ["qoe", "page", "load", "object", "browser", "timing", "network", "buffer", "delay"]
    out, size = [], 0
    while size < n:
        line = " ".join(rng.choice(words) for _ in range(12))
        out.append(f"/* {line} */" if kind == "css" else f"// {line}")
        size += len(out[-1]) + 1
    return "\n".join(out) + "\n"


def main(outdir: str) -> None:
    rng = random.Random(SEED)
    root = Path(outdir)
    files: dict[str, bytes] = {}

    # images: 10 on www, 16 on static, 1 CSS background (static), 2 late (api)
    img_www = [f"img/w{i:02d}.png" for i in range(10)]
    img_static = [f"img/s{i:02d}.png" for i in range(16)]
    for name in img_www:
        files[f"{WWW}/{name}"] = png(rng.randrange(24, 56), rng.randrange(24, 56), rng)
    for name in img_static:
        files[f"{STATIC}/{name}"] = png(rng.randrange(24, 64), rng.randrange(24, 64), rng)
    files[f"{STATIC}/img/bg.png"] = png(64, 48, rng)
    files[f"{API}/img/late0.png"] = png(40, 40, rng)
    files[f"{API}/img/late1.png"] = png(48, 32, rng)

    files[f"{WWW}/css/main.css"] = (
        "body { font-family: sans-serif; margin: 1em; }\nimg { margin: 2px; }\n" + filler("css", 3000, rng)
    ).encode()
    files[f"{STATIC}/css/theme.css"] = (
        f"header {{ background: url(//{STATIC}/img/bg.png) repeat-x; height: 48px; }}\n"
        + filler("css", 2500, rng)
    ).encode()
    files[f"{STATIC}/css/grid.css"] = (".grid { display: flex; flex-wrap: wrap; }\n" + filler("css", 1800, rng)).encode()
    files[f"{WWW}/js/head.js"] = ("window.__t0 = performance.now();\n" + filler("js", 4000, rng)).encode()
    files[f"{STATIC}/js/lib.js"] = ("window.__lib = 1;\n" + filler("js", 6000, rng)).encode()
    late = [f"https://{API}/data/item{i}.json" for i in range(4)] + [f"https://{API}/img/late{i}.png" for i in range(2)]
    app = (
        "// after the load event: four JSON objects and two images from the api host (CORS fetch)\n"
        "window.__lateDone = false;\n"
        "window.addEventListener('load', function () {\n"
        "  setTimeout(function () {\n"
        "    var base = location.protocol + '//" + API + "';\n"
        "    var urls = ['/data/item0.json', '/data/item1.json', '/data/item2.json', '/data/item3.json',\n"
        "                '/img/late0.png', '/img/late1.png'];\n"
        "    Promise.all(urls.map(function (u) { return fetch(base + u).then(function (r) { return r.arrayBuffer(); }); }))\n"
        "      .then(function () { window.__lateDone = true; }, function (e) { window.__lateDone = 'error: ' + e; });\n"
        "  }, 50);\n"
        "});\n" + filler("js", 3000, rng)
    )
    files[f"{WWW}/js/app.js"] = app.encode()
    for i in range(4):
        items = [{"id": i * 100 + k, "name": f"item {i}-{k}", "value": rng.randrange(10**6)} for k in range(20)]
        files[f"{API}/data/item{i}.json"] = (json.dumps({"items": items}, indent=1) + "\n").encode()

    imgs = [f'<img src="/{n}" alt="{n}">' for n in img_www] + [f'<img src="//{STATIC}/{n}" alt="{n}">' for n in img_static]
    rows = "\n".join("<div class=\"grid\">" + "".join(imgs[k : k + 6]) + "</div>" for k in range(0, len(imgs), 6))
    paragraphs = "\n".join(f"<p>{filler('css', 300, rng).replace('/*', '').replace('*/', '')}</p>" for _ in range(8))
    html = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>qoe browser test page</title>
<link rel="stylesheet" href="/css/main.css">
<link rel="stylesheet" href="//{STATIC}/css/theme.css">
<link rel="stylesheet" href="//{STATIC}/css/grid.css">
<script src="/js/head.js"></script>
<script async src="//{STATIC}/js/lib.js"></script>
</head>
<body>
<header><h1>qoe browser test page</h1></header>
{rows}
{paragraphs}
<script src="/js/app.js"></script>
</body>
</html>
"""
    files[f"{WWW}/index.html"] = html.encode()

    manifest = []
    for rel in sorted(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
        host, _, p = rel.partition("/")
        manifest.append({"host": host, "path": "/" + p, "size": len(files[rel]),
                         "sha256": hashlib.sha256(files[rel]).hexdigest(),
                         "late": f"https://{host}/{p}" in late})
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(m["size"] for m in manifest)
    print(f"{len(manifest)} objects, {total} bytes in {root}")


if __name__ == "__main__":
    main(sys.argv[1])
