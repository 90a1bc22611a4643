"""``qoe web ...``: web-browsing QoE from page load times."""

from __future__ import annotations

import click

from qoe.web import g1030
from qoe_cli._output import emit, format_option, output_option, render


@click.group("web")
def web() -> None:
    """Web-browsing QoE (ITU-T G.1030)."""


@web.command("g1030")
@click.argument("plt_seconds", nargs=-1, required=True, type=float)
@click.option("--preset", type=click.Choice(list(g1030.PRESETS)), default="access", show_default=True,
              help="Bounds of the seed paper §9.1: access (0.56 s → 5) or backbone (0.85 s → 5); 6 s → 1.")
@click.option("--t-min", type=float, default=None, help="Load time scored 5 (s); overrides the preset.")
@click.option("--t-max", type=float, default=None, help="Load time scored 1 (s); overrides the preset.")
@format_option
@output_option
def g1030_cmd(plt_seconds, preset, t_min, t_max, fmt, output):
    """MOS of one or more page load times (seconds), G.1030 one-page model."""
    scores = g1030.mos(list(plt_seconds), preset=preset, t_min=t_min, t_max=t_max)
    rows = [{"plt_s": t, "mos": float(m)} for t, m in zip(plt_seconds, scores)]
    emit(render(rows, fmt, digits=3), output)
