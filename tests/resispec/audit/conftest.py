"""Torch samplers in these tests run on one CPU thread (small tensors: threads cost more than they give, and the
machine is shared)."""

import pytest


@pytest.fixture(autouse=True)
def one_torch_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
