"""``qoe batch``: score every row of a manifest (qoe.batch.run) and write the results."""

from __future__ import annotations

import click

import qoe.batch


@click.command("batch")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, writable=True),
              help="Results file, written as rows complete: .csv or .parquet (needs pyarrow).")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Local worker processes (default: every core; 0: in this process, one row after another).")
@click.option("--scheduler", default=None, metavar="ADDR",
              help="Run on a Dask cluster instead: its scheduler's address (tcp://host:8786).")
@click.option("--resume", is_flag=True,
              help="Skip the rows OUTPUT already holds without error (failed rows run again).")
@click.option("--table", default="results", show_default=True,
              help="Table of each report to collect: results (one row per call direction, stream or page) or a "
                   "detail table (windows, plays, frames, objects).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show a progress bar.")
def batch(manifest, output, workers, scheduler, resume, table, progress):
    """Score every row of MANIFEST (a CSV file) and write one row per result to OUTPUT.

    MANIFEST columns: capture (required), reference (several separated by ';'),
    sender_capture, kind, ssrc; columns named after options (jitter_buffer, window_s,
    idle_gap_s, ... or video.jitter_buffer for one kind's); any other column is a label
    carried to the results. Relative paths are taken from MANIFEST's folder. A row that
    cannot be scored gets its reason in the error column; the batch goes on."""
    df = qoe.batch.run(manifest, workers=workers, scheduler=scheduler, resume=resume or None, progress=progress,
                       output=output, table=table)
    failed = df.drop_duplicates("row")["error"].notna().sum() if len(df) else 0
    rows = df["row"].nunique() if len(df) else 0
    click.echo(f"{rows} rows, {len(df)} results, {failed} failed: {output}")
    if failed:
        first = df.loc[df["error"].notna()].drop_duplicates("row").head(3)
        for _, r in first.iterrows():
            click.echo(f"  row {r['row']}: {r['error']}", err=True)
