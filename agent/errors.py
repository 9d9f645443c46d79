"""Errors raised by the agent layer.

Exception tree::

    AgentError              root of every error this package raises
    └── LLMError            the model endpoint could not give an answer
        ├── LLMUnavailable  retries exhausted: connection, timeout, 429, 5xx
        └── LLMRequestError the endpoint refused the request (400, 401, 404…);
                            retrying the same request cannot help
    └── BudgetExhausted     the person's budget is spent: no call is made;
                            its text is the message for the person

The text of these errors is for operators' logs; users get a short apology.
"""

from __future__ import annotations


class AgentError(Exception):
    """Root of the agent package's errors."""


class LLMError(AgentError):
    """The LLM endpoint did not produce an answer."""


class LLMUnavailable(LLMError):
    """The endpoint stayed unreachable, overloaded or failing after every retry."""


class LLMRequestError(LLMError):
    """The endpoint rejected the request itself (bad key, unknown model, bad input)."""


class BudgetExhausted(AgentError):
    """The person whose session this is has spent a budget: the LLM call is not made.

    ``str()`` is the message for the person (which limit, when it resets).
    """
