"""What the fuzz tests feed and to which public function (shared by tests/ and benchmarks/fuzz/).

Each :class:`Target` names a public entry point, the real samples in ``data/`` its inputs
are mutated from, and how to call it on a file. The contract every target must keep
(issue 13): on any input it returns or raises a :class:`qoe.QoEError` subclass; warnings
are allowed; anything else — ``IndexError``, ``struct.error``, ``UnicodeDecodeError``,
a hang — is a bug.

The mutations are those a capture meets in the field: cut short anywhere, bytes flipped,
bytes inserted or removed (everything after shifts), a region repeated (a record read
twice), and a length field set to an extreme.
"""

from __future__ import annotations

import atexit
import os
import random
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
SEED_BYTES = 48 * 1024  # a seed is at most this prefix of a sample (a truncated capture is a capture)


@dataclass(frozen=True)
class Target:
    """A public entry point and the samples its fuzz inputs start from."""

    name: str
    suffix: str
    seeds: tuple[str, ...]
    call: Callable[[Path], Any]
    seed_size: int = SEED_BYTES
    make_seeds: Callable[[], list[bytes]] | None = None  # seeds made from the samples (HAR)

    def seed_bytes(self) -> list[bytes]:
        """The seeds' first :attr:`seed_size` bytes (those present in this checkout)."""
        if self.make_seeds is not None:
            return self.make_seeds()
        out = []
        for rel in self.seeds:
            p = DATA / rel
            if p.is_file():
                with p.open("rb") as f:
                    out.append(f.read(self.seed_size))
        return out


def _capture_packets(path: Path) -> Any:
    from qoe.capture import read_packets

    return sum(1 for _ in read_packets(path))


def _capture_batches(path: Path) -> Any:
    from qoe.capture import read_udp_batches

    return sum(len(b) for b in read_udp_batches(path))


def _rtp_streams(path: Path) -> Any:
    from qoe.rtp import find_streams

    return find_streams(path)


def _voice(path: Path) -> Any:
    import qoe

    return qoe.score(path, kind="voice").to_json()


def _video(path: Path) -> Any:
    import qoe

    return qoe.score(path, kind="video").to_json()


def _web(path: Path) -> Any:
    from qoe.web import page_loads

    return page_loads(path)


# Chromium's captures of data/web/browser with their key logs: TLS 1.3 with HTTP/2, HTTP/3 over
# QUIC, TLS 1.2 (the decrypting paths: records, QUIC packet protection, hpack, QPACK)
_KEYED = ("h2-idle", "h3-idle", "tls12-idle", "h3-loss")


# QUIC version 2, ECH over TLS (Go, Chromium) and over QUIC, segmentation-offload datagrams (the
# version, key-search and cutting paths of qoe.web.quic and qoe.web.decrypt), TLS 0-RTT accepted and
# rejected (the early plaintext held for the server's answer)
_KEYED_NEW = ("browser/captures/h3v2-idle", "tls/tls13-ech", "tls/tls13-ech-chromium", "tls/quic-h3-ech-gso",
              "tls/tls13-0rtt-rejected", "tls/tls13-0rtt")


def _keylog_of_seeds(names: tuple[str, ...] = tuple(f"browser/captures/{n}" for n in _KEYED)) -> Path:
    """One key log with the secrets of every capture named (data/web/<name>.keylog; made once
    per process and set of names, removed when it exits)."""
    out = Path(tempfile.gettempdir()) / f"qoe-fuzz-{os.getpid()}-{len(names)}-{names[0].replace('/', '_')}.keylog"
    if not out.is_file():
        text = b"".join((DATA / f"web/{n}.keylog").read_bytes() for n in names if (DATA / f"web/{n}.keylog").is_file())
        out.write_bytes(text)
        atexit.register(out.unlink, missing_ok=True)
    return out


def _web_keylog(path: Path) -> Any:
    """A damaged browser capture, decrypted with intact keys."""
    from qoe.web import WebOptions, page_loads

    return page_loads(path, options=WebOptions(keylog=_keylog_of_seeds()))


