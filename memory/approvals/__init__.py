"""Tool calls waiting for a person's approval (``tools.policy`` rules with ``ask``)."""

from memory.approvals._store import Approval, ApprovalStore
from memory.errors import ApprovalStoreError

__all__ = ["Approval", "ApprovalStore", "ApprovalStoreError"]
