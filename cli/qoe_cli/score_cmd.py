"""``qoe score``: the QoE of everything scorable in a capture (voice calls per direction, video streams)."""

from __future__ import annotations

import itertools

import click

from qoe.api import KINDS, iter_score
from qoe.errors import InputError
from qoe.report import Report, ReportWriter
from qoe.video import PSNR_TABLES, SSIM_VARIANTS, VideoOptions
from qoe.voice.call import CallOptions
from qoe.web.pages import WebOptions
from qoe_cli._flags import renamed
from qoe_cli._output import emit_chunks, format_option, iter_table, output_option
from qoe_cli._stdin import CAPTURE
from qoe_cli.has_cmd import make_options, streaming_options
from qoe_cli.web_cmd import READ_AHEAD_HELP

#: The kinds whose options have a jitter buffer (CallOptions.jitter_buffer, VideoOptions.jitter_buffer).
_JITTER_KINDS = ("voice", "video")


@click.command("score")
@click.argument("capture", type=CAPTURE)
@click.option("--ref", "refs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Reference speech (WAV; repeat for several: each is looked for in every call) or the "
                   "reference video (any other file FFmpeg reads: every video stream is scored against it). "
                   "Without one, only the network-side scores and stream facts.")
@click.option("--sender-capture", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A capture taken at the far end: measures one-way delays and scores each stream at its "
                   "receiving end (CAPTURE is then the user's end).")
@click.option("--network-delay-ms", type=click.FloatRange(min=0), default=None,
              help="Network one-way delay (ms) of the least-delayed packet, when not measured "
                   "(default: RTCP RTT/2, else assumed 0). Not the mouth-to-ear delay of `qoe emodel --mouth-to-ear-ms`: "
                   "packetisation, delay variation and the jitter buffer are added to it.")
@click.option("--user", default=None, help="The user's IP address (labels 'user talks' / 'user listens').")
@click.option("--jitter-buffer", default=None,
              help="Receiver jitter buffer to simulate: adaptive, fixed:<ms> or none, for the kind given with --kind "
                   "(voice: default adaptive; video: default none, every packet that arrived is decoded). An "
                   "option of voice and video: without --kind voice or --kind video it is ambiguous (an error), "
                   "as qoe.score(jitter_buffer=...) without kind=.")
@click.option("--conceal", type=click.Choice(["repeat", "silence"]), default="repeat", show_default=True,
              help="Loss concealment (repeat: G.711-plc preset for the E-model; silence: G.711).")
@click.option("--delay-basis", type=click.Choice(["conversation", "direction"]), default="conversation",
              show_default=True, help="Delay impairment from the mean of both directions' delays, or each its own.")