def _web_keylog_new(path: Path) -> Any:
    """A damaged capture of QUIC v2, ECH or offload, decrypted with intact keys, its QUIC
    connections read in one process and in two."""
    from qoe.web import WebOptions, page_loads
    from qoe.web.quic import quic_connections

    keylog = _keylog_of_seeds(_KEYED_NEW)
    quic_connections(path, keylog=keylog, read_ahead=True)
    return page_loads(path, options=WebOptions(keylog=keylog))


def _keylog(path: Path) -> Any:
    """An intact browser capture with a damaged key log."""
    from qoe.web import WebOptions, page_loads

    return page_loads(DATA / "web/browser/captures/h2-idle.pcap", options=WebOptions(keylog=path))


def _tunnels(path: Path) -> Any:
    """Everything a tunnel carries: the packets, their RTP streams and their page loads."""
    from qoe.capture import read_packets
    from qoe.rtp import find_streams
    from qoe.web import page_loads

    return sum(1 for _ in read_packets(path)), find_streams(path), page_loads(path)


def _sdp(path: Path) -> Any:
    from qoe.rtp import parse_sdp

    return parse_sdp(path.read_bytes().decode("utf-8", "replace"))


def _speech(path: Path) -> Any:
    from qoe.voice import load_speech

    return load_speech(path)


def _har(path: Path) -> Any:
    from qoe.web import pages_from_har
    from qoe.web.har import read_har

    return pages_from_har(read_har(path))


def _har_seeds() -> list[bytes]:
    """HAR 1.2 files of two web samples, as ``qoe web har`` writes them."""
    import io

    from qoe.web.har import write_har
    from qoe.web.pages import page_loads, to_har_pages

    out = []
    for rel in _WEB_SEEDS[:2]:
        if (DATA / rel).is_file():
            found = page_loads(DATA / rel)
            buf = io.StringIO()
            write_har(buf, [t for p in found for t in p.transactions], pages=to_har_pages(found))
            out.append(buf.getvalue().encode("utf-8"))
    return out


def _cli_score(path: Path) -> Any:
    """``qoe score PATH`` as a user runs it: JSON written to a file (through the spool and the
    atomic write), then the table to standard output. Exit 0 with strict JSON, or exit 2 with
    one ``qoe: error:`` line naming the file; anything else breaks the contract."""
    import json

    from click.testing import CliRunner

    from qoe_cli.main import cli

    def strict(name: str) -> Any:
        raise ValueError(f"JSON holds {name}")

    out = path.with_suffix(".json")
    for args in (["--format", "json", "-o", str(out)], ["--format", "table"]):
        res = CliRunner().invoke(cli, ["score", str(path), *args])
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        if res.exit_code == 2:
            errors = [ln for ln in res.stderr.splitlines() if ln.startswith("qoe: error:")]
            if len(errors) != 1 or path.name not in errors[0]:
                raise AssertionError(f"exit 2 without one error line naming the file: {res.stderr!r}")
            return None
        if res.exit_code != 0:
            raise AssertionError(f"exit code {res.exit_code}: {res.stderr!r}")
    json.loads(out.read_text(encoding="utf-8"), parse_constant=strict)
    return None


def _video_file(path: Path) -> Any:
    from qoe.video import read_frames

    return sum(1 for _ in read_frames(path))


_VOICE_SEEDS = ("voice/field/dtmf.pcap", "voice/field/reused_port.pcap", "voice/captures/both-b64_client.pcapng",
                "voice/captures/down-b8_client.pcap")
_VIDEO_SEEDS = ("video/captures/h264-down-b8_client.pcap", "video/captures/rtpts-down-b8_client.pcap",
                "video/captures/udpts-down-b64_client.pcap")
