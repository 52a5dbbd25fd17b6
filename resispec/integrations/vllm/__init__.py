"""ResiSpec's vLLM plugin (docs/vllm.md): audit hooks that log every emitted token's randomized PIT under the
processed target row (``hooks``), a correct CPU ``expand_kernel`` (``expand``, vllm-project/vllm#55005), the
project's ``block`` and ``sps`` as the chain verifier (``verifier``), and the installed rejection sampler as an
``audit-sampler`` target (``target``).

Enabled by vLLM's own plugin mechanism: the entry point ``resispec = resispec.integrations.vllm:register`` in the
group ``vllm.general_plugins`` (``VLLM_PLUGINS=resispec`` selects it where several are installed); vLLM calls
``register`` in every process it starts. Configured by environment variables or a JSON file (``config``).
Imports vLLM only inside ``register`` and the modules it loads, so the core never depends on vLLM.
"""

from __future__ import annotations

import logging

from resispec.integrations.vllm.config import PluginConfig, load_config

logger = logging.getLogger("resispec.vllm")
_installed: PluginConfig | None = None


def register() -> None:
    """vLLM's ``vllm.general_plugins`` entry point: apply the configuration (``config``) in this process, once."""
    global _installed
    if _installed is not None:
        return
    config = load_config()
    if config.fix_expand:
        from resispec.integrations.vllm.expand import install_fixed_expand

        logger.info("resispec: expand_kernel shim %s", "replaced" if install_fixed_expand() else "absent")
    if config.verifier != "vllm":
        from resispec.integrations.vllm.verifier import install_verifier

        install_verifier(config.verifier)
    if config.audit_dir is not None:
        import vllm

        from resispec.integrations.vllm.hooks import install
        from resispec.integrations.vllm.recorder import Recorder

        install(Recorder(config.audit_dir, config.audit_seed, config.shard_tokens, f"vllm {vllm.__version__}"))
    _installed = config
