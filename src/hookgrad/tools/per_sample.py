"""PerSampleGradients: the gradient of every sample's loss with respect to every trainable
parameter, ``p.grad_sample`` of shape ``(batch, *p.shape)``, from forward hooks, tensor hooks on the
module outputs and post-accumulate-grad hooks on the parameters.

How it works, per module that owns trainable parameters directly:

1. a forward pre-hook refuses modules whose output mixes samples (BatchNorm using batch statistics,
   Embedding with ``scale_grad_by_freq``) before they run;
2. a forward hook keeps the call's inputs (detached) and registers a tensor hook on each output
   that requires grad. Tensor hooks registered before an in-place change of the output receive the
   gradient of the value the module returned, so in-place activations after the module are fine;
3. when backward accumulates the gradient of one of the module's parameters, all gradients of the
   module's outputs have arrived (the parameter's gradient depends on them), so every call waiting
   for it is turned into per-sample gradients then: by a closed-form rule (Linear, convolutions,
   norms, Embedding), by recomputing the layer on the batch with autograd for the gradient of each
   product inside (RNNs, attention), or by re-running any other module one sample at a time.

Everything is computed with the tensors' own framework (hookgrad or torch), found from the tensor
type, so the tool serves both.
"""
from __future__ import annotations

import importlib
import itertools
import weakref
from typing import Any, Callable

from ._common import HookTool, check_choice, check_model, is_tensor, iter_tensors

__all__ = ["PerSampleGradients"]


class _Call:
    """One forward call of a watched module: its inputs, where their batch dims are, and the
    gradients of its outputs received in the current backward pass."""

    __slots__ = ("how", "args", "kwargs", "output", "grads", "extra", "pending", "handles", "__weakref__")

    def __init__(self, how, args, kwargs, output, n_outputs, extra):
        self.how, self.args, self.kwargs, self.output, self.extra = how, args, kwargs, output, extra
        self.grads: list[Any] = [None] * n_outputs
        self.pending = False
        self.handles: list[Any] = []      # of the tensor hooks on its outputs


