"""The wire formats the simulator, the engine and the interfaces share, and the statistics over them.

- ``pairs``: logged distribution pairs, ``resispec-pairs/1`` (``.npz``; what the engine logs and the
  simulator reads).
- ``nodes``: logged verified nodes, ``resispec-nodes/1`` (Parquet; needs ``pyarrow``, the ``sim`` extra, so
  it is imported on use, not here): the schema and batches (``nodes``), the writer (``node_writer``) and the
  one reader (``node_reader``).
- ``pit_log``: an engine's log of emitted tokens with their randomized PITs, ``resispec-pit/1`` (Parquet shards;
  written by the vLLM plugin, read by ``resispec audit-log``; imported on use).
- ``stats``: estimates with 95 % intervals over pairs (means, pooled ratios, standard errors).

They sit in the core so that ``sim`` and ``engine`` are siblings on it, neither importing the other.
"""
