#!/usr/bin/env python3
"""Print the Markdown table of the captures in captures/ (for README.md), from the truth files only.

Usage: summarize.py [CAPTURES_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(caps: Path) -> None:
    print("| capture | protocol | condition | buffer | loadEventEnd ms | HAR onLoad ms | resources | "
          "last resource end ms | drops up/down | pcap KB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for sc in sorted(caps.glob("*.scenario.json")):
        name = sc.name[: -len(".scenario.json")]
        s = json.loads(sc.read_text())
        t = json.loads((caps / f"{name}.timing.json").read_text())
        har = json.loads((caps / f"{name}.har").read_text())
        nav = t["navigation"][0]
        last = max(r["responseEnd"] for r in t["resource"])
        drops = "-"
        dl = caps / f"{name}.drops.jsonl"
        if dl.exists():
            summ = json.loads(dl.read_text().splitlines()[-1])
            drops = f"{summ['dropped']['up']}/{summ['dropped']['down']}"
        cond = s["condition"]
        if s["condition"] in ("delay", "loss"):
            cond += f" ({s['delay_ms_each_way']} ms each way" + (f", p={s['loss_each_way']}" if s["loss_each_way"] else "") + ")"
        print(f"| `{name}` | {s['protocol']} ({nav.get('nextHopProtocol')}) | {cond} | {s['buffer_packets']} | "
              f"{nav['loadEventEnd']:.1f} | {har['log']['pages'][0]['pageTimings']['onLoad']} | {len(t['resource'])} | "
              f"{last:.1f} | {drops} | {(caps / f'{name}.pcap').stat().st_size // 1024} |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "captures"))
