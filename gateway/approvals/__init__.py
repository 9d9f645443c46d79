"""Approval in the chat for tools a ``tools.policy`` rule marks ``ask``."""

from gateway.approvals._desk import ApprovalDesk

__all__ = ["ApprovalDesk"]