class PerSampleGradients(HookTool):
    """Per-sample gradients for every trainable parameter of ``model``.

    After a backward pass inside the ``with`` block, each trainable parameter ``p`` that took part
    has ``p.grad_sample`` of shape ``(batch, *p.shape)``: row ``i`` is the gradient of sample ``i``'s
    loss alone. ``p.grad`` is left as backward made it. Several forward calls of one module before
    backward add up (per sample); so do several backward passes, as ``.grad`` does: ``clear()``
    (or ``p.grad_sample = None``) starts afresh. Leaving the block removes every hook and every
    ``grad_sample`` attribute the tool added.

    Args:
        model: a hookgrad or torch module.
        loss_reduction: ``"mean"`` when the loss averages over the batch (rows are then scaled by
            the batch size, so that each is the gradient of that sample's own loss and their mean is
            ``p.grad``), ``"sum"`` when it sums (their sum is ``p.grad``).
        batch_first: where the batch dim is for Linear, LayerNorm, Embedding and modules handled by
            re-running: dim 0 (True) or dim 1 (False, sequence first). Convolutions and the
            Batch/Group/InstanceNorm layers always have it at dim 0; RNNs and MultiheadAttention
            follow their own ``batch_first``.

    Rules from the recorded inputs and the output gradients: Linear, Conv1d/2d/3d,
    ConvTranspose1d/2d/3d, LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, BatchNorm1d/2d/3d in eval mode
    (running statistics) and Embedding in closed form; RNN, LSTM, GRU (layers, directions,
    ``proj_size``), their cells and MultiheadAttention (masks, ``bias_k``/``bias_v``,
    ``add_zero_attn``, separate key/value sizes) by recomputing their forward once on the whole
    batch, asking autograd for the gradient of every ``x @ W^T + b`` inside, and applying the
    linear rule per sample. Any other module that owns parameters (a custom module, a subclass with
    its own ``forward``, a convolution with a non-zero ``padding_mode``), and a recurrent or attention
    layer with dropout in training mode, is re-run one sample at a time on the recorded inputs, and
    autograd gives each sample's gradient of the recorded output gradients; the re-run must
    reproduce the batched output, else a clear error says the module is random (dropout in
    training) or mixes samples. Submodules called inside such a re-run see those calls (their hooks
    fire), the tool's own hooks ignore them.

    Refused, with an error naming the module: BatchNorm (and SyncBatchNorm) using batch statistics
    (training mode, or ``track_running_stats=False``), Embedding with ``scale_grad_by_freq``.
    Parameters used outside the forward of the module that owns them (a tied weight passed to
    ``F.linear`` by its parent) are not seen there.
    """

    _tool_name = "PerSampleGradients"

    def __init__(self, model: Any, loss_reduction: str = "mean", batch_first: bool = True) -> None:
        check_model(model, self._tool_name)
        check_choice(loss_reduction, ("mean", "sum"), "loss_reduction", self._tool_name)
        if not isinstance(batch_first, bool):
            raise TypeError(f"{self._tool_name}: batch_first must be a bool, got {batch_first!r}")
        super().__init__()
        self.model = model
        self.loss_reduction = loss_reduction
        self.batch_first = batch_first
        self._rerunning = False
        self._live_calls: weakref.WeakSet[_Call] = weakref.WeakSet()
        self._touched: dict[int, Any] = {}                    # id -> parameter given a grad_sample
        self._pending: dict[int, list[_Call]] = {}            # id(module) -> calls awaiting flush
        self.modules: list[tuple[str, Any, str]] = []         # (qualified name, module, rule name)
        owners: dict[int, list[tuple[str, Any]]] = {}
        params: dict[int, Any] = {}
        claimed: set[int] = set()      # submodules whose parameters a parent's rule covers
        try:
            for name, module in model.named_modules():
                if id(module) in claimed:
                    continue
                rule = _rule_name(module)
                own = _own_parameters(module, rule)
                if rule == "attention":   # out_proj's weights enter F.multi_head_attention_forward directly
                    claimed.update(id(m) for m in module.modules())
                if not own:
                    continue
                self.modules.append((name, module, rule))
                self._pending[id(module)] = []
                self._register(module.register_forward_pre_hook, self._refuse_coupling(name, module))
                self._register(module.register_forward_hook, self._record(name, module, rule), with_kwargs=True)
                for p in own:
                    owners.setdefault(id(p), []).append((name, module))
                    params[id(p)] = p
            for key, p in params.items():
                self._register(p.register_post_accumulate_grad_hook, self._flush_owners(owners[key]))
        except BaseException:
            self.close()
            raise

    # ---- hooks --------------------------------------------------------------------------------
    def _refuse_coupling(self, name: str, module: Any):
        framework = _framework(next(iter(module.parameters())))

        def hook(mod, args):
            # under no_grad nothing is differentiated: a BatchNorm in training mode may run there
            if self.enabled and not self._rerunning and framework.is_grad_enabled():
                reason = _batch_coupling(mod)
                if reason:
                    raise ValueError(f"{self._tool_name}: {_where(name, mod)} {reason}; per-sample gradients "
                                     "are not defined for it")
        return hook

    def _record(self, name: str, module: Any, rule: str):
        def hook(mod, args, kwargs, output):
            if not self.enabled or self._rerunning:
                return
            outs = [t for _, t in iter_tensors(output, "output")]
            wired = [t for t in outs if t.requires_grad]
            if not wired:
                return
            detached = _detached(tuple(args))
            kept_kwargs = _detached(dict(kwargs))
            how = rule if rule in _RULES and not _random_now(rule, mod) else "rerun"
            extra = _RULES[how][0](self, mod, detached, kept_kwargs) if how in _RULES else None
            keep_output = None
            if how == "rerun":   # the re-run compares against a copy (in-place changes follow)
                keep_output = [t.detach().clone() if t.requires_grad else None for t in outs]
            call = _Call(how, detached, kept_kwargs, keep_output, len(outs), extra)
            pending = self._pending[id(mod)]
            call.handles = [t.register_hook(self._grad_arrived(call, i, pending))
                            for i, t in enumerate(outs) if t.requires_grad]
            self._live_calls.add(call)      # until autograd frees the graph that holds its hooks
        return hook

    def _grad_arrived(self, call: _Call, index: int, pending: list):
        def hook(grad):
            if call.grads[index] is not None:
                # a tensor hook fires once per pass: this is a new pass, and the gradients kept are
                # from one that accumulated into no parameter (autograd.grad): not ours to count
                call.grads = [None] * len(call.grads)
            call.grads[index] = grad
            if not call.pending:
                call.pending = True
                pending.append(call)
        return hook

    def _flush_owners(self, owners: list[tuple[str, Any]]):
        def hook(param):
            for name, module in owners:
                calls = self._pending[id(module)]
                if calls:
                    taken = list(calls)
                    calls.clear()
                    for call in taken:
                        call.pending = False
                        try:
                            self._per_sample(name, module, call)
                        finally:
                            call.grads = [None] * len(call.grads)
        return hook

    # ---- per-sample gradients -----------------------------------------------------------------
    def _per_sample(self, name: str, module: Any, call: _Call) -> None:
        if self.loss_reduction == "mean":
            # every rule is linear in the output gradients: scale those (small) by the batch size,
            # not the per-sample gradients (large)
            batch = _call_batch(self, module, call)
            call.grads = [None if g is None else g * batch for g in call.grads]
        if call.how in _RULES:
            grads = _RULES[call.how][1](self, module, call)
        else:
            grads = self._rerun(name, module, call)
        for p, g in grads:
            if p is not None and g is not None and p.requires_grad:
                self._add(name, p, g)

    def _add(self, name: str, p: Any, g: Any) -> None:
        g = g.to(p.dtype) if g.dtype != p.dtype else g
        before = getattr(p, "grad_sample", None) if id(p) in self._touched else None
        if before is None:
            p.grad_sample = g
        elif tuple(before.shape) != tuple(g.shape):
            raise RuntimeError(f"{self._tool_name}: {name or 'the model'}: per-sample gradients of batch "
                               f"{g.shape[0]} cannot be added to those of batch {before.shape[0]} already in "
                               "grad_sample; call clear() between batches of different sizes")
        else:
            p.grad_sample = before + g
        self._touched[id(p)] = p

    def _batch_dim(self, module: Any) -> int:
        """Where the batch dim is in a module's inputs when its own layout does not say: dim 0 for
        the channel-first layers (convolutions, Batch/Group/InstanceNorm, subclasses included),
        else as ``batch_first`` says."""
        if any(k.__name__ in _CHANNEL_FIRST and k.__module__.startswith(_FRAMEWORK_MODULES)
               for k in type(module).__mro__):
            return 0
        return 0 if self.batch_first else 1

    def _rerun(self, name: str, module: Any, call: _Call) -> list[tuple[Any, Any]]:
        """Per-sample gradients by re-running ``module.forward`` on each sample (batch dim kept,
        size one) and asking autograd for the gradient of its outputs, weighted by the sample's
        slice of the recorded output gradients, with respect to the module's own parameters."""
        T = _framework(call.grads[next(i for i, g in enumerate(call.grads) if g is not None)])
        params = _own_parameters(module, _rule_name(module))
        in_dims, out_dims = _layout(self, module, call)
        batch = _batch_size(call.args, call.kwargs, in_dims, name, module)
        rows: list[list[Any]] = [[] for _ in params]
        pieces: list[list[Any]] = [[] for _ in call.grads]
        feeds = None        # which output tensors the module computed from which other outputs
        self._rerunning = True
        try:
            with T.enable_grad():
                for b in range(batch):
                    args = tuple(_take(a, in_dims.get(i), b, batch) for i, a in enumerate(call.args))
                    kwargs = {k: _take(v, in_dims.get(k), b, batch) for k, v in call.kwargs.items()}
                    outs = [t for _, t in iter_tensors(module.forward(*args, **kwargs), "output")]
                    if len(outs) != len(call.grads):
                        raise RuntimeError(f"{self._tool_name}: re-running {_where(name, module)} on one sample "
                                           f"gave {len(outs)} output tensors instead of {len(call.grads)}")
                    for i, t in enumerate(outs):
                        if call.output[i] is not None:
                            pieces[i].append(t.detach())
                    totals = [_take(g, out_dims[i], b, batch) if g is not None and outs[i].requires_grad else None
                              for i, g in enumerate(call.grads)]
                    if feeds is None:
                        feeds = _feeds(T, outs, totals)
                    external = _external(T, outs, totals, feeds) if any(feeds.values()) else totals
                    used = [t for t, g in zip(outs, external) if g is not None]
                    weights = [g for g in external if g is not None]
                    got = T.autograd.grad(used, params, weights, allow_unused=True) if used else [None] * len(params)
                    for row, g, p in zip(rows, got, params):
                        row.append(g if g is not None else p.detach().new_zeros(p.shape))
        finally:
            self._rerunning = False
        for i, kept in enumerate(call.output):
            if kept is None:
                continue
            again = T.cat(pieces[i], out_dims[i]) if out_dims[i] is not None else pieces[i][0]
            if tuple(again.shape) != tuple(kept.shape) or not _close(again, kept):
                raise RuntimeError(
                    f"{self._tool_name}: re-running {_where(name, module)} one sample at a time does not reproduce "
                    "its batched output: the module is random (dropout in training mode?) or mixes the samples "
                    "of a batch, so per-sample gradients are not defined for it")
        return [(p, T.stack(row)) for p, row in zip(params, rows)]

    # ---- results ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Set every ``grad_sample`` the tool wrote to None (hooks stay)."""
        for p in self._touched.values():
            p.grad_sample = None

    def close(self) -> None:
        """Remove every hook and every ``grad_sample`` attribute the tool added."""
        super().close()
        for call in list(getattr(self, "_live_calls", ())):    # hooks on outputs of graphs still alive
            for handle in call.handles:
                handle.remove()
        for p in getattr(self, "_touched", {}).values():
            try:
                del p.grad_sample
            except AttributeError:
                pass
        if hasattr(self, "_touched"):
            self._touched.clear()
            for calls in self._pending.values():
                calls.clear()


