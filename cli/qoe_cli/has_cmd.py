"""``qoe has ...``: adaptive streaming (DASH, HLS) sessions from captures, their P.1203 input and QoE."""

from __future__ import annotations

import click

from qoe.report import to_json
from qoe.video.has import PRESETS, StreamingOptions, p1203_input, sessions
from qoe_cli._flags import renamed
from qoe_cli._output import emit, format_option, output_option, render
from qoe_cli._stdin import CAPTURE

_TABLES = ("results", "segments", "seconds", "stalls", "played")


def streaming_options(f):  # noqa: ANN001, ANN201 - a Click decorator
    """The StreamingOptions flags (their names are the option fields)."""
    for opt in reversed([
        click.option("--startup-threshold-s", type=click.FloatRange(min=0), default=1.9,
                     show_default=True, help="Streaming: media (s) buffered when playback starts (the player model)."),
        click.option("--rebuffer-threshold-s", type=click.FloatRange(min=0), default=1.9,
                     show_default=True, help="Streaming: media (s) buffered when playback resumes after a stall."),
        click.option("--append-delay-s", type=click.FloatRange(min=0), default=0.0,
                     show_default=True, help="Streaming: time (s) from a segment's last byte until it is playable."),
        click.option("--qoe-preset", type=click.Choice(list(PRESETS)), default="pensieve-lin", show_default=True,
                     help="Streaming: parameters of the headline linear QoE (Yin et al. 2015; Mao et al. 2017)."),
        click.option("--rebuffer-penalty", type=click.FloatRange(min=0), default=None,
                     help="Streaming: override μ (per second of stall) of the preset."),
        click.option("--smooth-penalty", type=click.FloatRange(min=0), default=None,
                     help="Streaming: override λ (per unit of quality change) of the preset."),
        click.option("--startup-penalty", type=click.FloatRange(min=0), default=None,
                     help="Streaming: override μ_s (per second of startup) of the preset."),
        click.option("--manifest", "manifests", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="Streaming, encrypted sessions: the presentation's MPD, or its HLS master and media "
                          "playlists (repeat): segments are inferred from TLS sizes and timing, labelled inferred."),
        click.option("--opaque-port", "opaque_ports", multiple=True, type=click.IntRange(1, 65535),
                     help="Streaming: server port read as encrypted for the inference (default 443; repeat)."),
        renamed("--startup-threshold", "--startup-threshold-s", type=click.FloatRange(min=0)),
        renamed("--rebuffer-threshold", "--rebuffer-threshold-s", type=click.FloatRange(min=0)),
        renamed("--append-delay", "--append-delay-s", type=click.FloatRange(min=0)),
        click.option("--infer-windows", is_flag=True, default=False,
                     help="Streaming, encrypted sessions with no manifest at all: each large response taken for a "
                          "segment, its bitrate per segment-duration window (labelled inferred)."),
        click.option("--segment-duration-s", "segment_duration_s", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="Streaming, --infer-windows: the segment duration (s); default: estimated "
                                        "from the request periodicity, else 2 s."),
    ]):
        f = opt(f)
    return f


def make_options(startup_threshold_s, rebuffer_threshold_s, append_delay_s, qoe_preset, rebuffer_penalty,
                 smooth_penalty, startup_penalty, manifests=(), opaque_ports=(), keylog=(), infer_windows=False,
                 segment_duration_s=None, **extra) -> StreamingOptions:
    """StreamingOptions from the flags of :func:`streaming_options` (and ``--keylog``)."""
    return StreamingOptions(startup_threshold_s=startup_threshold_s, rebuffer_threshold_s=rebuffer_threshold_s,
                            append_delay_s=append_delay_s, qoe_preset=qoe_preset, manifests=tuple(manifests),
                            opaque_ports=tuple(opaque_ports) or (443,), rebuffer_penalty=rebuffer_penalty, smooth_penalty=smooth_penalty,
                            startup_penalty=startup_penalty, keylog=tuple(keylog) or None,
                            infer_windows=infer_windows, segment_duration_s=segment_duration_s, **extra)


