"""Slash commands: one registry for every platform, user and admin commands."""

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
