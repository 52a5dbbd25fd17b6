"""Benchmarks: medians and ratios measured in one run (machines here are shared and noisy)."""