#: ``--keylog`` of the has commands (``qoe score`` has its own, given to web and streaming alike).
keylog_option = click.option(
    "--keylog", multiple=True, type=click.Path(exists=True, dir_okay=False),
    help="Streaming, HTTPS: the browser's NSS key log (SSLKEYLOGFILE; repeat): sessions are rebuilt from the "
         "decrypted HTTP/1.1 and HTTP/2 transactions, manifests read from the decrypted streams.")


@click.group("has")
def has() -> None:
    """Adaptive streaming (DASH, HLS): sessions, startup, stalls, switches, QoE, the P.1203 input."""


@has.command("sessions")
@click.argument("capture", type=CAPTURE)
@streaming_options
@keylog_option
@click.option("--details", type=click.Choice(_TABLES), default="results", show_default=True,
              help="Table to print: one row per session, or a detail table (segments, per-second view, stalls, "
                   "played segments).")
@format_option
@output_option
def sessions_cmd(capture, details, fmt, output, **flags):
    """The DASH and HLS sessions in CAPTURE: each segment request mapped to its representation
    and media time, the player's buffer replayed (startup delay, stalls, switches, bitrate
    played per second) and the linear QoE (Yin et al. 2015 / Pensieve)."""
    found = sessions(capture, options=make_options(**flags))
    if fmt == "json" and details == "results":
        emit(to_json([s.to_dict() for s in found]) + "\n", output, inputs=[capture])
        return
    if details == "results":
        rows = [s.to_record(brief=(fmt == "table")) for s in found]
    else:
        rows = [{**s.identity(), **row} for s in found for row in s.tables()[details]]
    text = render(rows, fmt, digits=3) if rows else ("no streaming session found\n" if fmt == "table" else "")
    if fmt == "table" and details == "results":  # what qoe could not see, or inferred, is said
        text += "".join(f"note: session {s.index}: {n}\n" for s in found for n in s.notes)
    emit(text, output, inputs=[capture])


@has.command("p1203-input")
@click.argument("capture", type=CAPTURE)
@streaming_options
@keylog_option
@click.option("--p1203-device", type=click.Choice(["pc", "mobile"]), default="pc", show_default=True,
              help="P.1203 I.GEN device type.")
@click.option("--p1203-display", default="1920x1080", show_default=True, help="P.1203 I.GEN display resolution (WxH).")
@click.option("--session", "index", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which session of the capture (0-based).")
@output_option
@renamed("--device", "--p1203-device", type=click.Choice(["pc", "mobile"]))
@renamed("--display", "--p1203-display")
def p1203_cmd(capture, p1203_device, p1203_display, index, output, **flags):
    """The ITU-T P.1203 mode-0 input (I.GEN, I.11, I.13, I.23) of a session in CAPTURE, as JSON:
    for a user who holds the model's licence to score it (qoe does not bundle it)."""
    opts = make_options(p1203_device=p1203_device, p1203_display=p1203_display, **flags)
    found = sessions(capture, options=opts)
    if index >= len(found):
        raise click.ClickException(f"{capture}: {len(found)} streaming session(s) found; no session {index}")
    emit(to_json(p1203_input(found[index], device=p1203_device, display=p1203_display)) + "\n", output,
         inputs=[capture])


@has.command("plot")
@click.argument("capture", type=CAPTURE)
@streaming_options
@keylog_option
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Figure path; with several sessions each gets its number before the suffix.")
def plot_cmd(capture, output, **flags):
    """Bitrate, buffer and stalls over time of each streaming session in CAPTURE."""
    from pathlib import Path

    from qoe.plot import save, streaming_series

    found = sessions(capture, options=make_options(**flags))
    if not found:
        raise click.ClickException(f"{capture}: no streaming session found")
    out = Path(output)
    for s in found:
        path = out if len(found) == 1 else out.with_name(f"{out.stem}-{s.index}{out.suffix}")
        save(streaming_series(s), path, inputs=[capture])
        click.echo(str(path))