# ---- which rule ---------------------------------------------------------------------------------
_FRAMEWORK_MODULES = ("torch.nn.modules.", "hookgrad.nn.modules.")
_RULE_OF_CLASS = {
    "Linear": "linear", "Conv1d": "conv", "Conv2d": "conv", "Conv3d": "conv",
    "ConvTranspose1d": "conv_transpose", "ConvTranspose2d": "conv_transpose", "ConvTranspose3d": "conv_transpose",
    "LayerNorm": "layer_norm", "GroupNorm": "group_norm",
    "InstanceNorm1d": "instance_norm", "InstanceNorm2d": "instance_norm", "InstanceNorm3d": "instance_norm",
    "BatchNorm1d": "batch_norm", "BatchNorm2d": "batch_norm", "BatchNorm3d": "batch_norm",
    "SyncBatchNorm": "batch_norm", "Embedding": "embedding",
    "RNN": "rnn", "LSTM": "rnn", "GRU": "rnn", "RNNCell": "cell", "LSTMCell": "cell", "GRUCell": "cell",
    "MultiheadAttention": "attention",
}


_CHANNEL_FIRST = {name for name, rule in _RULE_OF_CLASS.items()
                  if rule in ("conv", "conv_transpose", "group_norm", "instance_norm", "batch_norm")}


def _rule_name(module: Any) -> str:
    """The rule for ``module``: that of the nearest framework layer class it derives from, provided
    it keeps that class's ``forward`` (a subclass with its own forward is re-run); "rerun" else."""
    for klass in type(module).__mro__:
        rule = _RULE_OF_CLASS.get(klass.__name__)
        if rule and klass.__module__.startswith(_FRAMEWORK_MODULES):
            if type(module).forward is not klass.forward:
                return "rerun"
            if rule == "conv" and getattr(module, "padding_mode", "zeros") != "zeros":
                return "rerun"
            return rule
    return "rerun"


def _own_parameters(module: Any, rule: str) -> list[Any]:
    """The trainable parameters whose per-sample gradients ``module``'s calls give."""
    recurse = rule == "attention"
    return [p for _, p in module.named_parameters(recurse=recurse) if p.requires_grad]


def _where(name: str, module: Any) -> str:
    return f"module {name!r} ({type(module).__name__})" if name else f"the model ({type(module).__name__})"


