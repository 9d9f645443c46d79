"""The ``chorus`` command line."""

from gateway.cli._app import app, main

__all__ = ["app", "main"]
