"""What ``/secret`` and the capture of a secret's value say to people."""

USAGE = (
    "Usage: /secret set NAME (in a direct message; your next message is the value), "
    "/secret list, /secret delete NAME, /secret cancel"
)
DM_ONLY = (
    "Secrets are set only in a direct message with me, never in a group: nothing was "
    "stored. Write to me privately and send /secret set {name} there."
)
VALUE_IN_COMMAND = (
    "The value goes in your next message, not after the name: nothing was stored. "
    "{deleted} Send /secret set {name} in a direct message, then the value alone."
)
BAD_NAME = (
    "{name!r} is not a secret name: capital letters, digits and _, starting with a letter, "
    "at most 64 characters (like GITHUB_TOKEN)."
)
NO_KEY = (
    "Secrets cannot be stored on this bot yet: its operator has not set CHORUS_SECRET_KEY. "
    "Nothing was stored."
)
ASK_VALUE = (
    "Send the value of {name} as your next message, within {minutes} minutes. It is stored "
    "encrypted, never shown to the model or kept in our conversation, and I delete your "
    "message where I can. /cancel to stop."
)
SAVED = "Saved {name}. {deleted}"
DELETED = "I deleted your message with it."
DELETE_YOURSELF = "I cannot delete messages on {platform}: delete your message with it yourself."
DELETE_FAILED = "I could not delete your message with it: delete it yourself."
NOT_TEXT = "The value of {name} must be text: nothing was stored. Send it as a plain message."
NOT_SAVED = "{name} was not stored: {reason}. {deleted} Send /secret set {name} to try again."
REASON_NO_KEY = "this bot has no CHORUS_SECRET_KEY any more"
REASON_STORE = "the secret store failed"
REASON_TOO_LONG = "the value is too long"
REASON_GONE = "the request was cancelled or expired meanwhile"
UNCHECKED = (
    "I could not check whether this message is a secret you were asked for (the database "
    "is failing), so I did not read it. Send it again in a moment."
)
NONE_STORED = "You have no secrets stored."
LIST_HEADER = "Your secrets (names only):"
REMOVED = "Deleted {name}."
NO_SUCH = "You have no secret named {name}."
CANCELLED = "Cancelled: I am no longer waiting for the value of {name}."
NOTHING_WAITING = "No /secret set is waiting for a value."