def _call_batch(tool: PerSampleGradients, module: Any, call: _Call) -> int:
    """The batch size of a call, read from its first input where the module's layout puts it."""
    if call.how == "rerun":
        in_dims, _ = _layout(tool, module, call)
        return _batch_size(call.args, call.kwargs, in_dims, "", module)
    x = _input(call)
    if call.how == "cell":
        return int(x.shape[0])
    if call.how in ("rnn", "attention"):
        if not is_tensor(x):       # a PackedSequence: the rule refuses it with its own message
            return 1
        return int(x.shape[0 if module.batch_first or x.dim() < 3 else 1])
    return int(x.shape[tool._batch_dim(module)])


def _random_now(rule: str, module: Any) -> bool:
    """True when the module draws random numbers in this call (dropout inside it in training mode):
    a closed-form rule cannot see the mask, so the call goes to the re-run, which refuses it."""
    if not module.training:
        return False
    if rule == "rnn":
        return bool(module.dropout) and module.num_layers > 1
    if rule == "attention":
        return bool(module.dropout)
    return False


def _batch_coupling(module: Any) -> str | None:
    rule = _rule_name(module)
    if rule == "batch_norm" and (module.training or getattr(module, "running_mean", None) is None):
        return ("normalizes with the statistics of the whole batch (BatchNorm in training mode, or without "
                "running statistics), so each sample's output depends on the others; call .eval() on it or "
                "replace it with GroupNorm, LayerNorm or InstanceNorm")
    if rule == "embedding" and getattr(module, "scale_grad_by_freq", False):
        return "scales gradients by how often each index occurs in the batch (scale_grad_by_freq=True)"
    return None


def _detached(value: Any) -> Any:
    """The same nest of tuples, lists and dicts with every tensor detached (a re-run must not
    reach back into the graph of an earlier call, e.g. an RNN cell's state from the step before)."""
    if is_tensor(value):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value


def _framework(t: Any):
    return importlib.import_module(type(t).__module__.split(".", 1)[0])


def _functional(t: Any):
    return importlib.import_module(type(t).__module__.split(".", 1)[0] + ".nn.functional")


# ---- closed-form rules: (what to keep at forward, per-sample gradients at backward) --------------
def _no_extra(tool, module, args, kwargs):
    return None


def _input(call: _Call) -> Any:
    return call.args[0] if call.args else next(v for v in call.kwargs.values() if is_tensor(v))


def _batch_leading(tool: PerSampleGradients, x: Any, g: Any) -> tuple[Any, Any]:
    if tool.batch_first:
        return x, g
    return x.transpose(0, 1), g.transpose(0, 1)


def _linear(tool, module, call):
    x, g = _batch_leading(tool, _input(call), call.grads[0])
    batch = x.shape[0]
    if x.dim() == 2:     # one row per sample: an outer product, no reduction
        weight = g.unsqueeze(2) * x.unsqueeze(1)
        bias = g
    else:
        x3, g3 = x.reshape(batch, -1, x.shape[-1]), g.reshape(batch, -1, g.shape[-1])
        weight = g3.transpose(1, 2) @ x3
        bias = g3.sum(1)
    return [(module.weight, weight), (getattr(module, "bias", None), bias)]