@click.option("--window-s", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Window of the per-window network-side scores (s).")
@click.option("--codec", default=None, help="G.113 codec preset for Ie/Bpl (default: from the payload type).")
@click.option("--clocks", type=click.Choice(["auto", "same", "different"]), default="auto", show_default=True,
              help="Do CAPTURE and --sender-capture share a clock? auto: relative delays (with a warning) when a "
                   "delay is negative or implausibly large.")
@click.option("--ssrc", default=None, help="Only the call holding this stream (0x7a1c0003 or decimal).")
@click.option("--srtp-key", "srtp_keys", multiple=True, metavar="SUITE:BASE64",
              help="Voice: SRTP key (e.g. AES_CM_128_HMAC_SHA1_80:<base64 of master key||salt>) for encrypted streams "
                   "whose key is not in the capture's SDP (a=crypto); repeat for several (each stream takes the one "
                   "that authenticates it).")
@click.option("--stream-timeout-s", type=click.FloatRange(min=0, min_open=True), default=25.0, show_default=True,
              help="Voice: a stream silent this long has ended (2 s after a SIP or RTCP BYE); its call is scored "
                   "and its state released (RFC 3550 §6.3.5: 5 RTCP intervals of at least 5 s).")
@click.option("--sdp", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Video: an SDP file for RTP streams the capture does not announce (what ffmpeg -sdp_file wrote).")
@click.option("--variant", type=click.Choice(list(SSIM_VARIANTS)), default="wang", show_default=True,
              help="Video: SSIM definition (wang = Wang et al. 2004 / scikit-image; ssim.m; ffmpeg 8x8 blocks).")
@click.option("--psnr-table", type=click.Choice(list(PSNR_TABLES)), default="zinner2010", show_default=True,
              help="Video: PSNR -> MOS table (Zinner et al. 2010, the seed paper's; or EvalVid's).")
@click.option("--idle-gap-s", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, help="Web: quiet time (s) that ends a page load.")
@click.option("--preset", type=click.Choice(["access", "backbone"]), default="access", show_default=True,
              help="Web: G.1030 bounds of the seed paper §9.1 (access: 0.56 s → 5; backbone: 0.85 s → 5; 6 s → 1).")
@click.option("--keylog", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Web: NSS key log (SSLKEYLOGFILE) to decrypt TLS/QUIC with; repeat for several.")
@click.option("--read-ahead/--no-read-ahead", default=None, help="Web: " + READ_AHEAD_HELP)
@streaming_options
@click.option("--kind", type=click.Choice(list(KINDS)), default="auto", show_default=True,
              help="What to score (auto: every kind the capture holds).")
@click.option("--details", default="results", show_default=True,
              help="Table to print: results (one row per scored item) or a detail table of the report "
                   "(voice: windows, plays; video: frames; web: objects; streaming: segments, seconds, stalls, "
                   "played).")
@format_option
@output_option
@renamed("--video-jitter-buffer", "--jitter-buffer", target="video_jitter_buffer", hint=" with --kind video")
@renamed("--ssim-variant", "--variant", type=click.Choice(list(SSIM_VARIANTS)))
@renamed("--web-preset", "--preset", type=click.Choice(["access", "backbone"]))
@renamed("--idle-gap", "--idle-gap-s", type=click.FloatRange(min=0, min_open=True))
def score(capture, refs, sender_capture, network_delay_ms, user, jitter_buffer, conceal, delay_basis, window_s,
          codec, clocks, ssrc, srtp_keys, stream_timeout_s, sdp, variant, psnr_table, idle_gap_s, preset, keylog,
          read_ahead, kind, details, fmt, output, video_jitter_buffer=None, **streaming):
    """Score the voice calls (per direction), video streams and page loads in CAPTURE.

    Voice, network-side: G.107 R and MOS from effective loss (after the jitter buffer),
    burst ratio, codec and mouth-to-ear delay, per stream and per window, plus Cole &
    Rosenbluth. With a reference speech file: the seed paper's full-reference score (PESQ →
    z1, delay impairment z2, z = max(0, z1 − z2) → MOS).

    Video (RTP/H.264, RTP/MPEG-TS, MPEG-TS in UDP): the stream facts (frames decoded,
    missing, frozen; packets lost). With a reference video: each frame on screen against
    the reference (PSNR, SSIM, Zinner et al. MOS; the median frame's SSIM MOS is `mos`).
    Web (HTTP and HTTPS over TCP): page loads, PLT (first DNS query / SYN / request to the
    last byte), round trips, RTT, retransmissions, the seed paper's diagnosis and G.1030 MOS.
    Streaming (DASH, HLS over HTTP/1.x): sessions, startup delay, stalls, switches, bitrate
    played per second, linear QoE (Yin et al. 2015; Pensieve's parameter sets).
    JSON output holds the whole report.

    Each flag is the option field it sets (CallOptions, VideoOptions, WebOptions,
    StreamingOptions); --srtp-key and --keylog go to every kind that takes keys."""
    jitter = {"voice": {}, "video": {} if video_jitter_buffer is None else {"jitter_buffer": video_jitter_buffer}}
    if jitter_buffer is not None:
        if kind not in _JITTER_KINDS:
            raise InputError(f"--jitter-buffer is ambiguous with --kind {kind}: it is an option of voice and video; "
                             "give --kind voice or --kind video")
        if jitter[kind]:
            raise click.UsageError("--video-jitter-buffer is the old spelling of --jitter-buffer: give --jitter-buffer only")
        jitter[kind] = {"jitter_buffer": jitter_buffer}
    call = CallOptions(conceal=conceal, delay_basis=delay_basis, window_s=window_s, codec=codec, user=user,
                       network_delay_ms=network_delay_ms, clocks=clocks, srtp_keys=srtp_keys,
                       stream_timeout_s=stream_timeout_s, **jitter["voice"])
    video = VideoOptions(sdp=sdp, variant=variant, psnr_table=psnr_table, srtp_keys=srtp_keys, **jitter["video"])
    options = {"voice": call, "video": video, "web": WebOptions(idle_gap_s=idle_gap_s, preset=preset,
                                                                        keylog=tuple(keylog) or None,
                                                                        read_ahead=read_ahead),
               "streaming": make_options(**streaming, keylog=keylog)}
    inputs = [capture, sender_capture, sdp, *refs, *keylog]
    stream = iter_score(capture, reference=list(refs) or None, kind=kind, options=options,
                        sender_capture=sender_capture, ssrc=ssrc)
    with ReportWriter() as writer:  # results go to a temporary file as they come: memory stays flat
        for result in stream:
            writer.add(result)
        _write(writer, stream.report(), fmt, details, output, inputs)


def _write(writer: ReportWriter, head: Report, fmt: str, details: str, output: str | None, inputs: list) -> None:
    """The output of ``qoe score`` in ``fmt``: the whole report (json), or the ``details`` table."""
    if fmt == "json":
        emit_chunks(itertools.chain(writer.json_chunks(head), ["\n"]), output, inputs=inputs)
        return
    if fmt == "csv":
        emit_chunks(writer.csv_chunks(head, details), output, inputs=inputs)
        return
    writer.records(head, details)  # an unknown table is an error before anything is written
    lines = iter_table(lambda: writer.records(head, details, brief=True), digits=2)
    text = next(lines, "nothing scored\n")  # the header line, or no record at all
    notes = (f"note: {n}\n" for n in writer.note_lines(head))
    emit_chunks(itertools.chain([text], lines, notes), output, inputs=inputs)
