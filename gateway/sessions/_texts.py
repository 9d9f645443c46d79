"""Everything the session manager says to people, in one place."""

RENEWED_NOTICE = {
    "idle": "(Your previous session ended after a quiet spell; this is a fresh one.{summary})",
    "daily_reset": "(Sessions renew daily; this is a fresh one.{summary})",
}
SUMMARY_NOTE = " I kept a short summary of where we were."
QUOTED_TITLES = {
    "thread": "Earlier in this thread",
    "forwarded": "A forwarded message",
    "document": "A file shared with the message",
    "reply": "The message this one replies to",
}
"""The title of each kind of others' words in a message, as the model is shown them."""
