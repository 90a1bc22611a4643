"""The commands of the ``qoe`` group: name -> "module:attribute", one module per domain.

Commands are imported only when used (or listed by ``--help``), so ``qoe streams`` on a big
capture does not import the P.862 scorer and SciPy. To add a command, add a line here.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "emodel": "qoe_cli.emodel_cmd:emodel",
    "web": "qoe_cli.web_cmd:web",
    "streams": "qoe_cli.streams_cmd:streams",
    "extract": "qoe_cli.extract_cmd:extract",
    "delay": "qoe_cli.delay_cmd:delay",
    "pesq": "qoe_cli.pesq_cmd:pesq",
    "demo": "qoe_cli.demo_cmd:demo",
    "score": "qoe_cli.score_cmd:score",
    "video": "qoe_cli.video_cmd:video",
    "batch": "qoe_cli.batch_cmd:batch",
    "report": "qoe_cli.plot_cmd:report",
    "plot": "qoe_cli.plot_cmd:plot",
    "has": "qoe_cli.has_cmd:has",
}

#: Commands whose work has no BLAS in it (no matrix or long-vector products: RTP statistics,
#: TCP/HTTP, the E-model, WAV extraction): they get one OpenBLAS thread, set before NumPy is
#: imported (OpenBLAS reads OPENBLAS_NUM_THREADS when it loads; a value the user set is kept).
#: OpenBLAS otherwise starts a worker thread per core as NumPy loads: 7 ms of the 84 ms of
#: ``python -c "import numpy"`` here (perf stat, 30 runs each), and ``qoe streams`` on the
#: benchmark's 4,000 concurrent calls took 1.5 % less wall time (12 alternating runs). The
#: video commands (alignment, PSNR) and those that may score video keep every core.
ONE_BLAS_THREAD: frozenset[str] = frozenset({"emodel", "web", "streams", "extract", "delay"})
