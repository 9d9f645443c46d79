"""Slash commands: one registry for every platform, user and admin commands.

Each name is imported on first use, so that a command line that needs one desk does
not load what the others run on (the agent's jobs and its LLM client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway._lazy import lazy_names

if TYPE_CHECKING:
    from gateway.commands._admin import register_admin_commands
    from gateway.commands._approvals import ApprovalDesk
    from gateway.commands._export import ExportDesk
    from gateway.commands._flagged import flagged_command
    from gateway.commands._link import LinkDesk, provider_merger
    from gateway.commands._pairing import PairingDesk
    from gateway.commands._registry import Command, CommandContext, CommandRegistry, parse_command
    from gateway.commands._review import review
    from gateway.commands._secrets import SecretDesk, open_secret_store
    from gateway.commands._services import (
        AccessControl,
        CommandServices,
        PairingControl,
        PeopleControl,
        SessionControl,
    )
    from gateway.commands._user import register_user_commands
    from gateway.commands._voice import VoiceDesk

__all__ = [
    "AccessControl",
    "ApprovalDesk",
    "Command",
    "CommandContext",
    "CommandRegistry",
    "CommandServices",
    "ExportDesk",
    "LinkDesk",
    "PairingControl",
    "PairingDesk",
    "PeopleControl",
    "SecretDesk",
    "SessionControl",
    "VoiceDesk",
    "flagged_command",
    "open_secret_store",
    "parse_command",
    "provider_merger",
    "register_admin_commands",
    "register_user_commands",
    "review",
]


_HOME = {
    "register_admin_commands": ("gateway.commands._admin", "register_admin_commands"),
    "ApprovalDesk": ("gateway.commands._approvals", "ApprovalDesk"),
    "ExportDesk": ("gateway.commands._export", "ExportDesk"),
    "flagged_command": ("gateway.commands._flagged", "flagged_command"),
    "LinkDesk": ("gateway.commands._link", "LinkDesk"),
    "provider_merger": ("gateway.commands._link", "provider_merger"),
    "PairingDesk": ("gateway.commands._pairing", "PairingDesk"),
    "Command": ("gateway.commands._registry", "Command"),
    "CommandContext": ("gateway.commands._registry", "CommandContext"),
    "CommandRegistry": ("gateway.commands._registry", "CommandRegistry"),
    "parse_command": ("gateway.commands._registry", "parse_command"),
    "review": ("gateway.commands._review", "review"),
    "SecretDesk": ("gateway.commands._secrets", "SecretDesk"),
    "open_secret_store": ("gateway.commands._secrets", "open_secret_store"),
    "AccessControl": ("gateway.commands._services", "AccessControl"),
    "CommandServices": ("gateway.commands._services", "CommandServices"),
    "PairingControl": ("gateway.commands._services", "PairingControl"),
    "PeopleControl": ("gateway.commands._services", "PeopleControl"),
    "SessionControl": ("gateway.commands._services", "SessionControl"),
    "register_user_commands": ("gateway.commands._user", "register_user_commands"),
    "VoiceDesk": ("gateway.commands._voice", "VoiceDesk"),
}
"""Where each name of ``__all__`` is defined; imported on first use."""


__getattr__ = lazy_names(__name__, _HOME, globals())
