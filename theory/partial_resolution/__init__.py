"""partial_resolution: pooled's pools resolved locally, at the drawn candidates only."""
