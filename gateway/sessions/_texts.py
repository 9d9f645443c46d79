"""Everything the session manager says to people, in one place."""

RENEWED_NOTICE = {
    "idle": "(Your previous session ended after a quiet spell; this is a fresh one.{summary})",
    "daily_reset": "(Sessions renew daily; this is a fresh one.{summary})",
}
SUMMARY_NOTE = " I kept a short summary of where we were."
