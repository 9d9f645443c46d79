"""A person's data taken out of chorus: export, erasure, tombstones, the linked-account seam."""

from memory.erasure._erase import Receipt, StoreOutcome, erase_person
from memory.erasure._export import export_person
from memory.erasure._people import accounts_of
from memory.erasure._sweep import PERSONAL_TABLES, Sweep, TableSet
from memory.erasure._tombstones import Tombstones

__all__ = [
    "PERSONAL_TABLES",
    "Receipt",
    "StoreOutcome",
    "Sweep",
    "TableSet",
    "Tombstones",
    "accounts_of",
    "erase_person",
    "export_person",
]
