"""``qoe pesq``: perceptual speech quality (ITU-T P.862 / P.862.2) of two recordings."""

from __future__ import annotations

import click

from qoe.voice.p862 import pesq_files
from qoe_cli._output import emit, format_option, output_option, render, render_pairs


@click.command("pesq")
@click.argument("ref", type=click.Path(exists=True, dir_okay=False))
@click.argument("deg", type=click.Path(exists=True, dir_okay=False))
@click.option("--mode", type=click.Choice(["nb", "wb"]), default="nb", show_default=True,
              help="nb: P.862 (handset, IRS filter) mapped by P.862.1; wb: P.862.2 wide-band, 16 kHz only.")
@click.option("--fs", type=click.Choice(["8000", "16000"]), default=None,
              help="Resample both files to this rate first (polyphase). Default: keep the files' rate.")
@click.option("--frames", is_flag=True,
              help="Print the per-frame disturbance profile (where the degradation lies) instead of the summary.")
@format_option
@output_option
def pesq(ref, deg, mode, fs, frames, fmt, output):
    """MOS-LQO of DEG against the reference REF (PESQ, ITU-T P.862 / P.862.1 / P.862.2).

    Both files must be mono at 8000 or 16000 Hz (or give --fs). Prints MOS-LQO, the raw
    P.862 score (nb), the delay of each utterance and the speech level of both files."""
    res = pesq_files(ref, deg, mode=mode, fs=None if fs is None else int(fs))
    if frames:
        emit(render(res.frame_records(), fmt, digits=3), output, inputs=[ref, deg])
    else:
        emit(render_pairs(res.to_dict(frames=False), fmt, digits=3), output, inputs=[ref, deg])
