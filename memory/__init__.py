"""What chorus remembers: curated memory files, transcripts, providers and the job queue.

A namespace of subpackages, each naming its public surface in its own
``__init__`` (``memory.store``, ``memory.transcripts``, ``memory.providers``,
``memory.jobs``, ``memory.database``), beside shared modules (``paths``,
``errors``, ``settings``, …). Nothing is re-exported here.
"""

__all__: list[str] = []
