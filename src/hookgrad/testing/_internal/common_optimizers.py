"""``torch.testing._internal.common_optimizers`` for hookgrad: the optimizer table (``optim_db``)
that PyTorch's optimizer tests are parametrized over with ``@optims``.

Each ``OptimizerInfo`` names an optimizer class and says what torch's tests need to know about it:
whether ``step`` needs a closure (LBFGS), whether it only takes sparse gradients (SparseAdam),
which implementation flags it accepts (``foreach``, ``fused``; ``differentiable=True`` is not
implemented in hookgrad, so no entry lists it) and on which device types ``fused`` exists. The constructor arguments each optimizer is tried with
(``optim_inputs_func``) are hookgrad's own small selection: the defaults, another learning rate,
and the options that change what the optimizer keeps in its state.

``@optims(optim_db, dtypes=[...])`` makes, under ``instantiate_device_type_tests``, one test per
optimizer and dtype, named like torch's (``test_x_SGD_cpu_float32``); the test receives
``optim_info=`` and the dtype.
"""
from __future__ import annotations

from copy import deepcopy

from .common_device_type import dtypes as _dtypes
from .common_utils import parametrize


class OptimizerInput:
    """Arguments for one construction of an optimizer (``params`` None: the test supplies them)."""

    __slots__ = ["params", "kwargs", "desc"]

    def __init__(self, params, kwargs, desc=""):
        self.params, self.kwargs, self.desc = params, kwargs, desc

    def __repr__(self):
        return f"params={self.params}, kwargs={self.kwargs}, desc={self.desc}"


class OptimizerInfo:
    """What the tests know about one optimizer class (see the module docstring)."""

    def __init__(self, optim_cls, *, optim_inputs_func, supported_impls=("foreach",),
                 supports_fused_on=(), step_requires_closure=False, only_supports_sparse_grads=False,
                 supports_sparse=False, supports_complex=True, has_capturable_arg=False, decorators=(), skips=()):
        self.optim_cls = optim_cls
        self.optim_inputs_func = optim_inputs_func
        self.supported_impls = tuple(supported_impls)
        self.supports_fused_on = tuple(supports_fused_on)
        self.step_requires_closure = step_requires_closure
        self.only_supports_sparse_grads = only_supports_sparse_grads
        self.supports_sparse = supports_sparse or only_supports_sparse_grads
        self.supports_complex = supports_complex
        self.has_capturable_arg = has_capturable_arg
        self.decorators = tuple(decorators)
        self.skips = tuple(skips)
        self.name = optim_cls.__name__

    def get_decorators(self, test_class, test_name, device, dtype, param_kwargs=None):
        return list(self.decorators)


def _inputs(*extra):
    """An ``optim_inputs_func``: the defaults, another learning rate, then ``extra`` (desc, kwargs)."""
    def optim_inputs_func(device=None, dtype=None):
        cases = [("default", {}), ("non-default lr", {"lr": 0.02}), *extra]
        return [OptimizerInput(params=None, kwargs=dict(kwargs), desc=desc) for desc, kwargs in cases]
    return optim_inputs_func


def _get_device_type(device) -> str:
    return str(device).split(":")[0]


def _get_foreach_kernels_supported_devices() -> list:
    # torch's foreach kernels exist for accelerators only; on the CPU foreach=True is not tried
    return ["cuda", "xpu"]


def _get_optim_inputs_including_global_cliquey_kwargs(device, dtype, optim_info, skip=()):
    """Each of ``optim_info``'s inputs with every implementation flag off, then once with each flag
    (``foreach``, ``fused``, ``differentiable``) on that the optimizer supports on ``device``."""
    if not all(x in ["foreach", "fused", "differentiable"] for x in skip):
        raise AssertionError("skip must be a subset of ['foreach', 'fused', 'differentiable']")
    device_type = _get_device_type(device)
    flags = [x for x in optim_info.supported_impls
             if x not in skip
             and (x != "fused" or device_type in optim_info.supports_fused_on)
             and (x != "foreach" or device_type in _get_foreach_kernels_supported_devices())]
    result = []
    for optim_input in optim_info.optim_inputs_func(device):
        if not flags:
            result.append(optim_input)
            continue
        base = deepcopy(optim_input.kwargs)
        base.update({flag: False for flag in flags})
        result.append(OptimizerInput(params=None, kwargs=base, desc=optim_input.desc))
        for flag in flags:
            kwargs = deepcopy(base)
            kwargs[flag] = True
            result.append(OptimizerInput(params=None, kwargs=kwargs, desc=f"{optim_input.desc} & {flag}"))
    return result


