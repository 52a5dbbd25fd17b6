"""Package data: the prompt set (``prompts.json``) the draft is distilled on."""