# Linux cooked captures (link types SLL and SLL2, as `tcpdump -i any` writes them)
_LINK_SEEDS = ("voice/field/doubled_sll.pcap", "voice/field/doubled_any.pcap")
# every encapsulation qoe peels (data/capture/tunnels/: VXLAN captured, the rest crafted around
# its inner frames), each carrying RTP and HTTP
_TUNNEL_SEEDS = tuple(f"capture/tunnels/{n}.pcap" for n in (
    "vxlan", "gre", "gre6", "gretap", "erspan2", "erspan3", "gtpu", "ipip", "sit", "l2tp", "mpls", "mpls_pw",
    "mpls_pw_cw", "pppoe"))
_WEB_SEEDS = ("web/captures/http11-down-b8-curl_server.pcap", "web/captures/https11-up-b8-curl_server.pcap",
              "web/captures/http11-up-b64-wget-dns_server.pcap", "web/captures/http10-idle-b64-curl_server.pcap")

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("capture-packets", ".pcap", _VOICE_SEEDS + _WEB_SEEDS[:2] + _LINK_SEEDS, _capture_packets),
    Target("tunnels", ".pcap", _TUNNEL_SEEDS, _tunnels),
    Target("capture-udp-batches", ".pcap", _VOICE_SEEDS + _VIDEO_SEEDS[:1], _capture_batches),
    Target("rtp-streams", ".pcap", _VOICE_SEEDS, _rtp_streams),
    Target("voice-score", ".pcap", _VOICE_SEEDS[:2], _voice),
    Target("video-score", ".pcap", _VIDEO_SEEDS, _video, seed_size=160 * 1024),
    Target("web-pages", ".pcap", _WEB_SEEDS, _web),
    Target("web-keylog", ".pcap", tuple(f"web/browser/captures/{n}.pcap" for n in _KEYED), _web_keylog,
           seed_size=160 * 1024),
    Target("web-keylog-new", ".pcap", tuple(f"web/{n}.pcap" for n in _KEYED_NEW), _web_keylog_new,
           seed_size=160 * 1024),
    Target("keylog", ".keylog", ("web/browser/captures/h2-idle.keylog",), _keylog),
    Target("sdp", ".sdp", ("video/captures/h264-down-b8.sdp",), _sdp),
    Target("speech-file", ".wav", ("voice/speech/de_male_8k.wav",), _speech),
    Target("video-file", ".ts", ("video/reference/clip.ts",), _video_file, seed_size=160 * 1024),
    Target("har", ".har", (), _har, make_seeds=_har_seeds),
    Target("cli-score", ".pcap", _VOICE_SEEDS[:1] + _WEB_SEEDS[:1] + _TUNNEL_SEEDS[:1], _cli_score),
)}


def mutate(data: bytes, rnd: random.Random) -> bytes:
    """One to four field-like damages of ``data`` (see the module docstring)."""
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        if not buf:
            buf += bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 64)))
            continue
        op = rnd.randrange(6)
        i = rnd.randrange(len(buf))
        if op == 0:  # cut short
            del buf[i:]
        elif op == 1:  # flip bytes
            for _ in range(rnd.randint(1, 8)):
                buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
        elif op == 2:  # insert
            buf[i:i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 32)))
        elif op == 3:  # remove
            del buf[i:i + rnd.randint(1, 64)]
        elif op == 4:  # repeat a region
            j = min(len(buf), i + rnd.randint(1, 512))
            buf[j:j] = buf[i:j]
        else:  # an extreme 16- or 32-bit field
            width = rnd.choice((2, 4))
            value = rnd.choice((0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF)) & ((1 << 8 * width) - 1)
            buf[i:i + width] = value.to_bytes(width, rnd.choice(("big", "little")))
    return bytes(buf)


def check(target: Target, path: Path) -> BaseException | None:
    """Run ``target`` on ``path``; the exception that breaks the contract, or None."""
    from qoe.errors import QoEError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target.call(path)
    except QoEError:
        return None
    except Exception as exc:  # noqa: BLE001 - the contract: nothing else may escape
        return exc
    return None
