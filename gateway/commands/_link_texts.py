"""What ``/link``, ``/unlink``, ``/whoami`` and ``/admin link|unlink`` say."""

DM_ONLY = (
    "Linking accounts happens only in a direct message with me: nothing was done. "
    "Write to me privately and send /link there."
)
CODE = (
    "Your link code: {code}\n"
    "Within {minutes} minutes, send /link {code} to me in a direct message from your "
    "account on another platform. The two accounts then share one profile, one search "
    "of past conversations and one budget. The code works once; do not share it."
)
CODE_LIMIT = "You asked for {limit} link codes within the hour: wait a while and try again."
TRY_LIMIT = "Too many link codes tried within the hour: wait a while and try again."
NOT_A_CODE = "That is not a link code: a code has {length} letters and digits (from /link)."
CODE_UNKNOWN = "That link code is not known: check it, or send /link on the other account again."
CODE_EXPIRED = "That link code has expired: send /link on the other account for a new one."
CODE_USED = "That link code was used already: send /link on the other account for a new one."
CODE_SAME = (
    "That code is for an account on this same platform: send /link {code} from your "
    "account on another platform."
)
ALREADY = "These accounts are one person already.\n{accounts}"
LINKED = "Linked. Your accounts are now one person:\n{accounts}"
MERGED = "Your profiles were joined: {added} entries added, {duplicates} already there."
LEFT_OUT = (
    "{n} entries did not fit in your profile and were kept aside (nothing is lost; your "
    "old profile still holds them):\n{entries}\n"
    "To keep one, make room with /forget <words of an entry> and ask me to remember it."
)
ACCOUNTS_LINE = "• {account}{here}"
HERE = " (this one)"
WHOAMI = "One person ({person}) with the accounts:\n{accounts}"
WHOAMI_ALONE = (
    "No other account is linked to this one: send /link in a direct message to link your "
    "account on another platform."
)
NOT_LINKED = "This account is not linked to another one: nothing to unlink."
NOT_YOURS = "{account} is not one of your accounts: see /whoami."
UNLINK_USAGE = "Usage: /unlink (this account) or /unlink platform:id (one of your accounts)."
UNLINKED = (
    "{account} is its own person again: it goes back to the profile it had before it "
    "was linked, and its search covers its own conversations."
)
ADMIN_LINK_USAGE = "Usage: /admin link <platform:id> <platform:id>"
ADMIN_UNLINK_USAGE = "Usage: /admin unlink <platform:id>"
ADMIN_NOT_ACCOUNT = "{key} is not a platform account (platform:id)."
ADMIN_LINKED = "Linked {first} and {second} into {person}.{merge}"
ADMIN_ALREADY = "{first} and {second} are one person already ({person})."
ADMIN_LEFT_OUT = " {n} profile entries did not fit and were kept aside in the old profiles."
ADMIN_UNLINKED = "{account} is its own person again (it was linked to {person})."
ADMIN_NOT_LINKED = "{account} is not linked."
UNAVAILABLE = "Linking accounts is not available on this bot."
