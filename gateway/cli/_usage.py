"""``chorus usage report [--month] [--json]``: the usage ledger, by person and model."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.table import Table

from gateway.budgets import money, windows
from gateway.cli._common import fail, out, settings
from gateway.config import database_location
from memory.errors import MemoryLayerError
from memory.usage_ledger import UsageLedger

usage_app = typer.Typer(help="What the LLM calls cost, per person.", no_args_is_help=True)


@usage_app.command("report")
def usage_report(
    month: Annotated[
        bool, typer.Option("--month", help="This calendar month instead of today.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """Tokens and cost by person and model, today or this month (``sessions.timezone``)."""
    cfg = settings()
    day, this_month = windows(time.time(), cfg.sessions.timezone)
    period = this_month if month else day
    try:
        with UsageLedger(database_location(cfg)) as ledger:
            lines = ledger.report(period.start, period.end)
    except MemoryLayerError as exc:
        raise fail(str(exc)) from None
    name = period.key.partition(":")[2]
    if as_json:
        document = {
            "period": name,
            "timezone": cfg.sessions.timezone,
            "rows": [
                {
                    "person": line.person,
                    "model": line.model,
                    "calls": line.calls,
                    "input_tokens": line.input_tokens,
                    "cached_tokens": line.cached_tokens,
                    "output_tokens": line.output_tokens,
                    "estimated_calls": line.estimated_calls,
                    "cost": line.cost,
                }
                for line in lines
            ],
        }
        typer.echo(json.dumps(document, indent=2))
        return
    if not lines:
        out.print(f"no LLM calls recorded in {name}")
        return
    table = Table("person", "model", "calls", "input", "cached", "output", "cost", title=name)
    for line in lines:
        estimated = f" ({line.estimated_calls} estimated)" if line.estimated_calls else ""
        table.add_row(
            line.person,
            line.model,
            f"{line.calls}{estimated}",
            f"{line.input_tokens:,}",
            f"{line.cached_tokens:,}",
            f"{line.output_tokens:,}",
            "unpriced" if line.cost is None else money(line.cost),
        )
    out.print(table)
