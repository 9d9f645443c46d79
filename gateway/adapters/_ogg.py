"""How long an Ogg Opus stream lasts, read from its last page (no decoding).

An Ogg page starts ``OggS``; bytes 6-13 hold its granule position, for Opus the
number of 48 kHz samples decoded by the end of the page. The ``OpusHead``
packet names the pre-skip: samples at the start that are not played. The
length is the last page's granule position less the pre-skip.
"""

from __future__ import annotations

import struct

__all__ = ["opus_seconds"]

OPUS_RATE = 48_000


def opus_seconds(data: bytes) -> float | None:
    """The length of an Ogg Opus stream in seconds; None when ``data`` is not one."""
    head = data.find(b"OpusHead")
    last = data.rfind(b"OggS")
    if not data.startswith(b"OggS") or head < 0 or last < 0 or len(data) < last + 14:
        return None
    if len(data) < head + 12:
        return None
    skip = int(struct.unpack_from("<H", data, head + 10)[0])
    granule = int(struct.unpack_from("<q", data, last + 6)[0])
    if granule < skip:
        return None
    return (granule - skip) / OPUS_RATE
