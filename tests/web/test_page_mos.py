"""A page's G.1030 MOS is exactly the model's score of its load time.

The page model scores one load time at a time without ``qoe.web.g1030.mos``'s array checks
(speed, issue 22); the score must still be the same double that ``g1030.mos`` gives for the
page's ``plt_s`` (G.1030 (11/2005) Annex A, bounds of the seed paper §9.1 or custom ones),
compared with ``==``, on real captures of ``data/web`` and on every preset and custom bounds.
"""

from __future__ import annotations

import os
import warnings

import pytest

from qoe.web import WebOptions, g1030, page_loads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# page load times 0.05 s (scored 5), 7.2 s (scored 1), and 0.82, 0.93, 1.12 s in between
CAPTURES = [os.path.join(ROOT, "data", "web", "captures", name) for name in (
    "http10-idle-b64-wget_client.pcap", "http10-up-b64-wget_client.pcap", "http10-up-b8-wget_client.pcap",
    "http11-down-b64-wget_client.pcap", "http11-down-b8-curl_client.pcap")]


@pytest.mark.parametrize("options", [WebOptions(), WebOptions(preset="backbone"), WebOptions(t_min=0.3, t_max=2.0)],
                         ids=["access", "backbone", "custom"])
def test_page_mos_is_g1030s_score_of_its_load_time(options):
    pages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in CAPTURES:
            pages += page_loads(path, options=options)
    assert pages
    custom = options.t_min is not None
    for p in pages:
        if custom:
            want = float(g1030.mos(p.plt_s, preset=None, t_min=options.t_min, t_max=options.t_max))
        else:
            want = float(g1030.mos(p.plt_s, preset=options.preset))
        assert p.mos == want, (p.plt_s, p.mos, want)
    assert any(1.0 < p.mos < 5.0 for p in pages)  # not only the clipped ends of the scale
