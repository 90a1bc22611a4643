"""The list of commands attached to the ``qoe`` group, one module per domain."""

from __future__ import annotations

from qoe_cli.delay_cmd import delay
from qoe_cli.demo_cmd import demo
from qoe_cli.emodel_cmd import emodel
from qoe_cli.extract_cmd import extract
from qoe_cli.pesq_cmd import pesq
from qoe_cli.streams_cmd import streams
from qoe_cli.web_cmd import web

ALL = [emodel, web, demo]
ALL += [extract, delay]
ALL += [pesq]
ALL += [streams]
