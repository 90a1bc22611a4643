"""Reading a batch manifest: its rows, which columns are inputs, options or labels, each row's key and task.

A manifest is a CSV file, a :class:`pandas.DataFrame` or a list of mappings, one row per
thing to score. Its columns are

* the inputs of :func:`qoe.score`: ``capture`` (required), ``reference``,
  ``sender_capture``, ``kind`` and ``ssrc``;
* options: a column named after a field of :class:`qoe.voice.CallOptions`,
  :class:`qoe.video.VideoOptions`, :class:`qoe.web.WebOptions` or
  :class:`qoe.video.has.StreamingOptions` (given to :func:`qoe.score` as a keyword; a
  name two kinds share, ``jitter_buffer``, is an error naming the two spellings), or
  ``<kind>.<field>`` for one kind's option (``video.jitter_buffer``);
* labels: any other column (buffer, workload, direction, run, ...), carried through to
  the results untouched.

An empty cell (``""``, None, NaN) is "not given": the input is absent, the option keeps
its default. Tasks carry paths and plain values only, never data.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qoe.errors import InputError
from qoe.report import to_plain

__all__: list[str] = []

#: The manifest columns that are inputs of qoe.score.
INPUTS = ("capture", "reference", "sender_capture", "kind", "ssrc")
#: Input columns that hold file paths (resolved against the manifest's folder).
PATH_INPUTS = ("capture", "reference", "sender_capture")
#: Option fields that hold file paths (VideoOptions.sdp: an SDP file), resolved like the inputs.
PATH_OPTIONS = frozenset({"sdp"})
#: Columns the batch adds to each result row; a manifest may not use these names.
ADDED = ("row", "row_key", "error", "warnings", "report_notes", "seconds", "cpu_seconds")
#: In a text cell, several references are separated by this character (a list is taken as it is).
REFERENCE_SEPARATOR = ";"
KINDS = ("voice", "video", "web")


def is_missing(value: Any) -> bool:
    """Whether a manifest cell is empty (None, NaN, pandas' NA, or a blank string)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return not value.strip()
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return bool(value != value)  # NaN-like scalars (numpy floats)
    except (TypeError, ValueError):  # arrays, lists
        return False


def _option_names() -> dict[str, tuple[str, ...]]:
    from qoe.video import VideoOptions  # noqa: PLC0415 - the scorers are imported only when a batch runs
    from qoe.video.has import StreamingOptions  # noqa: PLC0415
    from qoe.voice import CallOptions  # noqa: PLC0415
    from qoe.web import WebOptions  # noqa: PLC0415

    return {"voice": CallOptions.names(), "video": VideoOptions.names(), "web": WebOptions.names(),
            "streaming": StreamingOptions.names()}


@dataclass(frozen=True)
class Manifest:
    """The rows of a manifest and what its columns are.

    Attributes
    ----------
    columns : tuple of str
        Every column, in the manifest's order.
    rows : tuple of dict
        One per manifest row: its non-empty cells as given (plain Python).
    root : Path
        The folder relative paths are resolved against.
    options : dict
        Option column -> the (kind, field name) pairs it sets: one, or for a key option
        named bare (``keylog``, ``srtp_keys``: :data:`qoe.api.SHARED_OPTIONS`) one per kind
        that takes it.
    labels : tuple of str
        The label columns.
    source : str
        What the manifest was (a path, "DataFrame", "list"), for messages.
    """

    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    root: Path
    options: dict[str, tuple[tuple[str, str], ...]]
    labels: tuple[str, ...]
    source: str

    def __len__(self) -> int:
        return len(self.rows)


def read_manifest(manifest: Any, *, root: str | os.PathLike[str] | None = None) -> Manifest:
    """A :class:`Manifest` from a CSV path, a DataFrame or a sequence of mappings.

    Raises
    ------
    InputError
        A file that cannot be read, no ``capture`` column, a row without a capture, a
        column named like a column the batch adds, or an unknown ``<kind>.<field>`` option.
    """
    import pandas as pd  # noqa: PLC0415 - pandas only when a batch runs

    if isinstance(manifest, (str, os.PathLike)):
        path = Path(manifest)
        if not path.is_file():
            raise InputError(f"manifest {path}: no such file")
        try:
            # only empty cells are missing: a label "NA" or "None" stays a string
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise InputError(f"manifest {path}: not a readable CSV file ({exc})") from exc
        source, base = str(path), path.resolve().parent
        records = frame.to_dict("records")
        columns = [str(c) for c in frame.columns]
    elif type(manifest).__name__ == "DataFrame" and hasattr(manifest, "to_dict"):
        source, base = "DataFrame", Path.cwd()
        records = manifest.to_dict("records")
        columns = [str(c) for c in manifest.columns]
    elif isinstance(manifest, Sequence) and not isinstance(manifest, (str, bytes)):
        source, base = "list", Path.cwd()
        records = list(manifest)
        bad = [i for i, r in enumerate(records) if not isinstance(r, Mapping)]
        if bad:
            raise InputError(f"manifest list: row {bad[0]} is a {type(records[bad[0]]).__name__}, not a mapping")
        columns = list(dict.fromkeys(str(k) for r in records for k in r))
    else:
        raise InputError(
            f"manifest: give a CSV file path, a pandas DataFrame or a list of dicts; given a {type(manifest).__name__}"
        )
    if root is not None:
        base = Path(root).resolve()
    if "capture" not in columns:
        raise InputError(f"manifest {source}: no 'capture' column; columns: {', '.join(columns) or 'none'}")
    taken = [c for c in columns if c in ADDED]
    if taken:
        raise InputError(f"manifest {source}: column(s) {', '.join(taken)} are added by the batch; rename them")
    options, labels = _classify(columns, source)
    rows = []
    for i, rec in enumerate(records):
        row = {str(k): to_plain(v) for k, v in rec.items() if not is_missing(v)}
        if "capture" not in row:
            raise InputError(f"manifest {source}: row {i} has no capture")
        if isinstance(row.get("reference"), str) and REFERENCE_SEPARATOR in row["reference"]:
            row["reference"] = [p.strip() for p in row["reference"].split(REFERENCE_SEPARATOR) if p.strip()]
        rows.append(row)
    return Manifest(tuple(columns), tuple(rows), base, options, labels, source)


def _classify(columns: Sequence[str], source: str) -> tuple[dict[str, tuple[tuple[str, str], ...]], tuple[str, ...]]:
    from qoe.api import SHARED_OPTIONS  # noqa: PLC0415 - as _option_names: only when a manifest is read

    names = _option_names()
    options: dict[str, tuple[tuple[str, str], ...]] = {}
    labels = []
    for c in columns:
        if c in INPUTS:
            continue
        prefix, dot, field = c.partition(".")
        if dot and prefix in names:
            if field not in names[prefix]:
                raise InputError(
                    f"manifest {source}: column {c!r}: {prefix} has no option {field!r}; "
                    f"its options are: {', '.join(names[prefix])}"
                )
            options[c] = ((prefix, field),)
        elif any(c in n for n in names.values()):
            owners = [k for k, n in names.items() if c in n]
            if len(owners) > 1 and c not in SHARED_OPTIONS:
                raise InputError(
                    f"manifest {source}: column {c!r} is an option of {' and '.join(owners)}: name it "
                    + " or ".join(f"{k}.{c}" for k in owners)
                )
            options[c] = tuple((k, c) for k in owners)
        else:
            labels.append(c)
    spelled: dict[tuple[str, str], str] = {}
    for c, keys in options.items():
        for key in keys:
            if key in spelled:
                raise InputError(f"manifest {source}: columns {spelled[key]!r} and {c!r} are the same option: keep one")
            spelled[key] = c
    return options, tuple(labels)


def row_key(row: Mapping[str, Any]) -> str:
    """The identity of a manifest row: a hash of its non-empty cells (names and values).

    Two rows with the same capture, references, options and labels have the same key, in
    any column order; it does not depend on the row's position, so a manifest may grow or
    be reordered between runs.
    """
    text = json.dumps({k: row[k] for k in sorted(row)}, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]  # 64 bits: collisions need ~4e9 rows


def _resolve(value: Any, root: Path) -> Any:
    if isinstance(value, (list, tuple)):
        return [_resolve(v, root) for v in value]
    if isinstance(value, str):
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else root / p)
    return value


