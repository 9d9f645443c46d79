"""What admins and strangers read about pairing requests."""

CARD = (
    "Pairing request #{id}: {who} asks to use the bot.\n"
    "Their pairing code: {code}\n"
    "Approve or deny it here, or type /admin approve #{id} or /admin deny #{id}."
)
WHO = "{name} ({key})"
APPROVE = "Approve"
DENY = "Deny"
CARD_DECIDED = "Pairing request #{id}: {who} — {outcome}."
OUTCOMES = {
    "approved": "approved by {by}",
    "denied": "denied by {by}",
    "expired": "not approved: their pairing code had expired",
}

USAGE = "Usage: /admin {verb} #ID (the id of a pairing request)"
NO_SUCH = "There is no pairing request #{id}."
ALREADY = "Pairing request #{id} was already decided: {outcome}."
APPROVED = "Approved {key} (pairing request #{id}); they have been told."
DENIED = "Denied {key} (pairing request #{id}); /admin allow {key} lets them in after all."

# for the person who asked
YOU_ARE_IN = "You're in — an admin approved your request. Send me a message to get started."
DECLINED = "Sorry — an admin declined your request to use this bot."
