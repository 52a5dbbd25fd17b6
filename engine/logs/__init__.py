"""The logs room: the verified nodes and the drafted rounds of a decode, written as ``resispec-pairs/1`` logs."""
