"""``qoe demo``: score the bundled samples, print what the models say, draw the voice heatmap."""

from __future__ import annotations

import click

from qoe.demo import demo_heatmap, demo_sections
from qoe_cli._output import table


@click.command("demo")
@click.argument("data_dir", type=click.Path(file_okay=False), default="data")
@click.option("--heatmap", "heatmap_path", type=click.Path(dir_okay=False), default="qoe-demo-heatmap.png",
              show_default=True, help="Where to write the voice heatmap (png, svg, pdf); '' for none.")
def demo(data_dir, heatmap_path):
    """Run the models on the bundled samples in DATA_DIR (default: data): the E-model and
    G.1030 scales, every voice call, video stream and page load; and draw the seed paper's
    voice heatmap (median MOS per buffer and load, user talks / listens)."""
    voice = None
    for section in demo_sections(data_dir):
        click.echo(f"== {section.title}")
        if section.note:
            click.echo(section.note)
        click.echo(table(section.rows, digits=2))
        if section.title.startswith("Voice calls"):
            voice = section
    if heatmap_path and voice is not None and voice.rows:
        from qoe.plot import save

        save(demo_heatmap(voice), heatmap_path)
        click.echo(f"== heatmap: {heatmap_path}")