def _pairs(value: Any, n: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _conv_weight(x: Any, g: Any, kernel, stride, dilation, pads, groups: int) -> Any:
    """Per-sample gradient of a convolution weight ``(out, in/groups, *kernel)`` from its input
    ``x`` (batch, in, ...), zero-padded by ``pads`` ((left, right) per spatial dim), and the
    gradient ``g`` (batch, out, ...) of its output: for each kernel offset, the input positions that
    offset meets (a strided slice) times the output gradient, summed over positions."""
    F = _functional(x)
    T = _framework(x)
    flat = []
    for left, right in reversed(pads):
        flat += [left, right]
    if any(flat):
        x = F.pad(x, flat)
    batch, out, channels = g.shape[0], g.shape[1], x.shape[1]
    sizes = tuple(g.shape[2:])
    g = g.reshape(batch, groups, out // groups, -1).transpose(-1, -2)           # (B, G, L, out/G)
    products = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        index = [slice(None), slice(None)]
        index += [slice(o * dl, o * dl + st * (n - 1) + 1, st) for o, dl, st, n in zip(offset, dilation, stride, sizes)]
        seen = x[tuple(index)].reshape(batch, groups, channels // groups, -1)      # (B, G, in/G, L)
        products.append(seen @ g)                                                  # (B, G, in/G, out/G)
    w = T.stack(products, -1).permute(0, 1, 3, 2, 4)                             # (B, G, out/G, in/G, K)
    return w.reshape(batch, out, channels // groups, *kernel)


def _conv_pads(module: Any, d: int) -> list[tuple[int, int]]:
    kernel, dilation = _pairs(module.kernel_size, d), _pairs(module.dilation, d)
    if isinstance(module.padding, str):
        if module.padding == "valid":
            return [(0, 0)] * d
        totals = [dl * (k - 1) for k, dl in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in totals]
    return [(p, p) for p in _pairs(module.padding, d)]


def _unbatched(x: Any, d: int, module: Any) -> None:
    if x.dim() != d + 2:
        raise ValueError(f"PerSampleGradients: {type(module).__name__} got an input of shape {tuple(x.shape)} "
                         "without a batch dim; per-sample gradients need batched input")


def _conv(tool, module, call):
    x, g = _input(call), call.grads[0]
    d = len(module.kernel_size)
    _unbatched(x, d, module)
    weight = _conv_weight(x, g, _pairs(module.kernel_size, d), _pairs(module.stride, d),
                          _pairs(module.dilation, d), _conv_pads(module, d), module.groups)
    bias = g.reshape(g.shape[0], g.shape[1], -1).sum(2) if getattr(module, "bias", None) is not None else None
    return [(module.weight, weight), (getattr(module, "bias", None), bias)]


def _conv_transpose(tool, module, call):
    # A transposed convolution is the adjoint of the convolution with the same weight, so its weight
    # gradient is that convolution's, with the roles of input and output gradient swapped.
    x, g = _input(call), call.grads[0]
    d = len(module.kernel_size)
    _unbatched(x, d, module)
    pads = [(p, p) for p in _pairs(module.padding, d)]
    weight = _conv_weight(g, x, _pairs(module.kernel_size, d), _pairs(module.stride, d),
                          _pairs(module.dilation, d), pads, module.groups)
    bias = g.reshape(g.shape[0], g.shape[1], -1).sum(2) if getattr(module, "bias", None) is not None else None
    return [(module.weight, weight), (getattr(module, "bias", None), bias)]


def _affine(module, x_hat, g, keep_dims: int):
    """Weight and bias gradients of ``x_hat * weight + bias``: summed over every dim but the batch
    and the last ``keep_dims`` (norm layers over features) or channel dim (keep_dims=-1)."""
    batch = g.shape[0]
    if keep_dims == -1:
        channels = g.shape[1]
        w = (g * x_hat).reshape(batch, channels, -1).sum(2)
        b = g.reshape(batch, channels, -1).sum(2)
    else:
        shape = tuple(g.shape[g.dim() - keep_dims:])
        w = (g * x_hat).reshape(batch, -1, *shape).sum(1)
        b = g.reshape(batch, -1, *shape).sum(1)
    return [(getattr(module, "weight", None), w), (getattr(module, "bias", None), b)]


def _layer_norm(tool, module, call):
    x, g = _batch_leading(tool, _input(call), call.grads[0])
    shape = tuple(module.normalized_shape)
    x_hat = _functional(x).layer_norm(x, shape, None, None, module.eps)
    return _affine(module, x_hat, g, len(shape))


def _group_norm(tool, module, call):
    x, g = _input(call), call.grads[0]
    x_hat = _functional(x).group_norm(x, module.num_groups, None, None, module.eps)
    return _affine(module, x_hat, g, -1)


def _running_stats(tool, module, args, kwargs):
    # copies: the statistics the forward normalized with, whatever happens to them before backward
    if getattr(module, "running_mean", None) is None:
        return None
    return module.running_mean.detach().clone(), module.running_var.detach().clone()


def _with_running_stats(x, stats, eps):
    mean, var = stats
    view = (1, -1) + (1,) * (x.dim() - 2)
    return (x - mean.reshape(view)) / (var.reshape(view) + eps).sqrt()


def _instance_norm_keep(tool, module, args, kwargs):
    uses_input_stats = module.training or not module.track_running_stats
    return None if uses_input_stats else _running_stats(tool, module, args, kwargs)


def _instance_norm(tool, module, call):
    x, g = _input(call), call.grads[0]
    d = {"InstanceNorm1d": 1, "InstanceNorm2d": 2, "InstanceNorm3d": 3}.get(
        next(k.__name__ for k in type(module).__mro__ if k.__name__.startswith("InstanceNorm")), x.dim() - 2)
    _unbatched(x, d, module)
    if call.extra is None:
        x_hat = _functional(x).instance_norm(x, eps=module.eps)
    else:
        x_hat = _with_running_stats(x, call.extra, module.eps)
    return _affine(module, x_hat, g, -1)


def _batch_norm(tool, module, call):
    x, g = _input(call), call.grads[0]
    return _affine(module, _with_running_stats(x, call.extra, module.eps), g, -1)


def _embedding(tool, module, call):
    index, g = _batch_leading(tool, _input(call), call.grads[0])
    batch, rows, width = index.shape[0], module.weight.shape[0], module.weight.shape[1]
    T = _framework(g)
    offsets = (T.arange(batch, device=index.device) * rows).reshape((batch,) + (1,) * (index.dim() - 1))
    weight = g.new_zeros(batch * rows, width)
    weight.index_add_(0, (index + offsets).reshape(-1), g.reshape(-1, width))
    weight = weight.reshape(batch, rows, width)
    if module.padding_idx is not None:
        weight[:, module.padding_idx] = 0
    return [(module.weight, weight)]


def _linear_rows(x: Any, g: Any) -> tuple[Any, Any]:
    """Per-sample weight and bias gradients of ``y = x @ W^T + b`` from ``x`` (batch, ..., in) and
    the gradient ``g`` (batch, ..., out) of ``y``."""
    if x.dim() == 2:
        return g.unsqueeze(2) * x.unsqueeze(1), g
    batch = x.shape[0]
    x3, g3 = x.reshape(batch, -1, x.shape[-1]), g.reshape(batch, -1, g.shape[-1])
    return g3.transpose(1, 2) @ x3, g3.sum(1)


class _Taps:
    """Where parameters enter a recomputation as ``x @ W^T + b``: per (weight, bias), the inputs
    ``x`` and the results, whose gradients autograd gives; then the linear rule per sample."""

    def __init__(self) -> None:
        self.uses: dict[tuple, tuple[Any, Any, Any, Any, list, list]] = {}
        self.leaves: list[tuple[Any, Any]] = []      # (parameter, per-sample copy (batch, ...) it entered as)

    def linear(self, F, x, weight, bias, w_leaf, b_leaf, w_rows=None, b_rows=None):
        """``F.linear(x, w_leaf, b_leaf)``, noted as a use of the parameters ``weight`` and
        ``bias`` (of their rows ``w_rows`` / ``b_rows``, (start, stop), when the leaves are slices)."""
        y = F.linear(x, w_leaf, b_leaf)
        key = (id(weight), w_rows, id(bias), b_rows)
        if key not in self.uses:
            self.uses[key] = (weight, bias, w_rows, b_rows, [], [])
        self.uses[key][4].append(x.detach())
        self.uses[key][5].append(y)
        return y

    def per_sample_leaf(self, param, batch: int, shape: tuple):
        """A copy of ``param`` per sample, ``param`` reshaped to ``shape`` behind the batch dim, that
        autograd differentiates."""
        leaf = param.detach().reshape(shape).unsqueeze(0).expand(batch, *shape).clone().requires_grad_()
        self.leaves.append((param, leaf))
        return leaf

    def results(self, T, outs: list, grads: list) -> list[tuple[Any, Any]]:
        used = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        taps = [y for *_, ys in self.uses.values() for y in ys] + [leaf for _, leaf in self.leaves]
        found = T.autograd.grad([o for o, _ in used], taps, [g for _, g in used], allow_unused=True)
        whole: dict[int, list] = {}              # id(parameter) -> [parameter, per-sample gradient]

        def add(param, rows, g):
            if param is None or g is None:
                return
            if rows is not None:                  # rows of a packed parameter (in_proj_weight)
                full = g.new_zeros(g.shape[0], *param.shape)
                full[:, rows[0]:rows[1]] = g
                g = full
            entry = whole.setdefault(id(param), [param, None])
            entry[1] = g if entry[1] is None else entry[1] + g

        k = 0
        for weight, bias, w_rows, b_rows, xs, ys in self.uses.values():
            for x in xs:
                g = found[k]
                k += 1
                if g is not None:
                    w, b = _linear_rows(x, g)
                    add(weight, w_rows, w)
                    add(bias, b_rows, b)
        for param, leaf in self.leaves:
            g = found[k]
            add(param, None, None if g is None else g.reshape(g.shape[0], *param.shape))
            k += 1
        return [(p, g) for p, g in whole.values()]


def _leaf(t):
    return None if t is None else t.detach().requires_grad_()


def _cell_step(F, T, kind, taps, x, h, c, names, module, nonlinearity="tanh"):
    """One step of an RNN/LSTM/GRU cell from tensor ops (the parameters through ``taps``); the
    LSTM's hidden state is computed from the returned cell state, as both frameworks do."""
    w_ih, w_hh, b_ih, b_hh = (getattr(module, n, None) for n in names[:4])
    gi = taps.linear(F, x, w_ih, b_ih, _leaf(w_ih), _leaf(b_ih))
    gh = taps.linear(F, h, w_hh, b_hh, _leaf(w_hh), _leaf(b_hh))
    if kind == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = i.sigmoid() * g.tanh() + f.sigmoid() * c
        h = o.sigmoid() * c.tanh()
        w_hr = getattr(module, names[4], None) if len(names) > 4 else None
        if w_hr is not None:
            h = taps.linear(F, h, w_hr, None, _leaf(w_hr), None)
        return h, c
    if kind == "GRU":
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (pre.tanh() if nonlinearity == "tanh" else pre.relu()), None


def _recurrent_kind(module) -> str:
    for klass in type(module).__mro__:
        for kind in ("LSTM", "GRU", "RNN"):
            if klass.__name__ in (kind, kind + "Cell"):
                return kind
    raise TypeError(f"PerSampleGradients: not a recurrent layer: {type(module).__name__}")


def _batched_sequence_input(module, call):
    """The recurrent layer's input tensor; a PackedSequence or an unbatched input is refused."""
    x = _input(call)
    if not is_tensor(x):
        raise NotImplementedError(f"PerSampleGradients: {type(module).__name__} with a PackedSequence input is "
                                  "not supported; pad the sequences and pass a tensor")
    if x.dim() == 2:
        raise ValueError(f"PerSampleGradients: {type(module).__name__} got an unbatched input of shape "
                         f"{tuple(x.shape)}; per-sample gradients need batched input")
    return x


def _recurrent(tool, module, call):
    """RNN, LSTM and GRU (any layers, directions, proj_size): the recurrence recomputed on the whole
    batch from the recorded input and initial state, autograd for the gradient of each step's
    ``x @ W_ih^T + b_ih`` and ``h @ W_hh^T + b_hh`` given the output gradients, and the linear rule
    per sample, summed over steps."""
    x = _batched_sequence_input(module, call)
    T, F = _framework(x), _functional(x)
    kind = _recurrent_kind(module)
    x = x if module.batch_first else x.transpose(0, 1)                 # (batch, time, features)
    batch, steps = x.shape[0], x.shape[1]
    layers, directions = module.num_layers, 2 if module.bidirectional else 1
    proj = getattr(module, "proj_size", 0) or 0
    hidden = module.hidden_size
    out_size = proj or hidden
    hx = call.args[1] if len(call.args) > 1 else call.kwargs.get("hx")
    if kind == "LSTM":
        h0, c0 = hx if hx is not None else (None, None)
        c0 = c0 if c0 is not None else x.new_zeros(layers * directions, batch, hidden)
    else:
        h0, c0 = hx, None
    h0 = h0 if h0 is not None else x.new_zeros(layers * directions, batch, out_size)
    taps = _Taps()
    h_n, c_n = [], []
    with T.enable_grad():
        layer_input = x
        for layer in range(layers):
            per_direction = []
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                names = [f"weight_ih{suffix}", f"weight_hh{suffix}", f"bias_ih{suffix}", f"bias_hh{suffix}",
                         f"weight_hr{suffix}"]
                h, c = h0[layer * directions + d], (c0[layer * directions + d] if c0 is not None else None)
                outputs = [None] * steps
                for t in (range(steps - 1, -1, -1) if d else range(steps)):
                    h, c = _cell_step(F, T, kind, taps, layer_input[:, t], h, c, names, module,
                                      getattr(module, "nonlinearity", "tanh"))
                    outputs[t] = h
                per_direction.append(T.stack(outputs, 1))
                h_n.append(h)
                c_n.append(c)
            layer_input = per_direction[0] if directions == 1 else T.cat(per_direction, -1)
        out = layer_input if module.batch_first else layer_input.transpose(0, 1)
        outs = [out, T.stack(h_n, 0)] + ([T.stack(c_n, 0)] if kind == "LSTM" else [])
        return taps.results(T, outs, call.grads)


def _recurrent_cell(tool, module, call):
    """RNNCell, LSTMCell, GRUCell: one step recomputed on the batch; the gradients of its two
    products from autograd, given what reached the outputs from outside the cell."""
    x = _input(call)
    if x.dim() != 2:
        raise ValueError(f"PerSampleGradients: {type(module).__name__} got an unbatched input of shape "
                         f"{tuple(x.shape)}; per-sample gradients need batched input")
    T, F = _framework(x), _functional(x)
    kind = _recurrent_kind(module)
    hx = call.args[1] if len(call.args) > 1 else call.kwargs.get("hx")
    zeros = x.new_zeros(x.shape[0], module.hidden_size)
    h, c = (hx if hx is not None else (zeros, zeros)) if kind == "LSTM" else (hx if hx is not None else zeros, None)
    taps = _Taps()
    with T.enable_grad():
        h, c = _cell_step(F, T, kind, taps, x, h, c, ["weight_ih", "weight_hh", "bias_ih", "bias_hh"], module,
                          getattr(module, "nonlinearity", "tanh"))
        outs = [h, c] if kind == "LSTM" else [h]
        feeds = _feeds(T, outs, call.grads)
        grads = _external(T, outs, call.grads, feeds) if any(feeds.values()) else call.grads
        return taps.results(T, outs, grads)


def _argument(call: _Call, position: int, name: str, default: Any = None) -> Any:
    if len(call.args) > position:
        return call.args[position]
    return call.kwargs.get(name, default)


def _additive_mask(T, mask, dtype):
    """A boolean mask (True: masked) as 0/-inf; a float mask as it is."""
    if mask is None or mask.is_floating_point():
        return mask
    return mask.new_zeros(mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))


def _attention(tool, module, call):
    """MultiheadAttention: its forward recomputed on the batch from the recorded query, key,
    value and masks (the projections through ``_Taps``, bias_k/bias_v as per-sample copies), then
    autograd for the gradients of every product given the output gradients, and the linear rule."""
    query, key, value = _argument(call, 0, "query"), _argument(call, 1, "key"), _argument(call, 2, "value")
    if query.dim() != 3:
        raise ValueError(f"PerSampleGradients: MultiheadAttention got an unbatched query of shape "
                         f"{tuple(query.shape)}; per-sample gradients need batched input")
    T, F = _framework(query), _functional(query)
    padding = _argument(call, 3, "key_padding_mask")
    need_weights = _argument(call, 4, "need_weights", True)
    mask = _argument(call, 5, "attn_mask")
    average = _argument(call, 6, "average_attn_weights", True)
    if not module.batch_first:
        query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
    batch, length, embed = query.shape
    heads, head_dim = module.num_heads, module.head_dim
    taps = _Taps()
    with T.enable_grad():
        projected = []
        for i, (x, own) in enumerate(((query, "q_proj_weight"), (key, "k_proj_weight"), (value, "v_proj_weight"))):
            rows = (i * embed, (i + 1) * embed)
            if module._qkv_same_embed_dim:      # one packed weight: rows i*E .. (i+1)*E of it
                weight, w_rows, w_leaf = module.in_proj_weight, rows, _leaf(module.in_proj_weight)[rows[0]:rows[1]]
            else:
                weight, w_rows = getattr(module, own), None
                w_leaf = _leaf(weight)
            bias = module.in_proj_bias
            b_leaf = None if bias is None else _leaf(bias)[rows[0]:rows[1]]
            y = taps.linear(F, x, weight, bias, w_leaf, b_leaf, w_rows, None if bias is None else rows)
            projected.append(y)
        q, k, v = projected
        mask = _additive_mask(T, mask, q.dtype)
        padding = _additive_mask(T, padding, q.dtype)
        if module.bias_k is not None:
            k = T.cat([k, taps.per_sample_leaf(module.bias_k, batch, (1, embed))], 1)
            v = T.cat([v, taps.per_sample_leaf(module.bias_v, batch, (1, embed))], 1)
            mask = None if mask is None else F.pad(mask, (0, 1))
            padding = None if padding is None else F.pad(padding, (0, 1))
        split = lambda t: t.reshape(batch, t.shape[1], heads, head_dim).transpose(1, 2)    # noqa: E731
        q, k, v = split(q), split(k), split(v)
        if module.add_zero_attn:
            k = T.cat([k, k.new_zeros(batch, heads, 1, head_dim)], 2)
            v = T.cat([v, v.new_zeros(batch, heads, 1, head_dim)], 2)
            mask = None if mask is None else F.pad(mask, (0, 1))
            padding = None if padding is None else F.pad(padding, (0, 1))
        scores = (q * (1.0 / head_dim) ** 0.5) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + (mask.reshape(batch, heads, length, -1) if mask.dim() == 3 else mask)
        if padding is not None:
            scores = scores + padding.reshape(batch, 1, 1, -1)
        weights = scores.softmax(-1)
        attended = (weights @ v).transpose(1, 2).reshape(batch, length, embed)
        out = taps.linear(F, attended, module.out_proj.weight, module.out_proj.bias, _leaf(module.out_proj.weight),
                          _leaf(module.out_proj.bias))
        outs = [out if module.batch_first else out.transpose(0, 1)]
        if need_weights:
            outs.append(weights.mean(1) if average else weights)
        return taps.results(T, outs, call.grads)


_RULES: dict[str, tuple[Callable, Callable]] = {
    "linear": (_no_extra, _linear),
    "conv": (_no_extra, _conv),
    "conv_transpose": (_no_extra, _conv_transpose),
    "layer_norm": (_no_extra, _layer_norm),
    "group_norm": (_no_extra, _group_norm),
    "instance_norm": (_instance_norm_keep, _instance_norm),
    "batch_norm": (_running_stats, _batch_norm),
    "embedding": (_no_extra, _embedding),
    "rnn": (_no_extra, _recurrent),
    "cell": (_no_extra, _recurrent_cell),
    "attention": (_no_extra, _attention),
}


# ---- re-running one sample at a time -------------------------------------------------------------
def _layout(tool: PerSampleGradients, module: Any, call: _Call) -> tuple[dict, list]:
    """The batch dim of each input (by position or keyword; None: shared by all samples) and of
    each output tensor, for the re-run."""
    rule = _rule_name(module)
    n_out = len(call.grads)
    if rule == "rnn":
        seq = 0 if module.batch_first else 1
        _batched_sequence_input(module, call)
        return {0: seq, 1: 1, "hx": 1}, [seq] + [1] * (n_out - 1)
    if rule == "attention":
        seq = 1 if getattr(module, "batch_first", False) is False else 0
        dims = {0: seq, 1: seq, 2: seq, "query": seq, "key": seq, "value": seq,
                3: 0, "key_padding_mask": 0}
        mask = call.kwargs.get("attn_mask", call.args[5] if len(call.args) > 5 else None)
        if is_tensor(mask) and mask.dim() == 3:
            dims["attn_mask"] = dims[5] = ("heads", module.num_heads)
        return dims, [seq] + [0] * (n_out - 1)
    dim = tool._batch_dim(module)
    return _Everywhere(dim), [dim] * n_out


def _feeds(T, outs: list, totals: list) -> dict[int, list[int]]:
    """For each output with a gradient, the other outputs with a gradient computed from it inside
    the module (an LSTM cell's hidden state from its cell state)."""
    wired = [i for i, g in enumerate(totals) if g is not None]
    feeds: dict[int, list[int]] = {i: [] for i in wired}
    if len(wired) < 2:
        return feeds
    for a in wired:
        for b in wired:
            if a != b and outs[b].grad_fn is not None:
                found = T.autograd.grad(outs[b], outs[a], T.ones_like(outs[b]), retain_graph=True, allow_unused=True)[0]
                if found is not None:
                    feeds[a].append(b)
    return feeds


def _external(T, outs: list, totals: list, feeds: dict[int, list[int]]) -> list:
    """The gradients the outputs received from outside the module. A tensor hook on an output
    that the module also used to compute another output receives both; what came through the
    other outputs is subtracted (their own external gradients pulled back through the module),
    later outputs first."""
    external: list = list(totals)
    done: set[int] = {i for i, g in enumerate(totals) if g is None}
    while len(done) < len(totals):
        ready = [a for a in range(len(totals)) if a not in done and all(b in done for b in feeds[a])]
        if not ready:
            raise RuntimeError("PerSampleGradients: the outputs of a module depend on each other in a cycle")
        for a in ready:
            later = [b for b in feeds[a] if external[b] is not None]
            if later:
                through = T.autograd.grad([outs[b] for b in later], outs[a], [external[b] for b in later],
                                          retain_graph=True, allow_unused=True)[0]
                if through is not None:
                    external[a] = totals[a] - through
            done.add(a)
    return external


class _Everywhere(dict):
    """Every tensor input has its batch at ``dim``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def get(self, key, default=None):
        return self.dim


def _batch_size(args, kwargs, dims, name, module) -> int:
    sizes = set()
    for key, value in list(enumerate(args)) + list(kwargs.items()):
        dim = dims.get(key)
        if is_tensor(value) and isinstance(dim, int) and value.dim() > dim:
            sizes.add(int(value.shape[dim]))
    if len(sizes) != 1:
        raise ValueError(f"PerSampleGradients: cannot tell the batch size of {_where(name, module)} from its "
                         f"inputs (batch dim sizes {sorted(sizes)}); check batch_first")
    return sizes.pop()


def _take(value: Any, dim: Any, b: int, batch: int) -> Any:
    """Sample ``b`` of an input or gradient, its batch dim kept with size one."""
    if isinstance(value, (tuple, list)) and dim is not None:
        return type(value)(_take(v, dim, b, batch) for v in value)
    if not is_tensor(value) or dim is None:
        return value
    if isinstance(dim, tuple):                  # ("heads", h): rows b*h .. (b+1)*h of dim 0
        heads = dim[1]
        return value[b * heads:(b + 1) * heads]
    if value.dim() <= dim or value.shape[dim] != batch:
        return value
    return value.narrow(dim, b, 1)


def _close(a: Any, b: Any) -> bool:
    T = _framework(a)
    if a.is_floating_point():
        tol = 1e-9 if a.dtype == T.float64 else 1e-4
        scale = float(b.abs().max()) if b.numel() else 0.0
        return bool(((a - b).abs() <= tol * (1.0 + scale)).all())
    return bool((a == b).all())
