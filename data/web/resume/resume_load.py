#!/usr/bin/env python3
"""Load one page twice in one headless Chromium (Debian's, driven by Playwright), a pause between.

Usage: resume_load.py --url URL --out PREFIX --map HOST=IP --spki B64 [--quic HOST] [--gap-s 3]

The pause is longer than the server's idle timeout, so the second load opens a new connection
and resumes the first one's TLS session (a session ticket; for QUIC, 0-RTT when the ticket
allows early data). Writes PREFIX.keylog (SSLKEYLOGFILE), PREFIX.timing.json (per load: the
navigation entry and resource entries of ``performance``, its timeOrigin) and
PREFIX.command.json (Chromium's version and arguments). A fresh profile, removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

from playwright.sync_api import sync_playwright

TIMING_JS = """() => ({timeOrigin: performance.timeOrigin,
  navigation: performance.getEntriesByType('navigation').map(e => e.toJSON()),
  resource: performance.getEntriesByType('resource').map(e => e.toJSON())})"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--map", action="append", default=[])
    ap.add_argument("--spki", required=True)
    ap.add_argument("--quic", action="append", default=[])
    ap.add_argument("--gap-s", type=float, default=3.0)
    a = ap.parse_args()
    exe = shutil.which("chromium")
    if exe is None:
        raise SystemExit("chromium not found (Debian package 'chromium')")
    rules = [f"MAP {h} {ip}" for h, ip in (m.split("=") for m in a.map)] + ["MAP * ~NOTFOUND"]
    args = ["--no-sandbox", f"--host-resolver-rules={', '.join(rules)}",
            f"--ignore-certificate-errors-spki-list={a.spki}", "--disable-background-networking",
            "--disable-component-update", "--disable-domain-reliability", "--disable-sync", "--no-first-run",
            "--no-default-browser-check", "--disable-features=OptimizationHints,MediaRouter,AsyncDns"]
    if a.quic:
        args += ["--enable-quic", f"--origin-to-force-quic-on={','.join(h + ':443' for h in a.quic)}"]
    keylog = os.path.abspath(a.out + ".keylog")
    if os.path.exists(keylog):
        os.remove(keylog)
    profile = tempfile.mkdtemp(prefix="qic_chromium_profile_")
    loads, wall = [], []
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(profile, executable_path=exe, headless=True, args=args,
                                                        env={**os.environ, "SSLKEYLOGFILE": keylog})
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            for k in range(2):
                if k:
                    time.sleep(a.gap_s)
                wall.append(time.time())
                resp = page.goto(f"{a.url}?load={k + 1}", wait_until="load", timeout=60_000)
                page.wait_for_timeout(300)
                timing = page.evaluate(TIMING_JS)
                timing["status"] = resp.status if resp else None
                loads.append(timing)
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    with open(a.out + ".timing.json", "w") as f:
        json.dump(loads, f, separators=(",", ":"))
        f.write("\n")
    with open(a.out + ".command.json", "w") as f:
        json.dump({"chromium": exe, "chromium_version": version, "chromium_args": args, "url": a.url,
                   "gap_s": a.gap_s, "wall_clock_load_starts": [round(x, 6) for x in wall]}, f, indent=1)
        f.write("\n")
    for t in loads:
        nav = t["navigation"][0]
        print(f"status {t['status']} {nav.get('nextHopProtocol')} connectStart {nav['connectStart']:.1f} "
              f"connectEnd {nav['connectEnd']:.1f} responseEnd {nav['responseEnd']:.1f} "
              f"resources {len(t['resource'])}", flush=True)


if __name__ == "__main__":
    main()
