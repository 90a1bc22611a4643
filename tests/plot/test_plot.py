"""qoe.plot: the seed paper's heatmaps, per-call and per-stream figures, and their commands.

The cell values are checked against medians computed here with NumPy on the raw rows
of each setting, and the colours against the P.800 ACR bins (Annex B, Table B.1: the
nearest integer score) of those medians.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

import qoe  # noqa: E402
from qoe.errors import InputError, QoEWarning  # noqa: E402
from qoe.outputs import atomic_output  # noqa: E402
from qoe.plot import (  # noqa: E402
    CATEGORY_COLOURS,
    call_series,
    cell_table,
    figures,
    frozen_mask,
    WATERFALL_PHASES,
    heatmap,
    page_waterfall,
    read_results,
    save,
    video_frames,
)
from qoe_cli.main import cli  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
VOICE = DATA / "voice" / "captures" / "down-b8_client.pcap"
VIDEO = DATA / "video" / "captures" / "h264-down-b8_client.pcap"
VIDEO_SDP = DATA / "video" / "captures" / "h264-down-b8.sdp"
CLIP = DATA / "video" / "reference" / "clip.ts"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

BUFFERS = [8, 64, 256, 16]  # unsorted on purpose: numeric labels are drawn sorted
WORKLOADS = ["noBG", "short-few", "long-many"]


@pytest.fixture
def runs(rng):
    """Five runs per (direction, buffer, workload), one failed run with no MOS, as a batch gives."""
    rows = []
    for d in ("user talks", "user listens"):
        for b in BUFFERS:
            for w in WORKLOADS:
                for r in range(5):
                    rows.append({"direction": d, "buffer": b, "workload": w, "run": r,
                                 "mos": float(rng.uniform(1.0, 4.5)), "ssim": float(rng.uniform(0, 1)),
                                 "error": None})
    rows.append({"direction": "user talks", "buffer": 8, "workload": "noBG", "run": 5, "mos": np.nan,
                 "ssim": np.nan, "error": "capture.pcap: not a capture"})
    return pd.DataFrame(rows)


def _p800(mos: float) -> str:
    """P.800 Annex B: the nearest of the five integer scores, by hand."""
    return {1: "bad", 2: "poor", 3: "fair", 4: "good", 5: "excellent"}[min(5, max(1, int(np.floor(mos + 0.5))))]


def test_cells_hold_the_median_of_each_setting_and_its_p800_colour(runs):
    cells = cell_table(runs, "buffer", "workload", split="direction")
    assert cells.x == (8, 16, 64, 256)
    assert cells.y == tuple(WORKLOADS)
    assert cells.parts == ("user talks", "user listens")
    cats = cells.category()
    for i, d in enumerate(cells.parts):
        for j, w in enumerate(cells.y):
            for k, b in enumerate(cells.x):
                raw = runs[(runs.direction == d) & (runs.workload == w) & (runs.buffer == b)].mos.to_numpy()
                raw = raw[~np.isnan(raw)]
                assert cells.count[i, j, k] == raw.size == 5  # the failed run is not counted
                assert cells.value[i, j, k] == pytest.approx(np.median(raw), abs=1e-12)
                assert cats[i, j, k] == _p800(np.median(raw))


def test_a_metric_that_is_not_a_mos_is_coloured_by_the_mos_column(runs):
    cells = cell_table(runs, "buffer", "workload", metric="ssim", stat="mean")
    sub = runs[(runs.workload == "noBG") & (runs.buffer == 64)]
    assert cells.colour_by == "mos"
    assert cells.value[0, 0, cells.x.index(64)] == pytest.approx(sub.ssim.mean())
    assert cells.colour_mos[0, 0, cells.x.index(64)] == pytest.approx(sub.mos.mean())
    assert cells.to_frame().shape[0] == len(BUFFERS) * len(WORKLOADS)


def test_orders_given_are_kept_and_absent_labels_give_empty_cells(runs):
    cells = cell_table(runs, "buffer", "workload", y_order=["long-many", "noBG", "cross"], x_order=[256, 8])
    assert cells.y == ("long-many", "noBG", "cross") and cells.x == (256, 8)
    assert np.isnan(cells.value[0, 2]).all() and (cells.count[0, 2] == 0).all()
    assert (cells.category()[0, 2] == "").all()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"x": "buffers", "y": "workload"}, "buffers"),
    ({"x": "buffer", "y": "workload", "metric": "direction"}, "not numeric"),
    ({"x": "buffer", "y": "workload", "metric": "ssim", "colour_by": None, "stat": "mode"}, "stat"),
])
def test_bad_columns_are_named(runs, kwargs, message):
    with pytest.raises(InputError, match=message):
        cell_table(runs, **kwargs)


def test_a_metric_without_a_mos_to_colour_by_is_refused(runs):
    with pytest.raises(InputError, match="colour"):
        cell_table(runs.drop(columns="mos"), "buffer", "workload", metric="ssim")


def test_the_heatmap_draws_each_cell_in_its_category_colour_with_its_median(runs):
    from matplotlib.colors import to_rgb

    fig = heatmap(runs, "buffer", "workload", split="direction")
    cells = cell_table(runs, "buffer", "workload", split="direction")
    axes = [ax for ax in fig.axes if ax.images]
    assert len(axes) == 2
    for i, ax in enumerate(axes):
        rgb = ax.images[0].get_array()
        texts = [t.get_text() for t in ax.texts]
        for j in range(len(cells.y)):
            for k in range(len(cells.x)):
                colour = CATEGORY_COLOURS[cells.category()[i, j, k]]
                assert np.allclose(rgb[j, k], to_rgb(colour))
                assert f"{cells.value[i, j, k]:.2f}" in texts


def test_figures_are_saved_atomically_in_the_format_of_their_suffix(runs, tmp_path):
    fig = heatmap(runs, "buffer", "workload")
    save(fig, tmp_path / "h.png")
    save(fig, tmp_path / "h.svg")
    assert (tmp_path / "h.png").read_bytes()[:8] == PNG_MAGIC
    assert b"<svg" in (tmp_path / "h.svg").read_bytes()[:400]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.png", "h.svg"]  # no temporary left
    with pytest.raises(InputError, match="cannot write a figure"):
        save(fig, tmp_path / "h.docx")


def test_an_output_never_replaces_an_input_and_a_failed_write_keeps_the_old_file(tmp_path):
    src = tmp_path / "results.csv"
    src.write_text("a\n1\n")
    with pytest.raises(InputError, match="over an input"), atomic_output(src, inputs=[src]):
        pass
    with pytest.raises(RuntimeError), atomic_output(src) as tmp:
        tmp.write_text("half")
        raise RuntimeError("the writer failed")
    assert src.read_text() == "a\n1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]
    with pytest.raises(InputError, match="does not exist"), atomic_output(tmp_path / "no" / "x.png"):
        pass


def test_results_tables_are_read_by_suffix(runs, tmp_path):
    runs.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "r.json").write_text(json.dumps(runs.head(3).replace({np.nan: None}).to_dict("records")))
    assert len(read_results(tmp_path / "r.csv")) == len(runs)
    assert list(read_results(tmp_path / "r.json").buffer) == list(runs.head(3).buffer)
    (tmp_path / "bad.csv").write_bytes(b"")
    with pytest.raises(InputError, match="bad.csv"):
        read_results(tmp_path / "bad.csv")
    with pytest.raises(InputError, match="must be"):
        read_results(tmp_path / "r.txt")


def test_frozen_frames_are_the_repeats_of_the_frame_on_screen():
    assert frozen_mask([-1, -1, 0, 1, 1, 1, 4, 4]).tolist() == [False, False, False, False, True, True, False, True]


@pytest.fixture(scope="module")
def voice_report():
    from qoe.voice import CallOptions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)  # one-way delay assumed: one capture only
        return qoe.score(VOICE, kind="voice", options={"voice": CallOptions(window_s=2.0)})


@pytest.mark.skipif(not VOICE.is_file(), reason="data/voice captures not present")
def test_a_call_direction_plots_one_point_per_window(voice_report):
    directions = list(voice_report)
    assert len(directions) == 2
    for d in directions:
        fig = call_series(d)
        delay_ax, loss_ax, mos_ax = fig.axes
        windows = d.network.windows
        assert len(mos_ax.lines[0].get_xdata()) == len(windows.mos) > 1
        assert np.allclose(mos_ax.lines[0].get_ydata(), windows.mos)
        assert [p.get_height() for p in loss_ax.patches] == pytest.approx(list(windows.ppl))
    assert [n for n, _ in figures(voice_report)] == [f"voice-{d.stream}" for d in directions]


@pytest.mark.skipif(not (VIDEO.is_file() and CLIP.is_file()), reason="data/video not present")
def test_a_video_stream_shades_exactly_its_frozen_frames():
    from qoe.video import VideoOptions

    rep = qoe.score(VIDEO, {"video": CLIP}, kind="video", options={"video": VideoOptions(sdp=VIDEO_SDP)})
    (stream,) = list(rep)
    fig = video_frames(stream)
    frozen = frozen_mask(stream.comparison.dist_index)
    assert int(frozen.sum()) == stream.frames_frozen > 0
    spans = np.flatnonzero(np.diff(np.concatenate([[0], frozen.astype(int), [0]]))).size // 2
    assert all(len(ax.patches) == spans for ax in fig.axes)
    assert [n for n, _ in figures(rep)] == [f"video-{stream.label}", f"video-rtp-{stream.label}"]


def test_rtp_video_facts_shade_each_w3c_freeze():
    # 30 frames 40 ms apart, a 200 ms gap (one W3C freeze: >= max(3 x 40, 40 + 150) ms), 10 more
    from types import SimpleNamespace

    from qoe.plot import video_rtp
    from qoe.video import header_facts

    t_ms = np.concatenate([np.arange(31) * 40, 1200 + 200 + np.arange(10) * 40])
    n = t_ms.size
    h = header_facts(np.arange(n), np.arange(n) * 3600, np.ones(n, bool), (t_ms * 1_000_000).astype(np.int64),
                     np.full(n, 500))
    assert h.freeze_count == 1
    fig = video_rtp(SimpleNamespace(headers=h, label="s"))
    assert all(len(ax.patches) == 1 for ax in fig.axes)
    assert sum(h.fps_series) == n


def test_qoe_report_draws_the_heatmap_of_a_results_file(runs, tmp_path):
    runs.to_csv(tmp_path / "results.csv", index=False)
    out = tmp_path / "heat.pdf"
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "results.csv"), "--x", "buffer", "--y", "workload",
                                   "--split", "direction", "--x-order", "256,8", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:5] == b"%PDF-"
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "results.csv"), "--x", "buffer", "--y", "queue",
                                   "-o", str(out)])
    assert res.exit_code == 2 and "queue" in res.output
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "results.csv"), "--x", "buffer", "--y", "workload",
                                   "-o", str(tmp_path / "results.csv")])
    assert res.exit_code == 2 and "over an input" in res.output


@pytest.mark.skipif(not VOICE.is_file(), reason="data/voice captures not present")
def test_qoe_plot_writes_one_figure_per_call_direction(tmp_path):
    res = CliRunner().invoke(cli, ["plot", str(VOICE), "--window-s", "2", "-o", str(tmp_path / "call.png")])
    assert res.exit_code == 0, res.output
    written = sorted(tmp_path.iterdir())
    assert len(written) == 2 and all(p.read_bytes()[:8] == PNG_MAGIC for p in written)
    assert all(p.name.startswith("call-voice-") and os.sep not in p.name[5:] for p in written)
    # at most --max-figures, the first items, and a note of the rest
    res = CliRunner().invoke(cli, ["plot", str(VOICE), "--max-figures", "1", "-o", str(tmp_path / "one.png")])
    assert res.exit_code == 0, res.output
    (first,) = tmp_path.glob("one-*.png")
    assert first.name == "one-" + written[0].name[len("call-"):]
    assert "qoe: note: 2 items have a figure; drew the first 1 (--max-figures)" in res.stderr


def test_figure_makers_draw_what_figures_draws_only_when_asked(voice_report):
    from qoe.plot import figure_makers

    makers = figure_makers(voice_report)
    drawn = figures(voice_report)
    assert [n for n, _ in makers] == [n for n, _ in drawn] and len(makers) >= 1
    fig = makers[0][1]()
    assert [len(ax.lines) for ax in fig.axes] == [len(ax.lines) for ax in drawn[0][1].axes]


BROWSER = DATA / "web" / "browser" / "captures"


def _bars(fig, phase):
    return [p for p in fig.axes[0].patches if p.get_gid() == phase]


@pytest.mark.skipif(not (BROWSER / "h1-idle.pcap").is_file(), reason="data/web/browser not present")
def test_a_page_waterfall_draws_each_phase_of_each_object_where_the_page_says():
    """Chromium's cleartext HTTP/1.1 page of 40 objects over 18 connections: one row per
    transaction in request order; its waiting bar spans request to first byte and its
    receiving bar first to last byte (s since the page's start), the connect bar of each
    object that opened its connection starts at the connection's SYN; the fully loaded line
    stands at plt_s."""
    from qoe.web import page_loads

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (page,) = page_loads(BROWSER / "h1-idle.pcap")
    fig = page_waterfall(page)
    assert WATERFALL_PHASES == ("connect", "waiting", "receiving")
    objects = sorted(page.transactions, key=lambda t: (t.request_start_ns, t.connection))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == len(objects) == 41 and labels[0] == "#0 200 GET /index.html"
    rows = {round(b.get_y() + b.get_height() / 2): b for b in _bars(fig, "receiving")}
    waits = {round(b.get_y() + b.get_height() / 2): b for b in _bars(fig, "waiting")}
    assert len(rows) == len(waits) == 41
    for i, t in enumerate(objects):
        assert rows[i].get_x() == pytest.approx((t.response_start_ns - page.start_ns) / 1e9, abs=1e-9)
        assert rows[i].get_width() == pytest.approx((t.response_end_ns - t.response_start_ns) / 1e9, abs=1e-9)
        assert waits[i].get_x() == pytest.approx((t.request_start_ns - page.start_ns) / 1e9, abs=1e-9)
    opened = [t for t in objects if not t.reused]
    connects = _bars(fig, "connect")
    assert len(connects) == len(opened) == 18
    assert sorted(b.get_x() for b in connects) == pytest.approx(
        sorted((t.connection_start_ns - page.start_ns) / 1e9 for t in opened), abs=1e-9)
    assert page.plt_s in [line.get_xdata()[0] for line in fig.axes[0].get_lines()]


@pytest.mark.skipif(not (BROWSER / "h2-idle.pcap").is_file(), reason="data/web/browser not present")
def test_an_https_page_is_drawn_with_its_key_log_only(tmp_path):
    """Without the key log an HTTPS page shows its connections, not its objects: no waterfall
    (figures() leaves it out, page_waterfall says why); with it, qoe plot --keylog draws it."""
    from qoe.web import WebOptions, page_loads

    cap, keys = BROWSER / "h2-idle.pcap", BROWSER / "h2-idle.keylog"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (hidden,) = page_loads(cap)
        assert figures(qoe.score(cap, kind="web")) == []
        names = [n for n, _ in figures(qoe.score(cap, kind="web", keylog=keys))]
    assert names == ["web-page-0"]
    with pytest.raises(InputError, match="no object with a request or response time to draw .*give keylog="):
        page_waterfall(hidden)
    res = CliRunner().invoke(cli, ["plot", str(cap), "--keylog", str(keys), "-o", str(tmp_path / "page.png")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "page.png").read_bytes()[:8] == PNG_MAGIC
    res = CliRunner().invoke(cli, ["plot", str(cap), "-o", str(tmp_path / "none.png")])
    assert res.exit_code == 2 and "HTTPS needs --keylog" in res.output


@pytest.mark.skipif(not (BROWSER / "h2-idle.har").is_file(), reason="data/web/browser not present")
def test_qoe_plot_draws_the_waterfall_of_a_browsers_har(tmp_path):
    """The browser's own HAR (Playwright's, beside the capture) is drawn like a capture's page:
    one row per entry with its times (Chromium's 40 entries)."""
    from qoe.plot import figure_makers
    from qoe.web import pages_from_har
    from qoe.web.har import read_har

    pages = pages_from_har(read_har(BROWSER / "h2-idle.har"))
    ((name, make),) = figure_makers(pages)
    assert name == "web-page-0" and len(make().axes[0].get_yticklabels()) == 40
    res = CliRunner().invoke(cli, ["plot", str(BROWSER / "h2-idle.har"), "-o", str(tmp_path / "har.png")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "har.png").read_bytes()[:8] == PNG_MAGIC
