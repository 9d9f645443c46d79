"""What chorus says about voice notes and files, and how it frames them for the model."""

VOICE_MARK = "[voice message, transcribed by machine: words may be misheard]"
"""Starts a transcript, in the transcript and the model's view alike."""
NO_VOICE = "I can't listen to voice messages here."
VOICE_TOO_BIG = "That voice message is too large for me (the limit is {limit})."
VOICE_TOO_LONG = "That voice message is too long for me (the limit is {limit})."
VOICE_FAILED = "I couldn't transcribe that voice message just now. Please try again shortly."
VOICE_SILENT = "I couldn't make out any words in that voice message."
NOT_DOWNLOADED = "I couldn't download {name}. Please try again."
UNREADABLE_KIND = "I can't read this kind of file yet ({name})."
DOCUMENT_TOO_BIG = "{name} is too large for me to read (the limit is {limit})."
DOCUMENT_BROKEN = "I couldn't read {name}: the file seems damaged or is protected."
DOCUMENT_EMPTY = "I found no text in {name}."
TRUNCATED = "\n(cut off here: the file has {total:,} characters; the first {kept:,} are shown)"


def size_text(count: int) -> str:
    """``count`` bytes for people: "20 MB", "512 KB"."""
    for unit, size in (("MB", 1024 * 1024), ("KB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MB"
    return f"{count:,} bytes"


def seconds_text(seconds: float) -> str:
    """``seconds`` for people: "5 minutes", "90 seconds"."""
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} seconds"
