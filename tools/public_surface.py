"""Count the public surface: the ``__all__`` names of every public ``qoe`` module.

A public module has no dotted component starting with ``_`` (as tests/test_public_api.py
walks them). Prints each module's count, then the totals: modules, ``__all__`` entries
(a name a package re-exports counts again), distinct names and distinct objects::

    python tools/public_surface.py            # per module and totals
    python tools/public_surface.py --names    # the names, as JSON
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

import qoe


def public_modules() -> list[str]:
    names = {"qoe"}
    for info in pkgutil.walk_packages(qoe.__path__, prefix="qoe."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.add(info.name)
    return sorted(names)


def main() -> None:
    rows = {m: list(getattr(importlib.import_module(m), "__all__", [])) for m in public_modules()}
    if "--names" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    objects = set()
    for m, names in rows.items():
        mod = importlib.import_module(m)
        for n in names:
            obj = getattr(mod, n, None)
            objects.add((getattr(obj, "__module__", m) if callable(obj) else m, n))
        print(f"{len(names):4d} {m}")
    print(f"modules {len(rows)}; __all__ entries {sum(map(len, rows.values()))}; "
          f"distinct names {len({n for v in rows.values() for n in v})}; distinct objects {len(objects)}")


if __name__ == "__main__":
    main()
