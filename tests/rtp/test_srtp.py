"""SRTP (issue 11 point 4): recognised in `streams`, decrypted with SDES or user keys, refused without.

The captures are made by ``data/voice/srtp/make_srtp_captures.sh``: SIP with SDES keys from
``data/voice/srtp/sdes_call.py``, SRTP and plain RTP from FFmpeg 5.1's RTP muxer through its
``srtp://`` protocol (FFmpeg's own SRTP code, not libsrtp, which qoe decrypts with), captured by
tcpdump on a namespace's loopback. References:

* header statistics: TShark 4.0.17, ``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r <capture>``
  (stored next to each capture, line 1 holds the command; tshark does not decrypt SRTP);
* decrypted payloads: the plain-RTP twin ``plain.pcap``, the same ffmpeg command without SRTP;
* decrypted audio: FFmpeg's A-law round trip of the source speech,
  ``ffmpeg -i <wav> -t 3 -ac 1 -ar 8000 -c:a pcm_alaw -f alaw a.alaw`` then
  ``ffmpeg -f alaw -ar 8000 -ac 1 -i a.alaw -f s16le a.s16``;
* which key decrypts which direction: RFC 4568 §5.1 (each side's a=crypto is the key it sends with)
  and §6.1 (the answer accepts an offered line by its tag).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import shutil
import subprocess
import warnings
from pathlib import Path

import dpkt
import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

import qoe
from qoe.capture import read_udp_batches
from qoe.errors import EncryptedStreamError, InputError, QoEWarning, UnsupportedCodecError
from qoe.rtp import scan_capture
from qoe.rtp.sip import parse_crypto, parse_sdp, sender_crypto
from qoe.rtp.decrypt import decrypt_streams
from qoe.rtp.srtp import SrtpKey, decrypt_packets, looks_encrypted, parse_srtp_key
from qoe.voice import extract_wav
from qoe.voice.call import CallOptions
from qoe_cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "data" / "voice"
SRTP = DATA / "srtp"
FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")

_spec = importlib.util.spec_from_file_location("_rtp_tshark_helpers", Path(__file__).with_name("test_rtp_tshark.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)  # type: ignore[union-attr]
assert_agree = _helpers.assert_agree


def _key(name: str) -> str:
    """The test keys of data/voice/srtp/sdes_call.py: SHA-256 of a fixed string, first 30 bytes."""
    return base64.b64encode(hashlib.sha256(f"qoe srtp test key {name}".encode()).digest()[:30]).decode()


C80 = "AES_CM_128_HMAC_SHA1_80:" + _key("C80")


def _alaw_round_trip(wav: Path, tmp: Path) -> np.ndarray:
    """FFmpeg's A-law encode and decode of 3 s of ``wav`` (the commands in the module docstring)."""
    a, s = tmp / "a.alaw", tmp / "a.s16"
    quiet = [FFMPEG, "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]  # -nostdin: never read the test's stdin
    subprocess.run([*quiet, "-i", str(wav), "-t", "3", "-ac", "1", "-ar", "8000", "-c:a", "pcm_alaw", "-f", "alaw",
                    str(a)], check=True, timeout=60, stdin=subprocess.DEVNULL)
    subprocess.run([*quiet, "-f", "alaw", "-ar", "8000", "-ac", "1", "-i", str(a), "-f", "s16le", str(s)],
                   check=True, timeout=60, stdin=subprocess.DEVNULL)
    assert s.stat().st_size > 0, f"ffmpeg wrote no samples for {wav} ({a.stat().st_size} A-law bytes)"
    return np.fromfile(s, dtype="<i2")


# ------------------------------------------------------------------------------ SDP (RFC 4568)


def test_crypto_attribute_fields():
    """RFC 4568 §9.1 grammar: tag, suite, inline key||salt (30 bytes for AES_CM_128), lifetime
    2^20, MKI 1 of 4 bytes, session parameters kept as written."""
    c = parse_crypto("1 AES_CM_128_HMAC_SHA1_32 inline:NzB4d1BINUAvLEw6UzF3WSJ+PSdFcGdUJShpX1Zj|2^20|1:4 KDR=1 WSH=128")
    assert (c.tag, c.suite, len(c.key_salt), c.lifetime, c.mki, c.mki_length) == (
        1, "AES_CM_128_HMAC_SHA1_32", 30, 1 << 20, 1, 4)
    assert c.session_params == ("KDR=1", "WSH=128")
    assert "key_salt=<30 bytes>" in repr(c)  # the key stays out of reprs
    assert parse_crypto("1 AES_CM_128_HMAC_SHA1_80 uri:http://x") is None
    assert parse_crypto("x AES_CM_128_HMAC_SHA1_80 inline:AAAA") is None


def test_savp_profile_and_the_sender_key_by_accepted_tag():
    """The offer lists two keys; the answer accepts tag 2 with its own key. The offerer's stream
    uses the offer's tag-2 key, the answerer's stream the answer's key (RFC 4568 §5.1, §6.1)."""
    offer = parse_sdp("v=0\r\nc=IN IP4 192.0.2.1\r\nm=audio 4000 RTP/SAVP 0\r\n"
                      f"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:{_key('x1')}\r\n"
                      f"a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:{_key('x2')}\r\n").media[0]
    answer = parse_sdp("v=0\r\nc=IN IP4 192.0.2.2\r\nm=audio 5000 RTP/SAVP 0\r\n"
                       f"a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:{_key('y2')}\r\n").media[0]
    plain = parse_sdp("v=0\r\nc=IN IP4 192.0.2.2\r\nm=audio 5000 RTP/AVP 0\r\n").media[0]
    assert offer.secure and answer.secure and not plain.secure
    assert sender_crypto(offer, answer).key_salt == base64.b64decode(_key("x2"))
    assert sender_crypto(answer, offer).key_salt == base64.b64decode(_key("y2"))
    assert sender_crypto(offer).tag == 1  # no answer seen: the first offered line
    assert sender_crypto(plain, offer) is None


def test_user_keys_are_checked():
    assert parse_srtp_key(C80).suite == "AES_CM_128_HMAC_SHA1_80"
    with pytest.raises(InputError, match="SUITE:BASE64"):
        parse_srtp_key("no-colon")
    with pytest.raises(InputError, match="30 bytes"):
        parse_srtp_key("AES_CM_128_HMAC_SHA1_80:" + base64.b64encode(b"short").decode())
    with pytest.raises(UnsupportedCodecError, match="F8_128_HMAC_SHA1_80"):
        parse_srtp_key("F8_128_HMAC_SHA1_80:" + _key("C80"))
    with pytest.raises(InputError, match="not base64"):
        CallOptions(srtp_keys=("AES_CM_128_HMAC_SHA1_80:@@@@",))
    assert CallOptions(srtp_keys=(C80,)).to_dict()["srtp_keys"] == ["AES_CM_128_HMAC_SHA1_80:***"]


# ------------------------------------------------------------------------------ streams


def test_streams_mark_srtp_from_the_sdp_with_each_senders_key():
    scan = scan_capture(SRTP / "srtp_call.pcap", keep_packets=False)
    (call,) = scan.calls
    by_src = {s.key.src: s for s in scan.streams}
    caller, callee = by_src["127.0.0.1"], by_src["127.0.0.2"]
    assert caller.srtp.found_by == callee.srtp.found_by == "sdp"
    assert caller.srtp.sdes == call.offer[0].crypto[1]  # the offer's tag 2, which the answer accepted
    assert callee.srtp.sdes == call.answer[0].crypto[0]
    assert caller.to_dict()["srtp"] == "sdp" and caller.to_dict()["srtp_sdes_suite"] == "AES_CM_128_HMAC_SHA1_32"


def test_streams_mark_srtp_by_the_payload_heuristic_and_leave_plain_rtp_alone():
    (enc,) = scan_capture(SRTP / "srtp_nosdp.pcap", keep_packets=False).streams
    (plain,) = scan_capture(SRTP / "plain.pcap", keep_packets=False).streams
    assert (enc.found_by, enc.srtp.found_by, enc.srtp.sdes) == ("heuristic", "heuristic", None)
    assert plain.srtp is None and plain.to_dict()["srtp"] is None
    for cap in sorted((DATA / "captures").glob("*.pcap*")) + sorted((DATA / "field").glob("*.pcap")):
        if cap.suffix in (".pcap", ".pcapng"):
            assert all(s.srtp is None for s in scan_capture(cap, keep_packets=False).streams), cap


def test_heuristic_on_payloads():
    """Payloads exceeding the timestamp step by an 80-bit tag, with random bytes: SRTP; the same
    length of constant bytes, or exact-length random bytes (no tag): not."""
    rng = np.random.default_rng(7)
    seq, ts = np.arange(16), np.arange(16) * 160
    rand = [rng.integers(0, 256, 170, dtype=np.uint8).tobytes() for _ in seq]
    assert looks_encrypted(seq, ts, rand, bytes_per_tick=1)
    assert not looks_encrypted(seq, ts, [b"\xd5" * 170 for _ in seq], bytes_per_tick=1)
    assert not looks_encrypted(seq, ts, [p[:160] for p in rand], bytes_per_tick=1)


@pytest.mark.parametrize("name, count", [("srtp_call.pcap", 2), ("srtp_nosdp.pcap", 1), ("plain.pcap", 1)])
def test_header_statistics_agree_with_stored_tshark(name, count):
    """Encryption leaves the RTP header in clear: packets, loss, deltas and jitter equal tshark's."""
    text = (SRTP / f"{name}.tshark-rtp-streams.txt").read_text()
    assert text.startswith("# command: tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r ")
    assert assert_agree(text, SRTP / name) == count


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.parametrize("name, count", [("srtp_call.pcap", 2), ("srtp_nosdp.pcap", 1)])
def test_header_statistics_agree_with_live_tshark(name, count):
    command = (SRTP / f"{name}.tshark-rtp-streams.txt").read_text().splitlines()[0].removeprefix("# command: ").split()
    live = subprocess.run([shutil.which("tshark"), *command[1:]], cwd=SRTP, capture_output=True, text=True,
                          check=True, timeout=120).stdout
    assert assert_agree(live, SRTP / name) == count


def test_streams_command_lists_srtp_without_a_key():
    res = CliRunner().invoke(cli, ["streams", str(SRTP / "srtp_nosdp.pcap"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert '"srtp": "heuristic"' in res.output and '"packets": 140' in res.output


# ------------------------------------------------------------------------------ decryption


def test_user_key_gives_the_plain_twins_payloads():
    (enc,) = scan_capture(SRTP / "srtp_nosdp.pcap").streams
    (plain,) = scan_capture(SRTP / "plain.pcap").streams
    (dec,) = decrypt_streams(SRTP / "srtp_nosdp.pcap", [enc], keys=[C80])
    assert (dec.srtp.decrypted, dec.srtp.suite, dec.srtp.key_source, dec.srtp.auth_failures) == (
        True, "AES_CM_128_HMAC_SHA1_80", "user", 0)
    assert dec.packets.payloads == plain.packets.payloads
    assert dec.stats == enc.stats  # header statistics are not touched


@needs_ffmpeg
def test_sdp_keys_decrypt_both_directions_across_a_rollover(tmp_path):
    """The caller's stream starts at sequence number 65400 and wraps to 0 after 136 packets
    (rollover counter 1, RFC 3711 §3.3.1): all 150 packets of each direction authenticate, and
    each direction's audio equals FFmpeg's A-law round trip of the speech it sent."""
    scan = scan_capture(SRTP / "srtp_call.pcap")
    out = decrypt_streams(scan.path, scan.streams)
    sent = {"127.0.0.1": DATA / "speech" / "en_gb_female_8k.wav", "127.0.0.2": DATA / "speech" / "de_male_8k.wav"}
    for s in out:
        assert (s.srtp.decrypted, s.srtp.key_source, s.srtp.auth_failures, len(s.packets)) == (True, "sdp", 0, 150)
        wav = tmp_path / f"{s.key.src}.wav"
        extract_wav(SRTP / "srtp_call.pcap", wav, ssrc=s.ssrc, jitter_buffer="none")
        got, fs = soundfile.read(wav, dtype="int16")
        ref = _alaw_round_trip(sent[s.key.src], tmp_path)
        assert fs == 8000 and got.size == 150 * 160
        np.testing.assert_array_equal(got, ref[: got.size])
    caller = next(s for s in out if s.key.src == "127.0.0.1")
    assert caller.packets.seq[0] == 65400 and caller.packets.seq[-1] == 13 and caller.packets.seq_ext[-1] == 65536 + 13


def test_the_receivers_key_does_not_decrypt():
    """Taking the key of the SDP that announced the destination port (the receiver's) is the
    classic mistake: it fails authentication on every packet."""
    scan = scan_capture(SRTP / "srtp_call.pcap")
    (call,) = scan.calls
    caller = next(s for s in scan.streams if s.key.src == "127.0.0.1")
    wrong = SrtpKey.from_sdes(call.answer[0].crypto[0])
    raw = _datagrams(SRTP / "srtp_call.pcap", caller.packets.frame)
    plain, failed, _ = decrypt_packets(raw, wrong)
    assert failed == len(raw) == 150 and all(p is None for p in plain)
    with pytest.raises(EncryptedStreamError, match="none of the 1 key"):
        decrypt_streams(scan.path, [_without_sdes(caller)], keys=[wrong])


def _without_sdes(stream):
    import dataclasses

    return dataclasses.replace(stream, srtp=dataclasses.replace(stream.srtp, sdes=None))


def _datagrams(capture: Path, frames: np.ndarray) -> list[bytes]:
    want = set(frames.tolist())
    got = {}
    for b in read_udp_batches(capture):
        for i, f in enumerate(b.index.tolist()):
            if f in want:
                got[f] = bytes(b.payload_of(i))
    return [got[f] for f in frames.tolist()]


def test_failed_authentication_is_counted_warned_and_lost(tmp_path):
    """Frame 30's last byte (its auth tag) flipped and frame 40 sent twice: one failure (the
    packet is left out of the table, so the playout counts it lost), one replay (the duplicate
    keeps its first copy's plaintext), a QoEWarning naming the file and the stream."""
    src = SRTP / "srtp_nosdp.pcap"
    bad = tmp_path / "tampered.pcap"
    with open(src, "rb") as f_in, open(bad, "wb") as f_out:
        reader = dpkt.pcap.Reader(f_in)
        writer = dpkt.pcap.Writer(f_out, linktype=reader.datalink())
        for n, (ts, buf) in enumerate(reader, start=1):
            if n == 30:
                buf = buf[:-1] + bytes([buf[-1] ^ 0xFF])
            writer.writepkt(buf, ts)
            if n == 40:
                writer.writepkt(buf, ts + 0.001)
    (enc,) = scan_capture(bad).streams
    with pytest.warns(QoEWarning, match=r"tampered.pcap: stream 0x33333333 .* 1 of 141 SRTP packets failed"):
        (dec,) = decrypt_streams(bad, [enc], keys=[C80])
    assert (dec.srtp.auth_failures, dec.srtp.replayed, len(dec.packets)) == (1, 1, 140)
    audio = qoe.voice.extract_audio(dec, jitter_buffer="none")
    assert audio.to_dict()["network_lost"] == 1


def test_mki_is_taken_out_before_libsrtp():
    """RFC 3711 §3.1: the MKI sits between the encrypted portion and the tag and is not
    authenticated. Packets protected by libsrtp (no MKI), then given a 4-byte MKI, decrypt with
    a key that says mki_length=4."""
    import pylibsrtp

    key = base64.b64decode(_key("mki"))
    tx = pylibsrtp.Session(pylibsrtp.Policy(key=key, ssrc_type=pylibsrtp.Policy.SSRC_ANY_OUTBOUND))
    rtp = [bytes([0x80, 0x08]) + i.to_bytes(2, "big") + (160 * i).to_bytes(4, "big") + b"\x00\x00\x00\x07" + bytes(160)
           for i in range(5)]
    with_mki = [(p := tx.protect(r))[:-10] + b"\x00\x00\x00\x01" + p[-10:] for r in rtp]
    plain, failed, _ = decrypt_packets(with_mki, SrtpKey("AES_CM_128_HMAC_SHA1_80", key, mki_length=4))
    assert failed == 0 and plain == rtp


# ------------------------------------------------------------------------------ refusing


def test_extract_and_score_refuse_without_a_key(tmp_path):
    cap = SRTP / "srtp_nosdp.pcap"
    msg = r"srtp_nosdp.pcap: stream 0x33333333 \(127.0.0.1:40020 -> 127.0.0.2:40022\) is SRTP-encrypted .* no key: pass"
    with pytest.raises(EncryptedStreamError, match=msg):
        extract_wav(cap, tmp_path / "x.wav")
    assert not (tmp_path / "x.wav").exists()
    with pytest.raises(EncryptedStreamError, match=msg):
        qoe.score(cap, kind="voice")
    (enc,) = scan_capture(cap).streams
    with pytest.raises(EncryptedStreamError, match="not decrypted"):
        qoe.voice.extract_audio(enc)
    res = CliRunner().invoke(cli, ["extract", str(cap), "-o", str(tmp_path / "y.wav")])
    assert res.exit_code == 2 and "--srtp-key" in res.output


def test_auto_scoring_keeps_an_undecryptable_stream_from_its_headers():
    """kind="auto" scores everything else a capture holds: an SRTP stream without a key is
    kept with its header-based scores (loss, jitter, G.107) and no full-reference score."""
    cap = SRTP / "srtp_nosdp.pcap"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        rep = qoe.score(cap)
    (d,) = [r for r in rep if r.kind == "voice"]
    assert d.expected == 140 and d.full_reference is None and d.network is not None
    assert any("SRTP-encrypted and no key decrypts it" in n for n in rep.note_lines())


@needs_ffmpeg
def test_cli_extract_with_a_key_equals_ffmpegs_decode(tmp_path):
    out = tmp_path / "x.wav"
    res = CliRunner().invoke(cli, ["extract", str(SRTP / "srtp_nosdp.pcap"), "-o", str(out), "--srtp-key", C80,
                                   "--jitter-buffer", "none", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert '"srtp_key_source": "user"' in res.output
    got, _ = soundfile.read(out, dtype="int16")
    ref = _alaw_round_trip(DATA / "speech" / "en_gb_female_8k.wav", tmp_path)
    assert got.size == 140 * 160
    np.testing.assert_array_equal(got, ref[: got.size])


def test_score_with_a_key_equals_the_plain_twins_score(tmp_path):
    """Full-reference score of the decrypted stream against its first 2.4 s of speech: the same
    PESQ as the plain twin's (same audio with no jitter buffer), and a note on the decryption."""
    ref, fs = soundfile.read(DATA / "speech" / "en_gb_female_8k.wav", dtype="int16")
    excerpt = tmp_path / "excerpt.wav"
    soundfile.write(excerpt, ref[: int(2.4 * fs)], fs, subtype="PCM_16")
    opts = CallOptions(jitter_buffer="none", srtp_keys=(C80,), network_delay_ms=0.0)
    enc = qoe.score(SRTP / "srtp_nosdp.pcap", reference=excerpt, kind="voice", options={"voice": opts})
    plain = qoe.score(SRTP / "plain.pcap", reference=excerpt, kind="voice", options={"voice": opts})
    (d_enc,), (d_plain,) = enc.results, plain.results
    assert d_enc.full_reference is not None
    assert d_enc.full_reference.mos_lqo == d_plain.full_reference.mos_lqo
    assert any("SRTP decrypted (AES_CM_128_HMAC_SHA1_80, key from user)" in n for n in enc.notes)


def test_srtcp_is_recognised_and_its_ciphertext_not_read():
    """FFmpeg sends one SRTCP sender report per direction (28-byte SR + 4-byte index + 32-bit
    tag = 36 bytes, RFC 3711 §3.4): counted as RTCP, but its encrypted NTP time and counts give
    no RTCP summary (a plain SR would: see the RTT tests of test_rtp_capture.py)."""
    scan = scan_capture(SRTP / "srtp_call.pcap", keep_packets=False)
    assert scan.rtcp_packets == 2 and scan.rtcp == {}
    assert all(s.rtcp is None for s in scan.streams)


def test_asymmetric_rtp_takes_the_key_of_the_other_party_in_the_call(tmp_path):
    """The caller's SRTP rewritten to leave from port 45000, which no SDP announced (UDP ports
    are outside what SRTP authenticates, RFC 3711 §3.1): its key is then found as the other
    media section of the same call (RFC 3264 §6), the offer's tag-2 key, and it decrypts."""
    moved = tmp_path / "asymmetric.pcap"
    with open(SRTP / "srtp_call.pcap", "rb") as f_in, open(moved, "wb") as f_out:
        reader = dpkt.pcap.Reader(f_in)
        writer = dpkt.pcap.Writer(f_out, linktype=reader.datalink())
        for ts, buf in reader:
            eth = dpkt.ethernet.Ethernet(buf)
            udp = eth.data.data
            if isinstance(udp, dpkt.udp.UDP) and udp.sport == 40000 and udp.dport == 40002:
                udp.sport, udp.sum = 45000, 0  # RFC 768: checksum 0 = none
                buf = bytes(eth)
            writer.writepkt(buf, ts)
    scan = scan_capture(moved)
    (call,) = scan.calls
    caller = next(s for s in scan.streams if s.key.src == "127.0.0.1")
    assert caller.key.sport == 45000 and caller.call_id == "srtp-call"
    assert caller.srtp.sdes == call.offer[0].crypto[1]
    (dec,) = decrypt_streams(moved, [caller])
    assert (dec.srtp.auth_failures, len(dec.packets)) == (0, 150)


def test_decrypt_streams_old_home_warns_and_names_the_new_one():
    import qoe.rtp.srtp as srtp_module

    with pytest.warns(DeprecationWarning, match="qoe.rtp.decrypt.decrypt_streams"):
        old = srtp_module.decrypt_streams
    assert old is decrypt_streams
    with pytest.raises(AttributeError):
        srtp_module.no_such_name  # noqa: B018
