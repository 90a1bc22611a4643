"""Play one DASH or HLS session in Debian's chromium (Playwright) and save the player's event log.

Run inside the client namespace by make_sessions.sh:
``python play.py URL OUT.json [MAX_SECONDS]`` (environment: PLAY_QUIC, PLAY_SPKI for HTTP/3). The page (player/dash.html or player/hls.html) logs
dash.js / hls.js events and the video element's state every 250 ms (player/log.js); this script
waits for the video's ``ended`` event (or MAX_SECONDS, default 60) and writes the log with the
player's name, version and settings. Chromium comes from Debian (never ``playwright install``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

from playwright.sync_api import sync_playwright


def quic_args() -> list[str]:
    """HTTP/3 (the h3 scenario): PLAY_QUIC=host forces QUIC for host:443; Chromium's QUIC does not
    take --ignore-certificate-errors, it needs the self-signed certificate's SPKI hash (PLAY_SPKI)."""
    host, spki = os.environ.get("PLAY_QUIC"), os.environ.get("PLAY_SPKI")
    if not host:
        return []
    return ["--enable-quic", f"--origin-to-force-quic-on={host}:443", f"--ignore-certificate-errors-spki-list={spki}"]


def main(url: str, out: str, max_s: float = 60.0) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--no-sandbox", "--headless=new", "--autoplay-policy=no-user-gesture-required",
                  "--host-resolver-rules=MAP hs.test 198.51.100.2", "--disable-background-networking",
                  "--disable-component-update", "--disable-features=MediaRouter,OptimizationHints",
                  "--ignore-certificate-errors"]  # the tls scenario's self-signed certificate
            + quic_args(),
        )
        page = browser.new_page()
        page.goto(url)
        t0 = time.time()
        while time.time() - t0 < max_s:
            if page.evaluate("window.events.some(e => e.type === 'video_ended' || e.type === 'player_ended')"):
                break
            time.sleep(0.5)
        time.sleep(0.5)
        events = page.evaluate("window.events")
        meta = page.evaluate("""() => ({
            player: typeof dashjs !== 'undefined' ? 'dash.js' : 'hls.js',
            version: typeof dashjs !== 'undefined' ? dashjs.Version : Hls.version,
            settings: JSON.parse(JSON.stringify(window.playerSettings, (k, v) => typeof v === 'function' ? undefined : v)),
            user_agent: navigator.userAgent})""")
        browser.close()
    meta.update(url=url, events=events, ended=any(e["type"] in ("video_ended", "player_ended") for e in events))
    with open(out, "w") as f:
        json.dump(meta, f, indent=0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 60.0)
