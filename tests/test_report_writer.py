"""``qoe.report.ReportWriter`` writes what ``qoe.report.Report`` writes, from a spool (issue 13).

``qoe score`` streams its results through a ReportWriter (``qoe.api.iter_score``), so that
memory stays flat in the size of the capture; its outputs must be the report's, byte for
byte. Here each real capture of ``data/`` below (voice with reference speech and the
far end's capture: the ``windows`` and ``plays`` tables; video with the reference clip:
``frames``; web: ``objects``; two kinds in one tunnelled capture; nothing scorable) is
scored once with ``iter_score``: its results go both to a writer and to a Report (what
``qoe.score`` returns), and every output of the writer is compared with the report's:
JSON, records (full and brief, compared as JSON text: NaN is not equal to itself) and CSV of every table, the note lines, the table names,
and ``qoe score``'s own output for each format.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoe
from qoe.api import iter_score
from qoe.report import ReportWriter, columns, to_json
from qoe_cli.main import cli

DATA = Path(__file__).resolve().parents[1] / "data"
VOICE = DATA / "voice" / "captures"
CASES = {
    "voice": (VOICE / "up-b256_client.pcap",
              {"reference": [DATA / "voice" / "speech" / "en_us_male_8k.wav"],
               "sender_capture": VOICE / "up-b256_server.pcap"}),
    "video": (DATA / "video" / "captures" / "h264-down-b8_client.pcap",
              {"reference": DATA / "video" / "reference" / "clip.ts"}),
    "web": (DATA / "web" / "captures" / "http11-idle-b64-curl-x3_client.pcap", {}),
    "voice+web": (DATA / "capture" / "tunnels" / "erspan2.pcap", {}),
    # the sender's side of plain-UDP MPEG-TS, headers only: no stream to score (the RTP sender's
    # side, h264-down-b8_server.pcap, now shows its video stream: issue 23's header facts)
    "nothing": (DATA / "video" / "captures" / "udpts-down-b64_server.pcap", {}),
}
TABLES = {"voice": ("results", "windows", "plays"), "video": ("results", "frames", "rtp_frames"), "web": ("results", "objects"),
          "voice+web": ("results", "windows", "plays", "objects"), "nothing": ("results",)}


@pytest.fixture(scope="module", params=sorted(CASES))
def scored(request):
    """(case, Report, ReportWriter, head) of one capture scored once."""
    cap, kwargs = CASES[request.param]
    if not cap.is_file():
        pytest.skip(f"{cap} is not in data/")
    stream = iter_score(cap, **kwargs)
    writer = ReportWriter()
    results = []
    with pytest.warns(qoe.QoEWarning) if request.param == "nothing" else _no_check():
        for r in stream:
            writer.add(r)
            results.append(r)
        head = stream.report()
    yield request.param, dataclasses.replace(head, results=tuple(results)), writer, head
    writer.close()


class _no_check:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_cases_score_what_they_are_meant_to(scored):
    case, report, writer, head = scored
    assert head.results == ()
    assert len(writer) == len(report)
    assert (len(report) == 0) == (case == "nothing")
    assert report.kind == ("auto" if case == "nothing" else case)
    assert report.tables() == TABLES[case]
    assert writer.tables() == TABLES[case]


def test_json_is_the_reports(scored):
    _, report, writer, head = scored
    text = "".join(writer.json_chunks(head))
    assert text == report.to_json()
    json.loads(text)


def test_records_and_csv_of_every_table_are_the_reports(scored):
    _, report, writer, head = scored
    for table in report.tables():
        for brief in (False, True):
            records = list(writer.records(head, table, brief=brief))
            assert to_json(records) == to_json(report.to_records(table, brief=brief))  # NaN != NaN: as text
            assert "".join(writer.csv_chunks(head, table, brief=brief)) == report.to_csv(table, brief=brief)


def test_note_lines_are_the_reports(scored):
    _, report, writer, head = scored
    assert writer.note_lines(head) == report.note_lines()


def test_an_unknown_table_is_refused_at_the_call(scored):
    _, report, writer, head = scored
    with pytest.raises(qoe.InputError, match="unknown table 'nope'"):
        writer.records(head, "nope")
    with pytest.raises(qoe.InputError, match="unknown table 'nope'"):
        writer.csv_chunks(head, "nope")


def test_the_spool_reads_back_the_results_and_readers_may_interleave(scored):
    _, report, writer, head = scored
    a, b = writer.results(), writer.results()
    pairs = list(zip(a, b))
    assert len(pairs) == len(report)
    # compared as JSON: a NaN read back is another float object, and NaN != NaN
    assert [to_json(x.to_dict()) == to_json(y.to_dict()) for x, y in pairs] == [True] * len(pairs)
    assert writer.report(head).to_json() == report.to_json()


@pytest.mark.parametrize("case", ["web", "voice+web"])
@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_qoe_score_writes_the_reports_text(case, fmt, tmp_path):
    """``qoe score`` (which streams through a ReportWriter) against ``qoe.score``'s Report."""
    cap, _ = CASES[case]
    report = qoe.score(cap)
    out = tmp_path / f"out.{fmt}"
    res = CliRunner().invoke(cli, ["score", str(cap), "--format", fmt, "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        assert text == report.to_json() + "\n"
    elif fmt == "csv":
        assert text == report.to_csv()
    else:  # the brief records' cells, right-aligned under their column names, then the notes
        lines = text.splitlines()
        names = columns(report.to_records(brief=True))
        assert lines[0].split() == names
        assert len(lines) == 2 + len(report) + len(report.note_lines())
        assert lines[2 + len(report):] == [f"note: {n}" for n in report.note_lines()]
