"""Everything access control says to people, in one place."""

NEW_CODE_COMMAND = "/pair"
"""What an unknown user sends to get a new code while an older one is still valid."""

USER_KEY_HELP = "A user is written platform:id, for example telegram:123456789."
PRIVATE = "This bot is private; ask an admin to add you (your id is {user_key})."
DENIED_NOTICE = "You are not allowed to use this bot."
CODE = (
    "This bot is private. To get access, send this pairing code to an admin: {code}\n"
    "It expires in {minutes} minutes."
)
CODE_PENDING = (
    "Your pairing code is waiting for an admin's approval. "
    f"Send {NEW_CODE_COMMAND} if you need a new one."
)
CODE_LIMIT = "You have asked for too many pairing codes; please try again in an hour."

NOT_A_CODE = "That is not a pairing code: codes have {length} letters and digits."
APPROVED = "Approved {user_key}."
CODE_UNKNOWN = "No pairing code matches that; check it, or ask the user for a new one."
CODE_EXPIRED = (
    "That pairing code has expired or was replaced by a newer one; "
    f"ask the user for a new one (they can send {NEW_CODE_COMMAND})."
)
CODE_USED = "That pairing code was already used."
NO_VALID_CODE = (
    "{key} has no valid pairing code any more; they can send "
    f"{NEW_CODE_COMMAND} for a new one, or you can /admin allow {{key}}."
)
ALREADY_ADMIN = "{key} is an admin already."
ALLOWED = "Allowed {key}."
CONSOLE_NOT_DENIED = "{key} is the local console user and cannot be denied."
ADMIN_NOT_DENIED = (
    "{key} is an admin in the configuration and cannot be denied; "
    "remove them from auth.admins first."
)
OVERRIDES_ALLOWED = " (this overrides auth.allowed_users)"
DENIED = "Denied {key}{note}."
