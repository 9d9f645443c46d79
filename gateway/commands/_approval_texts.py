"""What people and the model read about approvals."""

PROMPT = (
    "Approval {id}: the assistant wants to use a tool{for_whom}.\n"
    "Tool: {tool}\nServer: {server}\nArguments (whole, hidden characters shown):\n{arguments}\n"
    "Answer within {seconds} s: /approve {id} or /deny {id}"
)
FOR_PERSON = " for {person}"
APPROVE = "Approve"
DENY = "Deny"

# for the model (a tool error)
REFUSED_DENIED = "tool {tool!r} was not run: {by} denied the approval it needs"
REFUSED_TIMEOUT = (
    "tool {tool!r} was not run: it needs approval and nobody answered within {seconds} s"
)
REFUSED_UNASKED = "tool {tool!r} was not run: it needs approval, and asking for it failed"
REFUSED_NO_ADMIN = "tool {tool!r} was not run: it needs an admin's approval and no admin is set"

# for the people deciding
USAGE = "Usage: /{verb} ID (the id of a pending approval)"
NO_SUCH = "There is no approval {id}."
NOT_YOURS = "Approval {id} is not yours to decide."
ALREADY = "Approval {id} is no longer pending ({status})."
APPROVED = "Approved {id}: {tool} runs now."
DENIED = "Denied {id}: {tool} is not run."
TIMED_OUT = "Approval {id} for {tool} expired after {seconds} s without an answer; it was not run."
EXPIRED_RESTART = (
    "Approval {id} for {tool} expired: the gateway restarted before it was answered, "
    "so the call was not run. Ask again if you still want it."
)
EXPIRED_STOPPED = (
    "Approval {id} for {tool} expired: the answer it belonged to was stopped, so the call "
    "was not run."
)
