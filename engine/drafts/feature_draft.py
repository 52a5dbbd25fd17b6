"""The feature draft: an EAGLE-style head on the target's own last hidden states (EAGLE, arXiv 2401.15077).

The target's final-norm state ``f_t`` (what its head turns into p at position t, `CompactLM.last_features`)
carries most of what the next state will be. The draft pairs it with the token drawn there and predicts the
next state with one decoder layer of its own:

    e_j = W_in [E[x_j] ; f_(j-1)]                (E: the target's embedding; f_(j-1) = 0 before the answer)
    g_j = Layer(e_0 .. e_j)_j                    (one Llama decoder layer, causal over the pairs so far)
    q(. | x_<=j) = softmax over S of (E_S g_j),  every token outside S ``GAP`` below the least logit in S

with j counted from the prompt's last token (j = 0; the draft never sees the prompt's states, only the
answer's) and S the ``K`` tokens of most target mass on the training text (a smaller head: FR-Spec, arXiv
2502.14856). At a candidate's own node the draft has no target state yet: it feeds its prediction ``g`` in
place of ``f`` (EAGLE's draft tree), so acceptance falls with depth.

Exactness: q at a node is a function of the context alone (the tokens, and the target's states at the
accepted positions, which are themselves functions of the tokens), computed before the node's candidates are
drawn; the verifiers keep p's law whatever q is (docs/draft.md, "The feature draft").

Weights: ``W_in``, the layer and the token set S are the draft's own (`resispec.engine.train.train_feature_draft`;
committed at `FEATURE_WEIGHTS_PATH`, half precision); E is the target's. At run time every product is an
int8 kernel on bfloat16 rows where those run (`resispec.engine.model.quantize.Int8Linear`), float32 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file
from torch import nn
from torch.nn import functional

from resispec.engine.drafts.ngram import GAP
from resispec.engine.drafts.trained import WEIGHTS_DIR, read_draft_meta
from resispec.engine.model.quantize import Int8Linear, integer_kernels_run_on
from resispec.engine.runtime.compact_lm import is_compact_compatible, rms_norm, rotate, signed_sin
from resispec.engine.runtime.tree_lm import TreeCacheLM

if TYPE_CHECKING:
    from transformers import PreTrainedModel

FEATURE_WEIGHTS_PATH = WEIGHTS_DIR / "feature_draft.safetensors"
PRODUCTS = ("fc", "qkv", "o", "gate_up", "down")
"""The draft's own linear layers, in the order of `feature_layer`'s products (fc: ``W_in``)."""

Product = Callable[[torch.Tensor], torch.Tensor]
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def feature_layer(pairs: torch.Tensor, products: Sequence[Product], norms: Sequence[tuple[torch.Tensor, float]],
                  cos: torch.Tensor, sin_signed: torch.Tensor, attend: Attend, heads: int,
                  kv_heads: int) -> torch.Tensor:
    """The draft's network from its input pairs to its predicted states (module docstring).

    pairs float [B, n, 2 H] (``[E[x_j] ; f_(j-1)]``), ``products`` the five linear maps of `PRODUCTS` (float
    rows in, float rows out), ``norms`` the layer's (weight, eps) before attention and before the MLP, cos /
    `signed_sin` [n, d] of the pairs' positions, ``attend(queries [B, heads, n, d], keys, values [B, kv_heads,
    n, d]) -> [B, heads, n, d]`` -> g float [B, n, H].
    """
    fc, qkv_product, o_product, gate_up_product, down_product = products
    batch, rows = pairs.shape[:2]
    e = fc(pairs)
    qkv = qkv_product(rms_norm(e, norms[0])).view(batch, rows, heads + 2 * kv_heads, -1).transpose(1, 2)
    qk = rotate(qkv[:, : heads + kv_heads], cos, sin_signed)
    attended = attend(qk[:, :heads], qk[:, heads:], qkv[:, heads + kv_heads:])
    h = e + o_product(attended.transpose(1, 2).reshape(batch, rows, -1))
    gate, up = gate_up_product(rms_norm(h, norms[1])).chunk(2, dim=-1)
    return h + down_product(functional.silu(gate) * up)


class FeatureHead(nn.Module):
    """The draft's own weights (``W_in``, one decoder layer, the token set S) and its training forward.

    Args:
        target: the target p (a Llama-family model): its shapes, and with ``init_layer`` the layer copied.
        tokens: S, long [K], distinct token ids (the head's rows are the target's embedding rows at S).
        init_layer: the target layer the draft's layer starts from (None: fresh, for loading weights).
    """

    def __init__(self, target: PreTrainedModel, tokens: torch.Tensor, init_layer: int | None = None) -> None:
        super().__init__()
        config = target.config
        hidden, heads, kv_heads = config.hidden_size, config.num_attention_heads, config.num_key_value_heads
        dim = getattr(config, "head_dim", None) or hidden // heads
        if tokens.ndim != 1 or len(tokens) == 0 or len(set(tokens.tolist())) != len(tokens) \
                or not 0 <= int(tokens.min()) <= int(tokens.max()) < config.vocab_size:
            raise ValueError(f"feature draft: S must be distinct token ids in [0, {config.vocab_size}), "
                             f"got {len(tokens)} ids")
        self.heads, self.kv_heads, self.eps = heads, kv_heads, config.rms_norm_eps
        self.register_buffer("tokens", tokens.long().clone())
        shapes = {"fc": (hidden, 2 * hidden), "qkv": ((heads + 2 * kv_heads) * dim, hidden),
                  "o": (hidden, heads * dim), "gate_up": (2 * config.intermediate_size, hidden),
                  "down": (hidden, config.intermediate_size)}
        self.weights = nn.ParameterDict({name: nn.Parameter(torch.empty(shape)) for name, shape in shapes.items()})
        self.norm_in = nn.Parameter(torch.ones(hidden))
        self.norm_post = nn.Parameter(torch.ones(hidden))
        if init_layer is not None:
            self._copy_layer(target, init_layer)

    @torch.no_grad()
    def _copy_layer(self, target: PreTrainedModel, index: int) -> None:
        """Start as the identity on the state: ``W_in = [0 | I]`` and the target's layer ``index`` with its two
        output products zeroed, so that g_j = f_(j-1) (q = the previous position's p) before training; the
        gradient reaches every weight after one step. (Measured on the held-out text, 25 steps at lr 1e-3:
        depth-1 overlap 0.080 from this start, 0.020 from a plain copy of layer 29 with ``W_in = [I | I]``.)"""
        layer = target.model.layers[index]
        attention, mlp = layer.self_attn, layer.mlp
        w = self.weights
        w["qkv"].copy_(torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight]))
        w["o"].zero_()
        w["gate_up"].copy_(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]))
        w["down"].zero_()
        hidden = w["fc"].shape[0]
        w["fc"].copy_(torch.cat([torch.zeros(hidden, hidden), torch.eye(hidden)], dim=1))
        self.norm_in.copy_(layer.input_layernorm.weight)
        self.norm_post.copy_(layer.post_attention_layernorm.weight)

    def norms(self) -> tuple[tuple[torch.Tensor, float], tuple[torch.Tensor, float]]:
        return (self.norm_in, self.eps), (self.norm_post, self.eps)

    def products(self) -> list[Product]:
        """The five linear maps of `PRODUCTS` as float32 products of these (trainable) weights."""
        return [lambda x, weight=self.weights[name]: functional.linear(x, weight) for name in PRODUCTS]

    def forward(self, embedded: torch.Tensor, features: torch.Tensor, cos: torch.Tensor,
                sin_signed: torch.Tensor) -> torch.Tensor:
        """Training: predicted states g float [B, n, H] of whole sequences of pairs (E[x_j] and f_(j-1), each
        float [B, n, H]), causal attention (padding at the end of a sequence only affects its own rows)."""
        def attend(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
            return functional.scaled_dot_product_attention(queries, keys, values, is_causal=True, enable_gqa=True)

        return feature_layer(torch.cat([embedded, features], dim=-1), self.products(), self.norms(), cos, sin_signed,
                             attend, self.heads, self.kv_heads)


def load_feature_head(target: PreTrainedModel, path: Path = FEATURE_WEIGHTS_PATH) -> tuple[FeatureHead, dict]:
    """The weights `resispec.engine.train.train_feature_draft` saved at ``path`` for ``target`` and their metadata; a
    ``ValueError`` where they were trained for another model shape."""
    meta = read_draft_meta(path)
    config = target.config
    expected = {"model_type": config.model_type, "hidden_size": config.hidden_size, "vocab_size": config.vocab_size}
    if {key: meta.get(key) for key in expected} != expected:
        raise ValueError(f"draft: feature weights {path} were trained for {meta}, not this target ({expected})")
    tensors = load_file(path)
    head = FeatureHead(target, tensors["tokens"])
    head.load_state_dict({name: tensor.float() for name, tensor in tensors.items()})
    return head.requires_grad_(False), meta


class FeatureDraft(TreeCacheLM):
    """The feature draft (module docstring) as a `Draft`: its own one-layer KV cache of the answer's pairs.

    The decoding loop hands it the target's states at the accepted positions (`observe`, before `commit`);
    its cache then holds pair j only where f_(j-1) is the target's own: `commit` drops every tree row (they
    were fed predicted states) and re-feeds the accepted tokens as pending rows with the observed states.
    A teacher-forced score (calibration, `resispec bench draft`) observes the target's states along the
    whole chain first, so that every row gets a real state.

    Args:
        target: the target p, a model `CompactLM` runs (its forward records the states the draft needs).
        path: the weights (default: the committed `FEATURE_WEIGHTS_PATH`).
        int8: the products as int8 kernels (default: where they run, `integer_kernels_run_on`); False: float32,
            the training forward's arithmetic.
    """

    assistant_model = None
    """No transformers model computes this draft."""

    def __init__(self, target: PreTrainedModel, path: Path = FEATURE_WEIGHTS_PATH, int8: bool | None = None) -> None:
        if not is_compact_compatible(target):
            raise ValueError(f"draft: the feature draft needs a Llama-family target CompactLM runs (it reads the "
                            f"target's states), got {type(target).__name__}")
        head, self.meta = load_feature_head(target, path)
        self.heads, self.kv_heads = head.heads, head.kv_heads
        self.norms = head.norms()
        self.tokens = head.tokens
        self.embed = target.model.embed_tokens.weight
        self.rotary = target.model.rotary_emb
        head_rows = self.embed.detach()[head.tokens].float()
        linears = {name: head.weights[name].detach() for name in PRODUCTS} | {"head": head_rows}
        int8 = integer_kernels_run_on(self.embed.device) if int8 is None else int8
        self.products = {name: _product(weight, int8) for name, weight in linears.items()}
        self.head_dim = head.weights["qkv"].shape[0] // (self.heads + 2 * self.kv_heads)
        super().__init__(target)

    def _reset_cache(self) -> None:
        hidden = self.embed.shape[1]
        self._keys = torch.empty(self.kv_heads, 0, self.head_dim)
        self._values = torch.empty(self.kv_heads, 0, self.head_dim)
        self._features = torch.zeros(1, hidden)  # f_(-1) = 0: the draft sees no prompt state
        self._outputs: list[torch.Tensor] = []  # g of every tree row since the last commit, float [H]
        self._new_parents: list[int] = []

    def prefill(self, input_ids: torch.Tensor) -> None:
        """Start over on a prompt: nothing of it is cached (the draft reads the answer's pairs only); its last
        token is the first tree's root, pair 0 (with f = 0)."""
        if input_ids.ndim != 1 or len(input_ids) < 1:
            raise ValueError(f"input_ids must be a non-empty 1D tensor, got shape {tuple(input_ids.shape)}")
        self.reset()

    def observe(self, features: torch.Tensor) -> None:
        """The target's final-norm states (float or bfloat16 [m, H]) at the next m positions from the root on
        (the decoding loop: the accepted path's rows, root first, before `commit`)."""
        self._features = torch.cat([self._features, features.detach().float()])

    def grow(self, tokens: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        self._new_parents = parents.tolist()
        return super().grow(tokens, parents)

    def commit(self, accepted: torch.Tensor) -> None:
        """Drop the tree's rows (fed predicted states) and make the accepted tokens pending, their pairs to be
        fed with the states just observed for them. Without observed states (a forward timed in isolation,
        `resispec.engine.decode.calibration.measure_costs`) nothing is kept."""
        self._keep_entries(self.prefix_len, [])
        observed = len(self._features) - 1 - self.prefix_len - len(self._pending)
        if observed not in (0, len(accepted)):
            raise ValueError(f"feature draft: {observed} states observed past the cache for {len(accepted)} "
                             "accepted tokens (observe the accepted path's states, root first, before commit)")
        if observed:
            self._pending = torch.cat([self._pending, accepted])
        self._tree_tokens, self._tree_parents, self._outputs = [], [], []

    def _keep_entries(self, prefix_len: int, keep: list[int]) -> None:
        index = torch.tensor([*range(prefix_len), *(prefix_len + k for k in keep)], dtype=torch.long)
        self._keys, self._values = self._keys[:, index], self._values[:, index]

    @torch.inference_mode()
    def _run(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
             first_logits: int = 0) -> torch.Tensor:
        """Pair j takes the observed state f_(j-1) where there is one (pending rows, the root, every row of a
        teacher-forced chain), else its parent row's prediction g (the draft's own tree rows)."""
        observed = len(self._features)
        tree_rows = len(input_ids) - first_logits
        parents = self._new_parents[-tree_rows:] if tree_rows else []
        features = []
        for row, position in enumerate(positions.tolist()):
            if position < observed:
                features.append(self._features[position])
            elif parents[row - first_logits] < len(self._outputs):
                features.append(self._outputs[parents[row - first_logits]])
            else:
                raise ValueError("feature draft: a node without an observed state is fed its parent's prediction, "
                                 "so its parent must be grown in an earlier call (one tree level per grow)")
        pairs = torch.cat([self.embed[input_ids], torch.stack(features)], dim=1)
        cos, sin = (t[0] for t in self.rotary(pairs[None], positions[None]))

        def attend(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
            self._keys = torch.cat([self._keys, keys[0]], dim=1)
            self._values = torch.cat([self._values, values[0]], dim=1)
            return functional.scaled_dot_product_attention(queries, self._keys[None], self._values[None],
                                                           attn_mask=allowed[None, None], enable_gqa=True)

        products = [self.products[name] for name in PRODUCTS]
        g = feature_layer(pairs[None], products, self.norms, cos, signed_sin(sin), attend, self.heads,
                          self.kv_heads)[0]
        self._outputs += list(g[first_logits:])
        return self._logits(g[first_logits:])

    def _logits(self, g: torch.Tensor) -> torch.Tensor:
        """q's logits float [n, V] from states g [n, H]: S's from the head, the rest ``GAP`` below S's least."""
        ours = self.products["head"](g)
        logits = (ours.amin(dim=1, keepdim=True) - GAP).expand(len(g), self.vocab_size).clone()
        logits[:, self.tokens] = ours
        return logits


def _product(weight: torch.Tensor, int8: bool) -> Product:
    """float rows -> float rows through ``weight`` [out, in]: an int8 kernel on bfloat16 rows where they run
    (`Int8Linear`, per-output-channel scales), else a float32 product."""
    if not int8:
        return lambda x: functional.linear(x, weight)
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight.data = weight.float()
    product = Int8Linear.from_linear(linear).bound_product()
    return lambda x: product(x.reshape(-1, x.shape[-1]).to(torch.bfloat16)).float().reshape(*x.shape[:-1], -1)
