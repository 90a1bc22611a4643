"""What ``qoe demo`` shows: the models at work on the bundled samples in ``data/``.

Kept in the library (not the CLI) so that a notebook can call :func:`demo_sections` and get
the same tables as records.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qoe.errors import InputError
from qoe.report import brief
from qoe.voice import emodel
from qoe.web import g1030

__all__ = ["Section", "demo_sections", "demo_heatmap"]

#: One-way delays of the seed paper's access testbed (Table 2: uplink/downlink queueing delays
#: of 8…256-packet buffers) plus a few round numbers, in ms.
DEMO_DELAYS_MS = (0, 6, 50, 98, 150, 195, 250, 400, 788, 1583, 3167)
DEMO_LOSS_PCT = (0.0, 1.0, 3.0)
#: Median page load times of the seed paper's Figure 10 range from 0.56 s to over 20 s.
DEMO_PLT_S = (0.56, 0.85, 1.0, 1.3, 2.0, 3.8, 6.0, 9.0, 20.0)
#: The columns of the voice-call section: a brief view of each result's record (same names).
_CALL_COLUMNS = ("direction", "expected", "network_lost", "late_lost", "mouth_to_ear_ms", "ta_ms", "id",
                 "mos_network", "mos_network_min", "mos_cole_rosenbluth", "mos_lqo", "z1", "z2", "mos")


@dataclass(frozen=True, slots=True)
class Section:
    """A titled table of records."""

    title: str
    rows: list[dict[str, Any]]
    note: str = ""


def _emodel_sweep() -> Section:
    d = np.asarray(DEMO_DELAYS_MS, dtype=float)[:, None]
    loss = np.asarray(DEMO_LOSS_PCT)
    # the sweep goes past G.107 Table 3's 500 ms on purpose (bufferbloat): said in the section's note
    res = emodel.r_factor(mouth_to_ear_ms=d, ppl=loss, codec="G.711-plc", out_of_range="ignore")
    simple = emodel.simplified_r(d, loss / 100.0, codec="G.711")
    rows = []
    for i, delay in enumerate(DEMO_DELAYS_MS):
        row: dict[str, Any] = {"one_way_ms": delay, "Id": float(res.id_[i, 0])}
        for j, p in enumerate(DEMO_LOSS_PCT):
            row[f"R@{p:g}%"] = float(res.r[i, j])
            row[f"MOS@{p:g}%"] = float(res.mos[i, j])
        row["MOS C&R@0%"] = float(simple.mos[i, 0])
        rows.append(row)
    return Section(
        "E-model (G.107), G.711 with PLC, one-way delay × random loss",
        rows,
        "Ta = T = one-way delay, Tr = 2·delay, other parameters at their G.107 defaults; "
        "'C&R' is the simplified estimator of Cole & Rosenbluth (2001). Delays past 500 ms are "
        "outside G.107 Table 3's permitted range: computed, not validated.",
    )


def _g1030_table() -> Section:
    rows = []
    access = g1030.mos(DEMO_PLT_S, preset="access")
    backbone = g1030.mos(DEMO_PLT_S, preset="backbone")
    for t, a, b in zip(DEMO_PLT_S, access, backbone):
        rows.append({"plt_s": t, "MOS access": float(a), "MOS backbone": float(b)})
    return Section(
        "Web QoE (G.1030 one-page model, seed paper §9.1)",
        rows,
        "access: 0.56 s → 5, backbone: 0.85 s → 5, both 6 s → 1.",
    )


def _scenarios(manifest: Path) -> list[dict[str, Any]]:
    """The testbed's record of each run: one JSON object per line of ``scenarios.jsonl``."""
    return [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]


