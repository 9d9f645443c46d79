"""The LLM loop one person talks to, and the background jobs that follow its turns.

A namespace of public modules: ``agent.agent`` (the turn loop, ``Agent``) with
its helpers beside it (``llm``, ``prompt``, ``flush``, ``compressor``,
``history``, ``memory_writes``, ``provider_calls``, ``shared_writes``, …), and
two packages with a surface of their own: ``agent.tools`` (the tool registry
and the core tools) and ``agent.jobs`` (the background job functions, their
context and scheduler). Nothing is re-exported here.
"""

__all__: list[str] = []
