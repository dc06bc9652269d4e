"""``GradScaler``: dynamic loss scaling with PyTorch's semantics.

``scale(loss)`` multiplies by the current scale (a float32 0-d tensor, 2**16 at first);
``unscale_(optimizer)`` divides the gradients by it in place and records whether any is inf or
NaN; ``step(optimizer)`` unscales if needed and skips the optimizer's step when one was;
``update()`` backs the scale off after a skipped step and grows it after ``growth_interval``
clean ones. With ``device='cuda'`` (the default) the scaler disables itself with torch's
warning, as torch does on a machine without CUDA; ``device='cpu'`` works fully.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

__all__ = ["GradScaler", "OptState"]


class OptState:
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


def _full(value, dtype):
    from .. import tensor
    return tensor(np.array(value, dtype=dtype))


class GradScaler:
    """Loss scaling for mixed-precision training (see the module docstring)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- scale and tracker ------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init(self) -> None:
        self._scale = _full(self._init_scale, np.float32)
        self._growth_tracker = _full(self._init_growth_tracker, np.int32)

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples/iterables of tensors) times the scale."""
        if not self._enabled:
            return outputs
        from .._tensor import Tensor

        def apply(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init()
                return value * self._scale
            if isinstance(value, Iterable):
                mapped = map(apply, value)
                return type(value)(mapped) if isinstance(value, (list, tuple)) else mapped
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_grads(self, optimizer, inv_scale: float, allow_fp16: bool):
        """Multiply every gradient by ``inv_scale`` in place; a 0-d float32 tensor that is 1.0
        when any gradient had an inf or NaN."""
        found = _full(0.0, np.float32)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                if not allow_fp16 and grad._ndarray.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                data = grad._ndarray
                if not np.isfinite(data).all():
                    found._ndarray[...] = 1.0
                with np.errstate(all="ignore"):
                    data *= data.dtype.type(inv_scale)
                bump = getattr(grad, "_bump_version", None)
                if bump is not None:
                    bump()
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, once per iteration (e.g. before
        gradient clipping)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double, rounded to float32, as torch computes it
        inv_scale = float(np.float32(1.0 / float(self._scale._ndarray)))
        state["found_inf"] = self._unscale_grads(optimizer, inv_scale, allow_fp16=False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless this iteration's gradients had an inf or
        NaN (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == OptState.READY:
            self.unscale_(optimizer)
        result = None
        if not float(state["found_inf"]._ndarray):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Adjust the scale for the next iteration (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale._ndarray[...] = new_scale
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if str(new_scale.device.type) != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale._ndarray[...] = np.asarray(new_scale._ndarray).reshape(())
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(float(f._ndarray) for f in found) > 0:
                scale._ndarray[...] = scale._ndarray * np.float32(self._backoff_factor)
                tracker._ndarray[...] = 0
            else:
                successful = int(tracker._ndarray) + 1
                if successful == self._growth_interval:
                    grown = scale._ndarray * np.float32(self._growth_factor)
                    if np.isfinite(grown):
                        scale._ndarray[...] = grown
                    tracker._ndarray[...] = 0
                else:
                    tracker._ndarray[...] = successful
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- accessors and state -----------------------------------------------------------------------
    def get_scale(self) -> float:
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale._ndarray)
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker._ndarray)
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale._ndarray[...] = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker._ndarray[...] = state_dict["_growth_tracker"]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
