"""``qoe extract``: the audio a receiver played, rebuilt from a capture, as a WAV file."""

from __future__ import annotations

import click

from qoe.voice.io import extract_wav
from qoe_cli._output import emit, format_option, render_pairs
from qoe_cli._stdin import CAPTURE


@click.command("extract")
@click.argument("capture", type=CAPTURE)
@click.option("--ssrc", default=None, help="Stream to extract (0x7a1c0003 or decimal); needed when the capture holds several.")
@click.option("--jitter-buffer", "jitter_buffer", default="adaptive", show_default=True,
              help="Receiver buffer: fixed:<ms> (e.g. fixed:60), adaptive (Ramjee et al. 1994) or none.")
@click.option("--conceal", type=click.Choice(["silence", "repeat"]), default="silence", show_default=True,
              help="Fill lost and late packets with silence or by repeating the last packet (fading out).")
@click.option("--srtp-key", "srtp_keys", multiple=True, metavar="SUITE:BASE64",
              help="SRTP key (e.g. AES_CM_128_HMAC_SHA1_80:<base64 of master key||salt>) for an encrypted stream "
                   "whose key is not in the capture's SDP (a=crypto); repeat to try several.")
@click.option("--codec", default=None, metavar="NAME/RATE[/CH] [k=v;...]",
              help="Codec of a dynamic payload type the capture has no SDP for, as a=rtpmap/a=fmtp name it "
                   "(e.g. \"AMR/8000 octet-align=1\"); default: from the SDP, else recognised from the payloads "
                   "(AMR, AMR-WB, Opus).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, writable=True),
              help="WAV file to write (16-bit PCM at the codec's rate).")
@format_option
def extract(capture, ssrc, jitter_buffer, conceal, srtp_keys, codec, output, fmt):
    """Rebuild the received audio of an RTP voice stream in CAPTURE and write it as WAV.

    G.711 (own tables), G.722, G.726, G.729, G.723.1, GSM, iLBC, L16, Opus, Speex, AMR and
    AMR-WB (FFmpeg through PyAV) are decoded and placed by RTP timestamp; packets lost in the
    network or late for the jitter buffer are concealed by the decoder where it can (Opus,
    AMR, G.729), otherwise as --conceal says. Prints what was done (loss, late packets,
    buffer delay). An SRTP stream is decrypted with the key of the capture's SDP (SDES
    a=crypto) or --srtp-key, and refused without one."""
    summary = extract_wav(capture, output, ssrc=ssrc, jitter_buffer=jitter_buffer, conceal=conceal,
                          srtp_keys=srtp_keys, codec=codec)
    emit(render_pairs(summary, fmt, digits=3), None)
