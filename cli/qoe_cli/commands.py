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
