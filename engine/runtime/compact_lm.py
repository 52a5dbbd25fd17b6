"""`CompactLM`: a lean forward of a Llama-family causal LM over a preallocated KV cache.

The same network as transformers' ``LlamaForCausalLM`` (pre-norm decoder layers, grouped-query
attention with rotary positions, SwiGLU MLP, RMSNorm), computed with fewer, larger operations:

    h_0 = E[x];   for each layer l:
        a = RMSNorm(h) ;  [Q | K | V] = a W_qkv^T  (one fused product);  Q, K <- rope(Q, K, positions) (together)
        h <- h + softmax(Q K^T / sqrt(d) + mask) V  W_o^T
        b = RMSNorm(h) ;  [G | U] = b W_gu^T  (one fused product);  h <- h + (silu(G) * U) W_down^T
    logits = RMSNorm(h) W_head^T,   RMSNorm(h) = w * h / sqrt(mean(h^2) + eps)  (one fused op).

Keys and values live in one tensor per side, [layers, kv_heads, capacity, head_dim], written in place
(doubling the capacity when full); cache surgery after a commit is one gather per side. Everything that
touches the cache runs in ``torch.inference_mode`` (the lightest per-op dispatch; the cache tensors are
inference tensors). Float32 linear
layers use `resispec.engine.runtime.small_rows.PaddedLinear` (flat cost for the few rows of a round); `Int8Linear` and
`Int4Linear` layers (`resispec.engine.model.quantize`) are fused the same way (a mix of the two, where int4 fell back to
int8 for a shape, as side-by-side products). Rotary cos/sin come from the model's own rotary
module. Logits equal the transformers forward up to floating-point rounding (tests pin the difference).

Where every product is an integer kernel (the native target, the quantized self-drafts, layer-skip subsets) the
work between products runs in `resispec.engine.model.row_glue`'s compiled kernels (`_glued_layers`: one call per stretch
instead of ~6 torch calls; a one-row native forward 24.4 -> 20.6 ms on an AVX-512 Xeon, one thread); the
torch-operation forward (`_torch_layers`) serves float32 products.

Used for the target (float32) and the quantized self-drafts; any other architecture goes through
`resispec.engine.runtime.tree_lm.TreeLM`. `lm_for(model)` picks one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from weakref import WeakKeyDictionary

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from resispec.engine.model.compute import NATIVE, target_compute_of
from resispec.engine.model.native import Q8_0Linear
from resispec.engine.model.quantize import Int4Linear, Int8Linear
from resispec.engine.model.row_kernels import bits, row_kernels
from resispec.engine.runtime.small_rows import PaddedLinear, mkl_packing_available
from resispec.engine.runtime.tree_lm import TreeCacheLM, TreeLM

Projection = Callable[[torch.Tensor], torch.Tensor]
INITIAL_CAPACITY = 512


def fused_projection(parts: list[nn.Module], pad_small_rows: bool, bf16: Projection | None = None) -> Projection:
    """One product computing the outputs of the linear layers ``parts`` side by side, on float rows. Integer
    layers: their `bf16_projection` ``bf16`` after a cast; the native target's Q8_0 head, a layout of its own,
    through its module (float32 logits)."""
    if len(parts) == 1 and isinstance(parts[0], Q8_0Linear):
        return parts[0]
    if bf16 is not None:
        return lambda x: bf16(x.to(torch.bfloat16))
    if not all(isinstance(part, nn.Linear) and part.bias is None for part in parts):
        raise TypeError(f"CompactLM: expected bias-free nn.Linear or Int8Linear layers, got {parts}")
    weight = torch.cat([part.weight.detach() for part in parts])
    if pad_small_rows and mkl_packing_available(weight):
        return PaddedLinear(weight)
    return lambda x: functional.linear(x, weight)


def bf16_projection(parts: list[nn.Module]) -> Projection | None:
    """bfloat16 [rows, in] -> the integer layers ``parts``' outputs side by side (bfloat16 [rows, out]): one
    kernel call on their concatenation, or one each where int4 fell back to int8 for some; their kernels called
    directly (`bound_product`: no ``nn.Module`` call or attribute lookup, 120 products a token of the target).
    None unless every part is an integer layer."""
    for quantized in (Int8Linear, Int4Linear):
        if all(isinstance(part, quantized) for part in parts):
            return (parts[0] if len(parts) == 1 else quantized.concatenate(parts)).bound_product()
    if not takes_bf16_rows(parts):
        return None
    products = [part.bound_product() for part in parts]  # mixed
    return lambda x: torch.cat([product(x) for product in products], dim=-1)


def is_compact_compatible(model: nn.Module) -> bool:
    """A Llama-family model `CompactLM` reproduces: SwiGLU, no biases, default rotary, full attention."""
    config = getattr(model, "config", None)
    return (getattr(config, "model_type", None) in ("llama", "smollm3") and config.hidden_act == "silu"
            and not getattr(config, "attention_bias", False) and not getattr(config, "mlp_bias", False)
            and getattr(config, "sliding_window", None) is None and hasattr(model, "model")
            and getattr(config, "no_rope_layers", None) is None)


def lm_for(model: nn.Module) -> TreeCacheLM:
    """`CompactLM` for the models it reproduces, `TreeLM` (transformers' own forward) otherwise."""
    return CompactLM(model) if is_compact_compatible(model) else TreeLM(model)


def takes_bf16_rows(modules: list[nn.Module]) -> bool:
    """Whether every one of ``modules`` is an integer-kernel layer (bfloat16 rows in, bfloat16 out), the
    products `resispec.engine.model.row_glue` feeds."""
    return all(isinstance(module, (Int8Linear, Int4Linear)) for module in modules)


class _Layer:
    """One decoder layer's weights, fused."""

    def __init__(self, layer: nn.Module, pad_small_rows: bool) -> None:
        attention, mlp = layer.self_attn, layer.mlp
        groups = ([attention.q_proj, attention.k_proj, attention.v_proj], [attention.o_proj],
                  [mlp.gate_proj, mlp.up_proj], [mlp.down_proj])
        bf16 = [bf16_projection(parts) for parts in groups]
        self.qkv, self.o, self.gate_up, self.down = (fused_projection(parts, pad_small_rows, product)
                                                     for parts, product in zip(groups, bf16))
        self.bf16_products = None if None in bf16 else tuple(bf16)
        """(qkv, o, gate_up, down) on bfloat16 rows where every product is an integer kernel, else None."""
        self.norm_in = (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon)
        self.norm_post = (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)
        self.norm_in_array, self.norm_post_array = float32_array(self.norm_in), float32_array(self.norm_post)


def float32_array(norm: tuple[torch.Tensor, float]) -> tuple[np.ndarray, float] | None:
    """A norm's (weight, eps) with the weight as a NumPy view, for `resispec.engine.model.row_glue`; None unless the
    weight is float32 on the CPU."""
    weight, eps = norm
    cpu_float32 = weight.dtype == torch.float32 and weight.device.type == "cpu"
    return (weight.detach().numpy(), float(eps)) if cpu_float32 else None


def rms_norm(h: torch.Tensor, norm: tuple[torch.Tensor, float]) -> torch.Tensor:
    """``w * h / sqrt(mean(h^2) + eps)`` (one fused op; float32 accumulation for bfloat16 inputs)."""
    weight, eps = norm
    return functional.rms_norm(h, weight.shape, weight, eps)


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """``[-sin_1 | sin_2]`` of sin [n, d] (halves of d), so that ``rotate_half(x) sin = roll(x, d / 2) signed``:
    ``rotate_half(x) = [-x_2 | x_1]``, and ``-x_2 sin_1 = x_2 (-sin_1)`` exactly."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """Rotary embedding ``x cos + rotate_half(x) sin`` (x [heads, n, d], cos / `signed_sin` [n, d]): the same
    bits as the textbook form, in 4 operations instead of 7 (it runs twice a layer per forward)."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin_signed


def attend_row_by_row(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                      seen: list[int | torch.Tensor]) -> torch.Tensor:
    """Attention of each query row on its own: row r attends to the cache entries ``seen[r]``, either the
    first n_r entries (an int: a slice of the cache, no copy) or an index (long [n_r], ascending: gathered
    into a contiguous [kv_heads, n_r, d] block), in a one-query call with no mask.

    queries [heads, rows, d], keys / values [kv_heads, capacity, d] -> [heads, rows, d]. A row's result
    is then the same bits whatever the other rows are: in a tree forward exactly what a one-row forward at
    that node computes (same keys, same order, same call shape), which a batched masked call does not
    guarantee. A slice and a gathered copy of the same entries give the same bits (the kernel's arithmetic
    does not depend on strides; tested); the slice saves the copy, 0.8 ms a token at 300 cached tokens."""
    out = []
    for row, index in enumerate(seen):
        if isinstance(index, int):
            row_keys, row_values = keys[None, :, :index], values[None, :, :index]
        else:
            row_keys, row_values = keys.index_select(1, index)[None], values.index_select(1, index)[None]
        out.append(functional.scaled_dot_product_attention(
            queries[None, :, row: row + 1], row_keys, row_values, scale=queries.shape[-1] ** -0.5,
            enable_gqa=True)[0])
    return out[0] if len(out) == 1 else torch.cat(out, dim=1)


def entries_seen(allowed: torch.Tensor) -> list[int | torch.Tensor]:
    """Per row of ``allowed`` (bool [rows, entries]), what `attend_row_by_row` takes: n where the row sees
    exactly the first n entries (a chain's rows, `ar`'s one row), else the indices it sees."""
    counts = allowed.sum(dim=1).tolist()
    return [count if bool(row[:count].all()) else row.nonzero()[:, 0] for row, count in zip(allowed, counts)]


class _Weights:
    """A model's weights as `CompactLM` uses them (fused, packed); shared by every `CompactLM` of the model."""

    def __init__(self, model: nn.Module, pad_small_rows: bool) -> None:
        config = model.config
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.intermediate_size = config.intermediate_size
        self.embed = model.model.embed_tokens.weight
        self.layers = [_Layer(layer, pad_small_rows) for layer in model.model.layers]
        self.final_norm = (model.model.norm.weight, model.model.norm.variance_epsilon)
        head = model.get_output_embeddings()
        self.head_bf16 = bf16_projection([head])
        """The head's product on bfloat16 rows (bfloat16 logits) where it is an integer kernel, else None."""
        self.head = fused_projection([head], pad_small_rows, self.head_bf16)
        self.rotary = model.model.rotary_emb
        self.final_norm_array = float32_array(self.final_norm)
        self.glued = (self.embed.dtype == torch.float32 and self.embed.device.type == "cpu"
                      and self.final_norm_array is not None
                      and all(layer.bf16_products and layer.norm_in_array and layer.norm_post_array
                              for layer in self.layers))
        """Whether the forward runs `resispec.engine.model.row_glue` between its products: every decoder product an
        integer kernel (bfloat16 rows), the embedding, norms and cache float32 on the CPU."""
        self.kernels = row_kernels() if self.glued else None
        """`resispec.engine.model.row_kernels` where `glued`."""
        self.row_exact = target_compute_of(model) == NATIVE
        """Attention row by row (`attend_row_by_row`), for the native target: its bfloat16 product inputs turn
        the last-bit differences of a batched attention into visible ones, so only this keeps a node's p
        independent of the forward's row count."""


    def subset(self, layers: list[int]) -> _Weights:
        """These weights with only the decoder layers ``layers`` (in that order; the same objects, nothing
        copied), attending batched (a draft's forward: no row-exact attention)."""
        subset = copy.copy(self)
        subset.layers = [self.layers[index] for index in layers]
        subset.row_exact = False
        return subset


_PREPARED: WeakKeyDictionary[nn.Module, dict[bool, _Weights]] = WeakKeyDictionary()


def prepared_weights(model: nn.Module, pad_small_rows: bool = True) -> _Weights:
    """``model``'s weights as `CompactLM` uses them, prepared once per model (and padding choice)."""
    prepared = _PREPARED.setdefault(model, {})
    if pad_small_rows not in prepared:
        prepared[pad_small_rows] = _Weights(model, pad_small_rows)
    return prepared[pad_small_rows]


class CompactLM(TreeCacheLM):
    """A Llama-family causal LM (transformers weights, shared not copied) with a preallocated KV cache.

    Args:
        model: a ``LlamaForCausalLM`` (float32, bfloat16, or with `Int8Linear` layers).
        pad_small_rows: use `PaddedLinear` for float32 products (default on).

    The fused (and packed) weights are prepared once per model and shared by its `CompactLM` instances;
    each instance has its own KV cache.
    """

    def __init__(self, model: nn.Module, pad_small_rows: bool = True) -> None:
        if not is_compact_compatible(model):
            raise TypeError(f"CompactLM: {type(model).__name__} is not a Llama-family model it reproduces")
        self.weights = prepared_weights(model, pad_small_rows)
        super().__init__(model)

    def prepare(self, fewest: int, most: int) -> None:
        """Pack the float32 products (`PaddedLinear`) for forwards of ``fewest`` to ``most`` rows now, outside a
        timed decode (they are packed per row bucket on first use otherwise)."""
        w = self.weights
        for product in [w.head, *(p for layer in w.layers for p in (layer.qkv, layer.o, layer.gate_up, layer.down))]:
            if isinstance(product, PaddedLinear):
                product.prepare(fewest, most)

    _prefilling = False
    last_features: torch.Tensor | None = None
    """The final-norm states of the last forward's rows that got logits (float32 or bfloat16 [rows, hidden]: the
    head's input, so ``logits = head(last_features)``); the feature draft reads them
    (`resispec.engine.drafts.feature_draft`)."""
    source: nn.Module | None = None
    """The target this model is a self-draft of (it may start on that target's prompt cache), or None."""
    source_layers: list[int] | None = None
    """For `prefill_from`: the layer of the other model each of this one's layers takes its prompt's keys and
    values from (None: the same index; a layer-skip draft's kept layers)."""

    def prefill(self, input_ids: torch.Tensor) -> None:
        """`TreeCacheLM.prefill`; the prompt's rows attend in one batched call even for a row-exact model
        (`attend_row_by_row`): every decode of a prompt computes its cache the same way, so only the tree
        rows need to match one-row forwards."""
        self._prefilling = True
        try:
            super().prefill(input_ids)
        finally:
            self._prefilling = False

    def shares_prompt_cache_with(self, target: TreeCacheLM) -> bool:
        """Whether ``target`` is a `CompactLM` of the very model this one is a self-draft of (`source`): the
        decoding loop then starts it with `prefill_from` on the target's prompt cache."""
        return self.source is not None and isinstance(target, CompactLM) and target.model is self.source

    @torch.inference_mode()
    def _reset_cache(self) -> None:
        w = self.weights
        shape = (len(w.layers), w.num_kv_heads, INITIAL_CAPACITY, w.head_dim)
        self._keys = w.embed.new_empty(shape)
        self._values = w.embed.new_empty(shape)
        self._length = 0

    def _reserve(self, length: int) -> None:
        capacity = self._keys.shape[2]
        if length <= capacity:
            return
        while capacity < length:
            capacity *= 2
        for name in ("_keys", "_values"):
            old = getattr(self, name)
            new = old.new_empty(old.shape[0], old.shape[1], capacity, old.shape[3])
            new[:, :, : self._length] = old[:, :, : self._length]
            setattr(self, name, new)

    @torch.inference_mode()
    def prefill_from(self, other: CompactLM, input_ids: torch.Tensor) -> None:
        """Start over on the prompt ``input_ids`` (long [T]) like `prefill`, taking the prompt's keys and
        values from ``other`` (same head shapes, just prefilled on the same prompt; layer i from ``other``'s
        layer ``source_layers[i]``, or i) instead of computing them; they are cast to this model's dtype. A
        self-draft uses it to start on the target's exact cache without a prefill forward of its own."""
        w, theirs = self.weights, other.weights
        layers = list(range(len(theirs.layers))) if self.source_layers is None else self.source_layers
        shapes = [(len(x.layers), x.num_kv_heads, x.head_dim) for x in (w, theirs)]
        if shapes[0] != (len(layers), *shapes[1][1:]) or not all(0 <= i < shapes[1][0] for i in layers):
            raise ValueError(f"prefill_from: cache shapes differ (layers, kv heads, head dim): {shapes}, "
                             f"layers taken: {layers}")
        cached = len(input_ids) - 1
        if other.prefix_len != cached or len(other._pending) or other.tree_size:
            raise ValueError("prefill_from: the other model must be freshly prefilled on this prompt "
                             f"of {len(input_ids)} tokens")
        self.reset()
        self._reserve(cached)
        self._keys[:, :, :cached] = other._keys[layers, :, :cached]
        self._values[:, :, :cached] = other._values[layers, :, :cached]
        self._length = self.prefix_len = cached

    @torch.inference_mode()
    def _keep_entries(self, prefix_len: int, keep: list[int]) -> None:
        if any(not 0 <= k < self._length - prefix_len for k in keep):
            raise ValueError(f"keep must index the {self._length - prefix_len} entries past prefix_len={prefix_len}")
        if keep != list(range(len(keep))):
            index = torch.tensor(keep, device=self._keys.device) + prefix_len
            end = prefix_len + len(keep)
            self._keys[:, :, prefix_len:end] = self._keys[:, :, index]
            self._values[:, :, prefix_len:end] = self._values[:, :, index]
        self._length = prefix_len + len(keep)

    @torch.inference_mode()  # lighter per-op dispatch than no_grad (no view or version tracking)
    def _run(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
             first_logits: int = 0) -> torch.Tensor:
        rows, start = len(input_ids), self._length
        end = start + rows
        self._reserve(end)
        w = self.weights
        mask = None if bool(allowed.all()) else allowed[None, None]
        # row by row where the rows' attention could differ from a batched call's; one row seeing every entry
        # (`ar`) makes the very call `attend_row_by_row` would make
        one_full_row = rows == 1 and mask is None
        seen = entries_seen(allowed) if w.row_exact and not self._prefilling and not one_full_row else None
        h = w.embed[input_ids]
        cos, sin = (t[0] for t in w.rotary(h[None], positions[None]))
        sin = signed_sin(sin)
        run = self._glued_layers if w.glued else self._torch_layers
        keys, values = self._keys[:, None, :, :end], self._values[:, None, :, :end]  # sliced once a forward
        scale = w.head_dim ** -0.5

        def attend(index: int, queries: torch.Tensor) -> torch.Tensor:
            """Attention of ``queries`` (float [1, heads, rows, d]) on layer ``index``'s cache entries up to
            ``end`` (batched under ``mask``, or row by row over ``seen``: `attend_row_by_row`) -> the same shape."""
            if seen is not None:
                return attend_row_by_row(queries[0], self._keys[index], self._values[index], seen)[None]
            return functional.scaled_dot_product_attention(queries, keys[index], values[index], attn_mask=mask,
                                                           scale=scale, enable_gqa=True)

        logits = run(h, cos, sin, start, attend, first_logits)
        self._length = end
        return logits

    def _torch_layers(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, start: int,
                      attend: Callable[[int, torch.Tensor], torch.Tensor], first_logits: int) -> torch.Tensor:
        """The decoder layers and head in torch operations (the class docstring) on h (float [rows, hidden])
        -> the logits of rows ``first_logits`` on (a prefill's rows need no head)."""
        w, rows = self.weights, len(h)
        heads, kv_heads, dim = w.num_heads, w.num_kv_heads, w.head_dim
        end = start + rows
        for index, layer in enumerate(w.layers):
            qkv = layer.qkv(rms_norm(h, layer.norm_in)).view(rows, heads + 2 * kv_heads, dim).transpose(0, 1)
            qk = rotate(qkv[: heads + kv_heads], cos, sin)  # queries and keys rotated together
            self._keys[index, :, start:end] = qk[heads:]
            self._values[index, :, start:end] = qkv[heads + kv_heads:]
            h = h + layer.o(attend(index, qk[None, :heads])[0].transpose(0, 1).reshape(rows, -1))
            gate, up = layer.gate_up(rms_norm(h, layer.norm_post)).chunk(2, dim=-1)
            h = h + layer.down(functional.silu(gate) * up)
        self.last_features = rms_norm(h[first_logits:], w.final_norm)
        return w.head(self.last_features)

    def _glued_layers(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, start: int,
                      attend: Callable[[int, torch.Tensor], torch.Tensor], first_logits: int) -> torch.Tensor:
        """`_torch_layers` with `resispec.engine.model.row_glue` between the integer products (bfloat16 rows): one
        compiled call for each stretch between two products instead of ~6 torch calls; float32 logits."""
        w, rows = self.weights, len(h)
        kernels = w.kernels
        h_rows, cos_rows, sin_rows = h.numpy(), cos.contiguous().numpy(), sin.contiguous().numpy()
        keys, values = self._keys.numpy(), self._values.numpy()
        x = torch.empty(rows, h.shape[1], dtype=torch.bfloat16)
        x_bits = bits(x)
        queries = torch.empty(1, w.num_heads, rows, w.head_dim)
        queries_rows = queries.numpy()[0]
        attended = torch.empty(rows, w.num_heads * w.head_dim, dtype=torch.bfloat16)  # W_o's input
        attended_bits = bits(attended)
        hidden = torch.empty(rows, w.intermediate_size, dtype=torch.bfloat16)  # W_down's input
        hidden_bits = bits(hidden)
        delta = torch.zeros(rows, h.shape[1], dtype=torch.bfloat16)  # the residual added before the next norm
        for index, layer in enumerate(w.layers):
            qkv, o, gate_up, down = layer.bf16_products
            kernels.add_norm_rows(h_rows, bits(delta), *layer.norm_in_array, x_bits)
            kernels.rotate_store_rows(bits(qkv(x)), cos_rows, sin_rows, w.num_heads, queries_rows,
                                      keys[index], values[index], start)
            kernels.heads_to_rows(attend(index, queries).numpy()[0], attended_bits)
            kernels.add_norm_rows(h_rows, bits(o(attended)), *layer.norm_post_array, x_bits)
            kernels.swiglu_rows(bits(gate_up(x)), hidden_bits)
            delta = down(hidden)
        last = slice(first_logits, None)
        if w.head_bf16 is not None:
            kernels.add_norm_rows(h_rows[last], bits(delta)[last], *w.final_norm_array, x_bits[last])
            self.last_features = x[last]
            return w.head_bf16(x[last]).float()
        normed = torch.empty_like(h[last])
        kernels.add_norm_rows_f32(h_rows[last], bits(delta)[last], *w.final_norm_array, normed.numpy())
        self.last_features = normed
        return w.head(normed)
