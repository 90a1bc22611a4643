"""``qoe video ...``: video quality of decoded files (PSNR, SSIM, MOS)."""

from __future__ import annotations

import click

from qoe.report import to_json
from qoe.video import PSNR_TABLES, SSIM_VARIANTS, compare
from qoe_cli._output import emit, format_option, output_option, render, render_pairs


@click.group("video")
def video() -> None:
    """Video quality: PSNR, SSIM and MOS of decoded video."""


@video.command("compare")
@click.argument("ref", type=click.Path(exists=True, dir_okay=False))
@click.argument("dist", type=click.Path(exists=True, dir_okay=False))
@click.option("--per-frame", is_flag=True, help="One row per reference frame instead of the clip summary.")
@click.option("--variant", type=click.Choice(list(SSIM_VARIANTS)), default="wang", show_default=True,
              help="SSIM: wang (Wang et al. 2004, = scikit-image), ssim.m (Wang's downsampling, as VMAF), "
                   "ffmpeg (FFmpeg/x264 8×8 block SSIM).")
@click.option("--planes", type=click.Choice(["y", "yuv"]), default="y", show_default=True,
              help="Luma only, or Y, U, V weighted by pixel counts (FFmpeg's psnr_avg / All).")
@click.option("--pairing", type=click.Choice(["pts", "index"]), default="pts", show_default=True,
              help="pts: the distorted frame shown at each reference time (last with PTS ≤ t); index: i with i.")
@click.option("--psnr-table", type=click.Choice(list(PSNR_TABLES)), default="zinner2010", show_default=True,
              help="PSNR → MOS table: Zinner et al. 2010 (the seed paper's) or EvalVid's.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Threads per plane for SSIM (scores do not depend on it).")
@format_option
@output_option
def compare_cmd(ref, dist, per_frame, variant, planes, pairing, psnr_table, threads, fmt, output):
    """PSNR, SSIM and MOS of DIST against the reference REF, frame by frame.

    Frames are decoded (any format FFmpeg reads) as 8-bit Y, U, V planes and paired by
    presentation time: for each reference frame at time t, the distorted frame on screen is
    the last with PTS ≤ t. The clip PSNR is FFmpeg's (PSNR of the mean MSE); the clip MOS
    is the MOS of the median frame score. Identical frames have PSNR inf (null in JSON)."""
    res = compare(ref, dist, variant=variant, planes=planes, pairing=pairing, psnr_table=psnr_table,
                  threads=threads)
    if fmt == "json":
        emit(to_json(res.to_dict(frames=per_frame)) + "\n", output, inputs=[ref, dist])
    elif per_frame:
        emit(render(res.frame_records(), fmt, digits=4), output, inputs=[ref, dist])
    else:
        emit(render_pairs(res.to_record(), fmt, digits=4), output, inputs=[ref, dist])