def _call_scores(data: Path) -> Section:
    """The bundled voice calls (data/voice), scored per direction with both captures and the references."""
    from qoe.api import score  # noqa: PLC0415 - imports the voice scorers (SciPy) only when run

    title = "Voice calls (data/voice): network-side G.107 and the seed paper's full-reference score"
    manifest = data / "voice" / "captures" / "scenarios.jsonl"
    if not manifest.is_file():
        return Section(title, [], f"{manifest} not found: no call samples to score.")
    rows = []
    caps = manifest.parent
    for sc in _scenarios(manifest):
        refs = [data / "voice" / st["reference"] for st in sc["streams"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = score(caps / sc["client_capture"], reference=[r for r in refs if r.is_file()],
                           sender_capture=caps / sc["server_capture"])
        for rec in report.to_records(brief=True):
            rows.append({
                "scenario": sc["scenario"],
                "buffer": f"{sc['buffer_packets']} {'pkt' if sc['queue_unit'] == 'packets' else 'B'}",
                "load": sc["load"],
                **brief(rec, _CALL_COLUMNS),
            })
    return Section(
        title,
        rows,
        "User = client (the capture at the user's end; the server's capture gives one-way delays). "
        "network_lost/late_lost: packets lost in the network / late for the (adaptive) jitter buffer, of "
        "expected; mouth_to_ear_ms: of the direction; ta_ms: the delay Id uses (mean of both directions); "
        "mos_network/mos_network_min: G.107 over the stream / worst 10 s window; mos_cole_rosenbluth: "
        "Cole & Rosenbluth; mos_lqo: P.862 of the located reference; mos: of z = max(0, z1 - z2) (seed "
        "paper §7.1). 'B' buffers are tbf byte limits (N x 1514 B).",
    )


#: The columns of the video section: a brief view of each result's record (same names).
_VIDEO_COLUMNS = ("transport", "packets_lost", "frames_frozen", "freeze_s", "psnr_db", "ssim", "mos_psnr", "mos_ssim")


def _video_scores(data: Path) -> Section:
    """The bundled video streams (data/video), scored against the clip that was sent."""
    from qoe.api import score  # noqa: PLC0415 - each section loads its scorers when it is shown

    title = "RTP/UDP video (data/video): frames on screen against the reference, PSNR/SSIM → MOS"
    manifest = data / "video" / "captures" / "manifest.json"
    if not manifest.is_file():
        return Section(title, [], f"{manifest} not found: no video samples to score.")
    doc = json.loads(manifest.read_text())
    rows = []
    for sc in doc["scenarios"]:
        cap = manifest.parent / sc["receiver_capture"]
        ref = data / "video" / sc["reference"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = score(cap, reference={"video": ref}, kind="video")
        for rec in report.to_records(brief=True):
            rows.append({"scenario": sc["scenario"], "buffer": f"{sc['buffer_packets']} pkt", "load": sc["load"],
                         **brief(rec, _VIDEO_COLUMNS)})
    return Section(
        title,
        rows,
        "Each reference frame is compared with the received frame on screen at its time (the last decoded "
        "with pts <= t; a lost frame freezes the previous one). psnr_db: FFmpeg's clip PSNR (of the mean MSE, "
        "luma); ssim: Wang et al. 2004, mean; mos_*: Zinner et al. 2010 table on the median frame (seed paper "
        "§8.1). No retransmission: loss is the impairment.",
    )


#: The columns of the web section: a brief view of each page's record (same names).
_WEB_COLUMNS = ("scheme", "objects", "connections", "plt_s", "ttfb_s", "rtt_s", "round_trips", "retransmissions",
                "loss_wait_s", "diagnosis", "mos")


def _web_scores(data: Path) -> Section:
    """The bundled page loads (data/web), from the client's capture alone."""
    from qoe.web.pages import WebOptions, page_loads  # noqa: PLC0415 - each section loads its scorers when it is shown

    title = "Web page loads (data/web): PLT from the client's capture, the seed paper's diagnosis, G.1030 MOS"
    manifest = data / "web" / "captures" / "scenarios.jsonl"
    if not manifest.is_file():
        return Section(title, [], f"{manifest} not found: no web samples to score.")
    rows = []
    for sc in _scenarios(manifest):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pages = page_loads(manifest.parent / sc["client_capture"], options=WebOptions(preset="access"))
        for page in pages:
            unit = "pkt" if sc.get("queue_unit") == "packets" else "B"
            rows.append({"scenario": sc["scenario"], "buffer": f"{sc['buffer_packets']} {unit}", "load": sc["load"],
                         **brief(page.to_record(), _WEB_COLUMNS)})
    return Section(
        title,
        rows,
        "plt_s: first DNS query / SYN / request to the last byte (fully loaded); round_trips: on the serial "
        "chain; loss_wait_s: time waiting for retransmissions; diagnosis: RTT- or loss-dominated (seed paper "
        "§9.2); mos: G.1030 with the access bounds (0.56 s → 5, 6 s → 1).",
    )


def demo_heatmap(section: Section):  # noqa: ANN201 - matplotlib is optional
    """The seed paper's Figure 7 layout for the voice section's rows: median MOS per buffer
    and load, "user talks" above "user listens" (:func:`qoe.plot.heatmap`)."""
    from qoe.plot import heatmap  # noqa: PLC0415 - matplotlib is optional (the plot extra)

    rows = [{**r, "buffer": int(r["buffer"].split()[0])} for r in section.rows if r.get("direction")]
    if not rows:
        raise InputError("no scored call direction to draw")
    loads = [w for w in ("both", "down", "up", "none") if any(r["load"] == w for r in rows)]
    return heatmap(rows, "buffer", "load", metric="mos", split="direction", y_order=loads,
                   title="Bundled voice calls: median MOS (seed paper §7.1), as its Figure 7")


def demo_sections(data_dir: str | Path) -> list[Section]:
    """The tables ``qoe demo`` prints, computed on the samples under ``data_dir``.

    Raises
    ------
    InputError
        If ``data_dir`` is not a directory.
    """
    data = Path(data_dir)
    if not data.is_dir():
        raise InputError(f"{data}: not a directory; give the folder holding the bundled samples (data/)")
    return [_emodel_sweep(), _g1030_table(), _call_scores(data), _video_scores(data), _web_scores(data)]
