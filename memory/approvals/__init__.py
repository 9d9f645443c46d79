"""Tool calls waiting for a person's approval (``tools.policy`` rules with ``ask``)."""

from memory.approvals._store import Approval, ApprovalStore, ApprovalStoreError

__all__ = ["Approval", "ApprovalStore", "ApprovalStoreError"]
