"""``qoe emodel``: the G.107 E-model from the command line."""

from __future__ import annotations

import click

from qoe.errors import InputError
from qoe.voice import emodel as em
from qoe_cli._flags import renamed
from qoe_cli._output import emit, format_option, output_option, render_pairs


def _parse_params(pairs: tuple[str, ...]) -> dict[str, float]:
    params: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise InputError(f"--param expects NAME=VALUE; given {pair!r}")
        try:
            params[name.strip().lower()] = float(value)
        except ValueError:
            raise InputError(f"--param {name}: value must be a number; given {value!r}") from None
    return params


@click.command("emodel")
@click.option("--mouth-to-ear-ms", type=float, default=None,
              help="One-way mouth-to-ear delay D (ms): sets Ta = T = D and Tr = 2·D (r_factor's mouth_to_ear_ms).")
@click.option("--ppl", type=float, default=None, help="Packet-loss probability Ppl in percent (G.107 Table 3).")
@click.option("--burst-r", type=float, default=None, help="BurstR (1 = random loss; G.107 Table 3).")
@click.option("--codec", default=None,
              help="Codec preset for Ie/Bpl: G.113 App. I with --band nb (e.g. G.711-plc, G.729A+VAD), "
                   "App. IV with --band wb (e.g. G.722-64, G.722.2-12.65).")
@click.option("--band", type=click.Choice(["nb", "wb"]), default="nb", show_default=True,
              help="nb = G.107, wb = G.107.1 (R on the 0..129 scale).")
@click.option("--delay-sensitivity", type=click.Choice(list(em.DELAY_SENSITIVITY)), default=None,
              help="G.107 §7.4 delay-sensitivity class (sets sT, mT).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Any G.107 Table 3 parameter by its lower-case symbol (repeatable), "
                   "e.g. --param telr=55 --param a=5. Overrides the options above.")
@format_option
@output_option
@renamed("--delay-ms", "--mouth-to-ear-ms", type=float)
@renamed("--loss-pct", "--ppl", type=float)
@renamed("--burst-ratio", "--burst-r", type=float)
def emodel(mouth_to_ear_ms, ppl, burst_r, codec, band, delay_sensitivity, params, fmt, output):
    """Transmission rating R, MOS and the impairments of the E-model (ITU-T G.107).

    Every parameter not given keeps its G.107 Table 3 default; with none at all, R = 93.2.
    """
    given = {"ppl": ppl, "burst_r": burst_r}
    kwargs = {k: v for k, v in given.items() if v is not None}
    kwargs.update(_parse_params(params))
    res = em.r_factor(codec=codec, band=band, delay_sensitivity=delay_sensitivity, mouth_to_ear_ms=mouth_to_ear_ms,
                      **kwargs)
    emit(render_pairs(res.to_dict(), fmt), output)