def make_task(manifest: Manifest, index: int, *, table: str) -> dict[str, Any]:
    """What a worker needs to score row ``index``: resolved paths and plain values only."""
    row = manifest.rows[index]
    task: dict[str, Any] = {
        "row": index,
        "row_key": row_key(row),
        "capture": _resolve(row["capture"], manifest.root),
        "reference": _resolve(row["reference"], manifest.root) if "reference" in row else None,
        "sender_capture": _resolve(row["sender_capture"], manifest.root) if "sender_capture" in row else None,
        "kind": str(row.get("kind", "auto")),
        "ssrc": row.get("ssrc"),
        "options": {},
        "table": table,
    }
    for column, keys in manifest.options.items():
        if column not in row:
            continue
        for kind, field in keys:
            value = _resolve(row[column], manifest.root) if field in PATH_OPTIONS else row[column]
            task["options"].setdefault(kind, {})[field] = value
    return task


def option_objects(options: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Per-kind option values -> the options objects (a mapping field given as JSON text is parsed)."""
    from qoe.video import VideoOptions  # noqa: PLC0415 - the options classes load their scorers, only when a batch runs
    from qoe.video.has import StreamingOptions  # noqa: PLC0415
    from qoe.voice import CallOptions  # noqa: PLC0415
    from qoe.web import WebOptions  # noqa: PLC0415

    classes = {"voice": CallOptions, "video": VideoOptions, "web": WebOptions, "streaming": StreamingOptions}
    return {kind: classes[kind]().replace(**parse_fields(classes[kind], values)) for kind, values in options.items()}


def parse_fields(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the text of mapping-valued fields (``emodel_params``) parsed as JSON."""
    mapping_fields = {
        f.name for f in dataclasses.fields(cls)
        if f.default_factory is not dataclasses.MISSING and isinstance(f.default_factory(), Mapping)
    }
    out = dict(values)
    for name in mapping_fields & set(out):
        if isinstance(out[name], str):
            try:
                out[name] = json.loads(out[name])
            except json.JSONDecodeError as exc:
                raise InputError(f"option {name}: not a JSON object: {out[name]!r}") from exc
    return out
