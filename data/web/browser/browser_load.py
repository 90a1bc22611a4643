#!/usr/bin/env python3
"""Load the test page once in Debian's headless Chromium driven by Playwright; write the truth.

Usage (in the client namespace): browser_load.py --url URL --out PREFIX --map HOST=IP [...]
                                 --spki B64 [--quic HOST ...] [--quic-version V] [--dns] [--timeout-s 120]

Writes, for the one page load:
  PREFIX.keylog       NSS key log (SSLKEYLOGFILE in Chromium's environment)
  PREFIX.har          Playwright's HAR 1.2 (record_har_path, mode full, bodies omitted)
  PREFIX.timing.json  the page's own timing: performance.timeOrigin (ms since the epoch: the
                      capture's clock), the navigation entry and every resource entry
                      (performance.getEntriesByType, W3C Navigation Timing Level 2 and Resource
                      Timing Level 2), after the objects fetched by script after the load event
  PREFIX.command.json the Chromium executable, version and arguments, and the wall-clock times
                      around the load
Chromium comes from Debian (shutil.which("chromium"); never ``playwright install``); a fresh
profile per load (no cache, no stored connections), removed afterwards.
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

TIMING_JS = """() => ({
  timeOrigin: performance.timeOrigin,
  lateDone: window.__lateDone,
  navigation: performance.getEntriesByType('navigation').map(e => e.toJSON()),
  resource: performance.getEntriesByType('resource').map(e => e.toJSON()),
  paint: performance.getEntriesByType('paint').map(e => e.toJSON()),
})"""


def chromium_args(maps: list[str], spki: str, quic: list[str], quic_version: str | None = None,
                  dns: bool = False) -> list[str]:
    rules = [f"MAP {h} {ip}" for h, ip in (m.split("=") for m in maps)]
    rules.append("MAP * ~NOTFOUND")  # every other name fails inside Chromium: no stray DNS
    # dns: names resolved by Chromium's own DNS client from the system's resolv.conf (A and
    # HTTPS records, RFC 9460: the ECH keys a site publishes), not by a host map
    features = "OptimizationHints,MediaRouter,DialMediaRouteProvider" + ("" if dns else ",AsyncDns")
    args = [
        "--no-sandbox",
        *([] if dns else [f"--host-resolver-rules={', '.join(rules)}"]),
        f"--ignore-certificate-errors-spki-list={spki}",
        # no background traffic of Chromium's own (updates, safe browsing, metrics, ...)
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-domain-reliability",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        f"--disable-features={features}",
    ]
    if quic:
        args += ["--enable-quic", f"--origin-to-force-quic-on={','.join(h + ':443' for h in quic)}"]
        if quic_version:  # Chromium's own names of the versions it may offer: RFCv1, RFCv2 (RFC 9369)
            args.append(f"--quic-version={quic_version}")
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--map", action="append", default=[], help="HOST=IP")
    ap.add_argument("--spki", required=True)
    ap.add_argument("--quic", action="append", default=[])
    ap.add_argument("--quic-version", default=None, help="Chromium's --quic-version, e.g. RFCv2")
    ap.add_argument("--dns", action="store_true", help="resolve names with Chromium's DNS client (no --map)")
    ap.add_argument("--timeout-s", type=float, default=120.0)
    a = ap.parse_args()

    exe = shutil.which("chromium")
    if exe is None:
        raise SystemExit("chromium not found (Debian package 'chromium')")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    args = chromium_args(a.map, a.spki, a.quic, a.quic_version, a.dns)
    keylog = os.path.abspath(a.out + ".keylog")
    if os.path.exists(keylog):
        os.remove(keylog)
    profile = tempfile.mkdtemp(prefix="br_chromium_profile_")
    t = {}
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                profile, executable_path=exe, headless=True, args=args,
                env={**os.environ, "SSLKEYLOGFILE": keylog},
                record_har_path=a.out + ".har", record_har_content="omit", record_har_mode="full",
            )
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            t["goto_start"] = time.time()
            resp = page.goto(a.url, wait_until="load", timeout=a.timeout_s * 1000)
            t["load_returned"] = time.time()
            page.wait_for_function("window.__lateDone !== false", timeout=a.timeout_s * 1000)
            page.wait_for_timeout(300)
            timing = page.evaluate(TIMING_JS)
            t["timing_read"] = time.time()
            ctx.close()  # writes the HAR
            t["closed"] = time.time()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    timing["status"] = resp.status if resp else None
    with open(a.out + ".timing.json", "w") as f:
        json.dump(timing, f, separators=(",", ":"))
        f.write("\n")
    with open(a.out + ".command.json", "w") as f:
        json.dump({"chromium": exe, "chromium_version": version, "chromium_args": args, "url": a.url,
                   "headless": True, "env": {"SSLKEYLOGFILE": os.path.basename(keylog)},
                   "playwright": {"launch_persistent_context": {"record_har_content": "omit",
                                                                "record_har_mode": "full"},
                                  "goto_wait_until": "load"},
                   "wall_clock": {k: round(v, 6) for k, v in t.items()}}, f, indent=1)
        f.write("\n")
    nav = timing["navigation"][0]
    print(f"status {timing['status']}, loadEventEnd {nav['loadEventEnd']:.1f} ms, "
          f"{len(timing['resource'])} resources, late {timing['lateDone']}, "
          f"protocol {nav.get('nextHopProtocol')}", flush=True)


if __name__ == "__main__":
    main()
