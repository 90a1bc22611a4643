"""``qoe demo``: score the bundled samples and print what the models say."""

from __future__ import annotations

import click

from qoe.demo import demo_sections
from qoe_cli._output import table


@click.command("demo")
@click.argument("data_dir", type=click.Path(file_okay=False), default="data")
def demo(data_dir):
    """Run the models on the bundled samples in DATA_DIR (default: data)."""
    for section in demo_sections(data_dir):
        click.echo(f"== {section.title}")
        if section.note:
            click.echo(section.note)
        click.echo(table(section.rows, digits=2))
