"""What the gateway says to people about their messages and turns, in one place."""

APOLOGY = "Sorry — something went wrong on my side. Please try again."
LLM_UNREACHABLE = (
    "Sorry — I can't reach my language model right now. Your message is saved; "
    "please try again in a moment."
)
CUT_OFF_NOTE = "\n\n(cut off: my language model stopped answering — please ask again)"
STILL_WORKING = "Still working on it — this is taking longer than usual."
EMPTY = "I got an empty message. Send me some text and I'll answer."
ATTACHMENTS_ONLY = "I can't read attachments yet — please send your question as text."
ATTACHMENTS_SKIPPED = "I can't read attachments yet, so I'm answering your text only."
TOO_LONG = (
    "That message is too long for me ({n:,} characters; the limit is {limit:,}). "
    "Please send it in smaller parts."
)
SENT_PRIVATELY = "I've sent you a private message."
START_CHAT_FIRST = (
    "That answer is for you alone, and I can't message you before you start a chat with me: "
    "{link} — then send the command again."
)
NO_PRIVATE_CHAT = (
    "That answer is for you alone, and I can't message you privately. "
    "Send me the command in a direct message."
)
PRIVATE_FAILED = "I couldn't send you that answer privately just now. Please try again shortly."
SHUTTING_DOWN = "I'm restarting right now — please send that again in a minute."
RATE_LIMITED = (
    "You're sending messages faster than I can answer, so I skipped this one, and I'll "
    "skip what you send in the next {seconds} seconds too. Please send it again after that."
)
STOPPED_NOTE = "\n\n(stopped)"
RESTARTED_UNANSWERED = "I was restarted and could not answer that — please ask again."
STORAGE_FAULT_WAIT = (
    "I can't take messages in right now: my storage is failing. Yours is kept and "
    "will be answered as soon as it works again; no need to send it twice."
)
NOT_ALLOWED = "This bot is private; ask an admin to add you (your id is {user_key})."
COMMAND_DONE = "Done."
