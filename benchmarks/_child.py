"""What the web benchmarks share: a measurement run in a fresh Python, its result read as JSON.

Not a benchmark itself (``run_all.py`` skips files starting with ``_``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_json(script: str, *args: str) -> dict:
    """Run ``script`` (``python -c``) with ``args`` in a fresh Python with this tree's ``src`` on
    the path; the last line it prints, as JSON (what it printed before is its own business)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])