class optims(parametrize):
    """``@optims(optim_infos, dtypes=None)``: one test per optimizer and dtype (float32 by default),
    for ``instantiate_device_type_tests``."""

    def __init__(self, optim_info_iterable, dtypes=None):
        super().__init__("", [])
        self.optim_info_list = list(optim_info_iterable)
        self.dtypes = dtypes

    def cases(self):
        import hookgrad
        for optim_info in self.optim_info_list:
            for dtype in (self.dtypes if self.dtypes is not None else [hookgrad.float32]):
                # the dtype reaches the test (and its name, after the device) as @dtypes would pass it
                yield optim_info.name, {"optim_info": optim_info}, [_dtypes(dtype), *optim_info.decorators]


def _make_optim_db():
    from ... import optim
    # differentiable=True (an optimizer step autograd can see through) is not implemented in
    # hookgrad (it raises NotImplementedError), so unlike torch's table no optimizer lists it
    both = ("foreach",)
    fused = ("foreach", "fused")
    fused_devices = ("cpu", "cuda", "xpu", "mps")
    return [
        OptimizerInfo(optim.Adadelta, optim_inputs_func=_inputs(("rho", {"rho": 0.5}), ("weight_decay", {"weight_decay": 0.1})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.Adafactor, optim_inputs_func=_inputs(("beta2_decay", {"beta2_decay": -0.5})),
                      supported_impls=("foreach",)),
        OptimizerInfo(optim.Adagrad, optim_inputs_func=_inputs(("lr_decay", {"lr_decay": 0.5}),
                                                                ("initial_accumulator_value", {"initial_accumulator_value": 0.1})),
                      supported_impls=fused, supports_fused_on=("cpu", "cuda", "xpu"), supports_sparse=True),
        OptimizerInfo(optim.Adam, optim_inputs_func=_inputs(("amsgrad", {"amsgrad": True}), ("weight_decay", {"weight_decay": 0.1})),
                      supported_impls=fused, supports_fused_on=fused_devices, has_capturable_arg=True),
        OptimizerInfo(optim.Adamax, optim_inputs_func=_inputs(("weight_decay", {"weight_decay": 0.1})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.AdamW, optim_inputs_func=_inputs(("amsgrad", {"amsgrad": True})),
                      supported_impls=fused, supports_fused_on=("cpu", "cuda", "mps"), has_capturable_arg=True),
        OptimizerInfo(optim.ASGD, optim_inputs_func=_inputs(("t0", {"t0": 100}), ("weight_decay", {"weight_decay": 0.1})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.LBFGS, optim_inputs_func=_inputs(("strong_wolfe", {"line_search_fn": "strong_wolfe"})),
                      supported_impls=(), step_requires_closure=True),
        OptimizerInfo(optim.Muon, optim_inputs_func=_inputs(("nesterov off", {"nesterov": False})), supported_impls=()),
        OptimizerInfo(optim.NAdam, optim_inputs_func=_inputs(("decoupled_weight_decay", {"weight_decay": 0.1,
                                                                                         "decoupled_weight_decay": True})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.RAdam, optim_inputs_func=_inputs(("decoupled_weight_decay", {"weight_decay": 0.1,
                                                                                         "decoupled_weight_decay": True})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.RMSprop, optim_inputs_func=_inputs(("centered and momentum", {"centered": True, "momentum": 0.1})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.Rprop, optim_inputs_func=_inputs(("etas", {"etas": (0.5, 1.5)})),
                      supported_impls=both, has_capturable_arg=True),
        OptimizerInfo(optim.SGD, optim_inputs_func=_inputs(("nesterov", {"momentum": 0.9, "nesterov": True}),
                                                            ("dampening", {"momentum": 0.9, "dampening": 0.5})),
                      supported_impls=fused, supports_fused_on=fused_devices, supports_sparse=True),
        OptimizerInfo(optim.SparseAdam, optim_inputs_func=_inputs(("betas", {"betas": (0.8, 0.9)})),
                      supported_impls=(), only_supports_sparse_grads=True, supports_complex=False),
    ]


optim_db = _make_optim_db()
