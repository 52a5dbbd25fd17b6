"""The audit room: the sequence-level audit of generated text (``resispec audit-stream``) and its generators."""
