"""``one_torch_thread``: torch samplers in a test module run on one CPU thread (small tensors: threads cost more than
they give, and the machine is shared); a module opts in with ``pytestmark = pytest.mark.usefixtures(...)``."""

import pytest


@pytest.fixture
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
