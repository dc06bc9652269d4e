"""Generate docs/api-coverage.md: every public name of torch's main namespaces, and whether hookgrad has it.

    python scripts/api_coverage.py           # rewrite docs/api-coverage.md
    python scripts/api_coverage.py --check   # exit 1 if the file is out of date

The names come from the installed torch (the specification, PyTorch 2.13): a module's ``__all__``
and its other public attributes that torch defines (imported helpers such as ``typing.Optional``
are not torch's API); for ``torch.Tensor``, its public attributes. Submodules
are not counted (the namespaces that matter have their own section). Names of device back ends,
sparse layouts and quantization are listed apart with the reason hookgrad leaves them out: it is
a CPU library on dense NumPy arrays. hookgrad "has" a name when the matching hookgrad object has
the attribute. tests/test_api_coverage.py keeps the file in step with the code.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "docs", "api-coverage.md")

NAMESPACES = ["torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg",
              "torch.special", "torch.fft", "torch.optim", "torch.optim.lr_scheduler", "torch.autograd",
              "torch.func", "torch.distributions", "torch.utils.data"]

# Names left out on purpose, recognized by the words they are made of, with the reason
_DEVICE = {"cuda", "cudnn", "mps", "xpu", "mtia", "hpu", "ipu", "xla", "vulkan", "metal", "mkldnn", "miopen",
           "fbgemm", "hip", "nnpack", "privateuse1", "pin", "pinned", "shared", "share", "ipc", "nested", "padded"}
_SPARSE = {"sparse", "coo", "csr", "csc", "bsr", "bsc", "crow", "ccol", "nnz", "coalesce", "coalesced", "smm",
           "hspmm", "sspaddmm", "spmm", "dsmm", "saddmm", "hsmm"}
_SPARSE_NAMES = {"indices", "values", "col_indices", "row_indices", "dense_dim", "indices_copy", "values_copy",
                 "col_indices_copy", "row_indices_copy"}
_QUANTIZED = {"qscheme", "qparams", "int_repr"}
_DEVICE |= {"maia"}
_SPARSE_NAMES |= {"jagged"}  # the nested-tensor layout
_QUANTIZED_NAMES = {"per_channel_affine", "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric",
                    "per_channel_affine_float_qparams"}  # torch.qscheme values
# TorchScript's compiler and interpreter, as torch exposes them at top level: the IR, its types, script
# classes, the dispatcher, mobile and benchmark plumbing. No eager program calls these; torch.jit's entry
# points (script, trace, ScriptModule, ...) are what programs use, and hookgrad.jit serves those.
_TORCHSCRIPT = {
    "AliasDb", "AnyType", "Argument", "ArgumentSpec", "AwaitType", "BenchmarkConfig", "BenchmarkExecutionStats",
    "Block", "BoolType", "BufferDict", "CallStack", "Capsule", "ClassType", "Code", "CompilationUnit",
    "CompleteArgumentSpec", "ComplexType", "ConcreteModuleType", "ConcreteModuleTypeBuilder", "DeepCopyMemoTable",
    "DeserializationStorageContext", "DeviceObjType", "DictType", "DispatchKey", "DispatchKeySet", "EnumType",
    "ErrorReport", "ExcludeDispatchKeyGuard", "ExecutionPlan", "FatalError", "FileCheck", "FloatType",
    "FunctionSchema", "FutureType", "Gradient", "Graph", "GraphExecutorState", "IODescriptor", "InferredType",
    "IntType", "InterfaceType", "JITException", "ListType", "LiteScriptModule", "LockingLogger", "LoggerBase",
    "ModuleDict", "Node", "NoneType", "NoopLogger", "NumberType", "OperatorInfo", "OptionalType", "ParameterDict",
    "PyObjectType", "PyTorchFileWriter", "RRefType", "ScriptClass", "ScriptClassFunction",
    "ScriptDict", "ScriptDictIterator", "ScriptDictKeyIterator", "ScriptList", "ScriptListIterator", "ScriptMethod",
    "ScriptModuleSerializer", "ScriptObject", "ScriptObjectProperty", "SerializationStorageContext", "StaticModule",
    "StreamObjType", "StringType", "SymBoolType", "SymIntType", "Tag", "TensorType", "ThroughputBenchmark",
    "TracingState", "TupleType", "Type", "UnionType", "Use", "Value", "import_ir_module",
    "import_ir_module_from_buffer", "merge_type_from_type_comment", "parse_ir", "parse_schema",
    "parse_type_comment", "unify_type_list", "AggregationType", "SUM", "AVG", "classproperty", "get_file_path",
    "prepare_multiprocessing_environment"}
# kernels torch has for CUDA (or sparse) tensors only: on the CPU torch itself raises NotImplementedError
_CUDA_ONLY = {"batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
              "batch_norm_backward_reduce", "batch_norm_backward_elemt", "native_norm"}
# dtypes for extension kernels (sub-byte integers, raw bits): torch's own operators do not compute on them
_SUB_BYTE = {"bit", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8"} | {f"int{i}" for i in range(1, 8)} | {
    f"uint{i}" for i in range(1, 8)}
_REASONS = {
    "device": "device back end or memory placement: hookgrad runs on the CPU, in one process's NumPy memory",
    "sparse": "sparse layouts: hookgrad tensors are dense NumPy arrays",
    "quantized": "quantized tensors: not part of hookgrad's float/integer CPU arithmetic",
    "torchscript": "TorchScript compiler and interpreter internals (IR, types, script classes, dispatcher, "
                   "mobile and benchmark plumbing): no eager program calls them; hookgrad runs Python eagerly and "
                   "hookgrad.jit serves torch.jit's entry points",
    "cuda_only": "kernels torch has for CUDA (or sparse) tensors only: on the CPU torch itself raises "
                 "NotImplementedError",
    "sub_byte": "sub-byte and raw-bit dtypes, declared by torch for extension kernels: its own operators do not "
                "compute on them",
    "first_class_dims": "Tensor.index binds functorch.dim's first-class dimensions (an experimental extension, "
                        "not part of eager PyTorch)",
}
# namespace-qualified names left out (a name may mean something else elsewhere)
_QUALIFIED = {("torch.Tensor", "index"): "first_class_dims"}
# counted after all: SparseAdam works on dense gradients, nn.init.sparse_ fills a dense tensor
_NOT_LEFT_OUT = {"SparseAdam", "sparse", "sparse_"}


def _words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


def _left_out_kind(name: str, namespace: str = "torch"):
    if name in _NOT_LEFT_OUT:
        return None
    if (namespace, name) in _QUALIFIED:
        return _QUALIFIED[(namespace, name)]
    if namespace == "torch":
        if name in _TORCHSCRIPT:
            return "torchscript"
        if name in _CUDA_ONLY:
            return "cuda_only"
        if name in _SUB_BYTE:
            return "sub_byte"
        if name in _QUANTIZED_NAMES:
            return "quantized"
    words = set(_words(name))
    if words & _DEVICE:
        return "device"
    if words & _SPARSE or name in _SPARSE_NAMES:
        return "sparse"
    if (name in _QUANTIZED or name.startswith(("q_", "QInt", "QUInt")) or words & _QUANTIZED
            or any(w == "quant" or w.startswith(("quantiz", "dequantiz", "qint", "quint")) for w in words)):
        return "quantized"
    return None


def _torch_module_of(obj) -> str:
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(obj), "__module__", "") or ""
    return module


def public_names(torch_namespace: str) -> list[str]:
    """The public names of one torch namespace, sorted."""
    import torch
    if torch_namespace == "torch.Tensor":
        return sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))
    module = importlib.import_module(torch_namespace)
    declared = set(getattr(module, "__all__", None) or ())
    names = set()
    for name in declared | {n for n in dir(module) if not n.startswith("_")}:
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, types.ModuleType):
            continue
        if name not in declared and not _torch_module_of(obj).startswith("torch"):
            continue  # an imported helper (typing.Optional, math, ...), not torch's API
        names.add(name)
    return sorted(names)


def _hookgrad_object(torch_namespace: str):
    import hookgrad
    if torch_namespace == "torch.Tensor":
        return hookgrad.Tensor
    ours = "hookgrad" + torch_namespace[len("torch"):]
    try:
        return importlib.import_module(ours)
    except ImportError:
        return None


# torch submodules that libraries import, and the ones left out on purpose with the reason
SUBMODULES = [
    "torch.utils._pytree", "torch.types", "torch.compiler", "torch._dynamo", "torch.nn.attention",
    "torch.nn.utils.prune", "torch.nn.utils.stateless", "torch.nn.utils.fusion", "torch.nn.utils.parametrize",
    "torch.nn.utils.rnn", "torch.nn.grad", "torch.nn.common_types", "torch._utils", "torch.storage", "torch.random",
    "torch.functional", "torch.hub", "torch.utils.model_zoo", "torch.library", "torch.ops", "torch.utils.benchmark",
    "torch.accelerator", "torch.mps", "torch.xpu", "torch.cuda", "torch.signal", "torch.signal.windows",
    "torch.utils.weak", "torch.utils._contextlib", "torch.utils.collect_env", "torch.utils.hooks",
    "torch.utils.checkpoint", "torch.utils.data", "torch.utils.dlpack", "torch.utils.tensorboard",
    "torch.utils.flop_counter", "torch.utils._python_dispatch", "torch.serialization", "torch.amp", "torch.backends",
    "torch.overrides", "torch.jit", "torch.fx", "torch.func", "torch.autograd", "torch.autograd.graph",
    "torch.autograd.forward_ad", "torch.autograd.profiler", "torch.profiler", "torch.multiprocessing",
    "torch.distributed", "torch.distributions", "torch.testing", "torch.linalg", "torch.special", "torch.fft",
    "torch.optim.swa_utils", "torch.export", "torch.onnx", "torch._inductor", "torch.package", "torch.masked",
    "torch.nested", "torch.sparse", "torch.ao", "torch.quantization", "torch.utils.cpp_extension",
    "torch.utils.mobile_optimizer", "torch._prims", "torch._refs", "torch._decomp", "torch._subclasses",
    "torch._functorch", "torch._C._functorch", "torch._jit_internal", "torch.fx.experimental",
]
SUBMODULE_REASONS = {
    "torch.export": "traces a program into an exported graph for compilers and runtimes; hookgrad runs eagerly and "
                    "records no such graph",
    "torch.onnx": "exports a traced graph to ONNX; no tracer to export from",
    "torch._inductor": "torch.compile's code generator; hookgrad's torch.compile returns the model unchanged",
    "torch.package": "packages code with TorchScript-compatible pickles for deployment; not an eager feature",
    "torch.masked": "masked tensors are a tensor subclass layout hookgrad's dense arrays do not have",
    "torch.nested": "nested (jagged) tensors are a layout hookgrad's dense arrays do not have",
    "torch.sparse": "sparse layouts: hookgrad tensors are dense NumPy arrays",
    "torch.ao": "quantization: not part of hookgrad's float/integer CPU arithmetic",
    "torch.quantization": "quantization: not part of hookgrad's float/integer CPU arithmetic",
    "torch.utils.cpp_extension": "builds C++/CUDA extensions against torch's C++ library; hookgrad is pure Python",
    "torch.utils.mobile_optimizer": "optimizes TorchScript modules for mobile runtimes; no TorchScript here",
    "torch._prims": "torch's primitive ops for its compilers' decompositions",
    "torch._refs": "Python references of ATen ops for torch's compilers",
    "torch._decomp": "decomposition tables for torch's compilers",
    "torch._subclasses": "fake and functional tensor subclasses for torch's compilers",
    "torch._C._functorch": "the C++ bindings behind torch.func",
    "torch._jit_internal": "TorchScript's compiler internals",
    "torch.fx.experimental": "symbolic-shape and graph-rewriting internals of torch's compilers",
}


def submodule_survey():
    """[(torch module, True if hookgrad serves it, reason it is left out or None)]."""
    import importlib.util
    rows = []
    for name in SUBMODULES:
        ours = "hookgrad" + name[len("torch"):]
        try:
            found = importlib.util.find_spec(ours) is not None
        except (ImportError, ValueError):
            found = False
        rows.append((name, found, SUBMODULE_REASONS.get(name)))
    return rows


# torch._C names that libraries reach for (a scan of installed libraries and of the recipes in torch's own
# Python code); hookgrad._C.LEFT_OUT gives the reason for each one left out on purpose
TORCH_C_NAMES = [
    "_nn", "TensorBase", "_fft", "_VariableFunctionsClass", "_VariableFunctions", "_ExcludeDispatchKeyGuard",
    "_linalg", "_TensorBase", "_special", "_functorch", "_to_dlpack", "_get_tracing_state", "_autograd",
    "_DisableTorchDispatch", "PyTorchFileReader", "DispatchKeySet", "DispatchKey", "_sparse", "_functions",
    "_current_graph_task_id", "DisableTorchFunction", "_nested", "_log_api_usage_once", "_len_torch_function_stack",
    "ScriptMethod", "DisableTorchFunctionSubclass", "Generator", "_get_cpu_capability",
    "_disabled_torch_function_impl", "_EnableTorchFunction", "_has_torch_function", "_has_torch_function_unary",
    "_has_torch_function_variadic", "_is_torch_function_enabled", "_add_docstr", "ScriptObject", "ScriptFunction",
    "Graph", "Value", "Node", "_set_grad_enabled", "_get_cudnn_enabled", "_get_mkldnn_enabled",
    "_set_mkldnn_enabled", "_show_config", "_parallel_info", "_cxx_flags", "_get_float32_matmul_precision",
    "_is_any_autocast_enabled", "_set_worker_signal_handlers", "_set_worker_pids", "_remove_worker_pids",
    "_error_if_any_worker_fails", "_get_privateuse1_backend_name", "_get_default_device",
    "_is_torch_function_mode_enabled", "_dispatch_has_kernel_for_dispatch_key", "_get_accelerator",
    "_GLIBCXX_USE_CXX11_ABI", "_get_function_stack_at", "_set_autograd_fallback_mode",
    "_get_autograd_fallback_mode", "_will_engine_execute_node", "_current_autograd_node", "_WeakTensorRef",
    "_increment_version", "_log_api_usage_metadata", "has_mkl", "has_openmp", "has_lapack", "_has_mkldnn",
    "_is_multithreading_enabled", "_set_multithreading_enabled", "_get_cudnn_benchmark", "_set_cudnn_benchmark",
    "_get_cudnn_deterministic", "_get_cudnn_allow_tf32", "_is_autocast_available", "_TensorMeta",
    "_len_torch_dispatch_stack", "_get_dispatch_mode",
]
TORCH_C_NAMESPACES = ["_nn", "_fft", "_linalg", "_special", "_VariableFunctions"]


def torch_c_survey():
    """([(name, present, reason left out or None)], [(namespace, torch's count, hookgrad's count)])."""
    import torch

    import hookgrad._C as ours
    names = [(name, hasattr(ours, name), ours.LEFT_OUT.get(name)) for name in TORCH_C_NAMES]
    namespaces = []
    for namespace in TORCH_C_NAMESPACES:
        theirs = [n for n in dir(getattr(torch._C, namespace)) if not n.startswith("__")]
        namespaces.append((namespace, len(theirs), sum(hasattr(getattr(ours, namespace), n) for n in theirs)))
    return names, namespaces


def left_out_reason(name: str, namespace: str = "torch"):
    kind = _left_out_kind(name, namespace)
    return None if kind is None else _REASONS[kind]


def survey():
    """{namespace: (present, missing, {reason: [names]})}."""
    result = {}
    for namespace in NAMESPACES:
        ours = _hookgrad_object(namespace)
        present, missing, left_out = [], [], {}
        for name in public_names(namespace):
            reason = left_out_reason(name, namespace)
            if reason is not None:
                left_out.setdefault(reason, []).append(name)
            elif ours is not None and _has(ours, name):
                present.append(name)
            else:
                missing.append(name)
        result[namespace] = (present, missing, left_out)
    return result


# How a test names each namespace: ``T.nn.functional.relu`` ends in ``functional.relu``, ``F.relu`` in ``F.relu``.
_QUALIFIERS = {
    "torch": {"T", "torch", "hookgrad", "th"}, "torch.nn": {"nn"}, "torch.nn.functional": {"F", "functional"},
    "torch.nn.init": {"init"}, "torch.linalg": {"linalg"}, "torch.special": {"special"}, "torch.fft": {"fft"},
    "torch.optim": {"optim"}, "torch.optim.lr_scheduler": {"lr_scheduler"}, "torch.autograd": {"autograd"},
    "torch.func": {"func"}, "torch.distributions": {"distributions", "D", "dist", "transforms", "tr"}, "torch.utils.data": {"data"},
}
_COMPARES = re.compile(r"^\s*(import torch\b|from torch\b|from difftest import|import difftest)", re.M)


def _tests_against_torch():
    """The source of every test file that runs its code on torch as well: differential scenarios,
    the op registry, the client cases and the day-one snippets."""
    tests = os.path.join(ROOT, "tests")
    for folder, _dirs, files in os.walk(tests):
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            with open(os.path.join(folder, file), encoding="utf-8") as fh:
                text = fh.read()
            if _COMPARES.search(text) or folder != tests or file.startswith("_day_one") or file == "op_cases.py":
                yield text


def tested_references():
    """({(qualifier, name)} for every ``qualifier.name`` in a test against torch, {every string literal
    that is an identifier}): what the tested-against-torch count reads."""
    pairs, words = set(), set()
    for text in _tests_against_torch():
        pairs.update(re.findall(r"(\w+)\s*\.\s*(?=(\w+))", text))  # overlapping: T.fft.fft2 gives fft.fft2 too
        words.update(re.findall(r"[\"'](\w+)[\"']", text))
    return pairs, words


def is_tested(namespace: str, name: str, references) -> bool:
    """A static approximation: the name is referenced, qualified by its namespace (any attribute of that
    name for a Tensor method), or named in a string (the op tables' getattr rows), in a test that also
    runs on torch."""
    pairs, words = references
    if name in words:
        return True
    if namespace == "torch.Tensor":
        return any(attr == name for _, attr in pairs)
    return any((qualifier, name) in pairs for qualifier in _QUALIFIERS[namespace])


def _has(ours, name: str) -> bool:
    try:
        getattr(ours, name)
    except Exception:  # noqa: BLE001 - a missing name raises AttributeError or ModuleNotFoundError
        return False
    return True


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "(none)"


def render() -> str:
    import torch
    data = survey()
    lines = [
        "# API coverage: torch's public names and whether hookgrad has them",
        "",
        f"Generated by `python scripts/api_coverage.py` from torch {torch.__version__.split('+')[0]} and this "
        "checkout of hookgrad; `tests/test_api_coverage.py` fails when it is out of date. Errors of the form "
        "\"hookgrad has no torch.X; see docs/api-coverage.md\" point here.",
        "",
        "A name counts as present when hookgrad has an object of that name in the same place. It counts as "
        "tested against torch when a test that runs its code on torch too (a differential scenario, a client "
        "case, a day-one snippet) refers to it: qualified by its namespace (`F.relu`, `T.linalg.svd`, any "
        "`.name` for a Tensor method) or as a string in an op table, or refers to the same object by another "
        "of its names (`torch.enable_grad` is `torch.autograd.enable_grad`). That is a static reading of the tests, "
        "an upper bound: a name mentioned once may still be tested thinly. Names of device back ends, sparse "
        "layouts and quantization, TorchScript's compiler internals, CUDA-only kernels and extension-only dtypes "
        "are left out on purpose and not counted; the reason is given with them.",
        "",
        "| namespace | present | missing | share | present and tested against torch | left out on purpose |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    references = tested_references()
    # one object under several names (torch.enable_grad is torch.autograd.enable_grad; torch.unsqueeze is
    # Tensor.unsqueeze's function) is tested when any of its names is
    objects = {namespace: _hookgrad_object(namespace) for namespace in data}
    tested_objects = set()
    for namespace, (present, _missing, _left_out) in data.items():
        for name in present:
            obj = getattr(objects[namespace], name, None)
            if callable(obj) and is_tested(namespace, name, references):
                tested_objects.add(id(obj))
    untested = {}
    total_present = total_missing = total_tested = 0
    for namespace, (present, missing, left_out) in data.items():
        counted = len(present) + len(missing)
        share = f"{100 * len(present) / counted:.0f}%" if counted else "-"
        untested[namespace] = [n for n in present if not is_tested(namespace, n, references)
                               and id(getattr(objects[namespace], n, None)) not in tested_objects]
        tested = len(present) - len(untested[namespace])
        tested_share = f"{tested} ({100 * tested / counted:.0f}%)" if counted else "-"
        lines.append(f"| [`{namespace}`](#{namespace.replace('.', '')}) | {len(present)} | {len(missing)} | "
                     f"{share} | {tested_share} | {sum(len(v) for v in left_out.values())} |")
        total_present += len(present)
        total_missing += len(missing)
        total_tested += tested
    total = total_present + total_missing
    lines.append(f"| all | {total_present} | {total_missing} | {100 * total_present / total:.0f}% | "
                 f"{total_tested} ({100 * total_tested / total:.0f}%) | |")
    rows = submodule_survey()
    served = [name for name, found, _ in rows if found]
    lines += ["", "## torch submodules", "",
              f"Modules that `import torch.X` reaches under `hookgrad run` ({len(served)} of {len(rows)} listed); the "
              "others raise \"hookgrad has no torch.X\". Those left out on purpose say why.", "",
              "| module | under hookgrad run |", "|---|---|"]
    for name, found, reason in rows:
        status = "imports" if found else (f"left out: {reason}" if reason else "missing")
        lines.append(f"| `{name}` | {status} |")
    c_names, c_namespaces = torch_c_survey()
    lines += ["", "## torch._C", "",
              "The private `torch._C` names that libraries use (found by scanning installed libraries and the recipes "
              "in torch's own Python code): "
              f"{sum(found for _, found, _ in c_names)} of {len(c_names)} are present; the op namespaces answer "
              "with hookgrad's functions under torch's names there. Every public function, Tensor method, operator "
              "and property consults `__torch_function__` (Tensor subclasses, tensor-likes, `TorchFunctionMode`) as "
              "torch's do, with the torch-function switches above.", "",
              "| torch._C namespace | torch's names | present in hookgrad |", "|---|---:|---:|"]
    lines += [f"| `{namespace}` | {theirs} | {found} |" for namespace, theirs, found in c_namespaces]
    import torch

    import hookgrad._C._nn as ours_nn
    nn_missing = [n for n in dir(torch._C._nn) if not n.startswith("__") and not hasattr(ours_nn, n)]
    lines += ["", "`torch._C._nn` names hookgrad does not have: " + "; ".join(
        f"`{n}` ({ours_nn.LEFT_OUT[n]})" if n in ours_nn.LEFT_OUT else f"`{n}`" for n in nn_missing) + "."]
    lines += ["", "| name | in hookgrad |", "|---|---|"]
    for name, found, reason in c_names:
        lines.append(f"| `torch._C.{name}` | {'present' if found else f'left out: {reason}' if reason else 'missing'} |")
    for namespace, (present, missing, left_out) in data.items():
        lines += ["", f"## {namespace}", "", f"**Missing ({len(missing)}):** {_names(missing)}", "",
                  f"**Present ({len(present)}):** {_names(present)}", "",
                  f"**Present, not referenced by a test against torch ({len(untested[namespace])}):** "
                  f"{_names(untested[namespace])}"]
        for reason, names in left_out.items():
            lines += ["", f"**Left out, {reason} ({len(names)}):** {_names(names)}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api-coverage.md is out of date")
    opts = parser.parse_args(argv)
    text = render()
    if opts.check:
        with open(OUTPUT, encoding="utf-8") as fh:
            if fh.read() != text:
                print(f"{OUTPUT} is out of date: run python scripts/api_coverage.py", file=sys.stderr)
                return 1
        return 0
    with open(OUTPUT, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
