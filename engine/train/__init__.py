"""The training room: the data, the distillation and the pipeline of the trained draft (``resispec train-draft``)."""
