"""The third sweep of day-one snippets: the first week's questions the earlier sweeps leave out (printing
corners, conversions and promotion with Python scalars, negative division, indexing and gather/scatter
errors, views and in-place errors, autograd warnings, saving, data loading, seeded randomness, and the
small rules of cat/where/argmax/sort/unique/einsum/arange/isclose).
Run by ``tests/test_day_one_identity.py`` like ``_day_one_snippets.py``: once under real torch
(``python THIS``) and once under ``hookgrad run THIS``; printed text and final exception must match."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _day_one_snippets import SAVE_PRELUDE as _SAVE, WARN_PRELUDE as _WARN, run  # noqa: E402

SNIPPETS = {
    # ---- printing ---------------------------------------------------------------------------------------
    "print 0-d of each dtype": "for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, "
                               "torch.uint8, torch.bool, torch.complex64, torch.complex128):\n    print(torch.tensor(1, dtype=dt))",
    "print empty of each dtype": "for dt in (torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool, "
                                 "torch.complex64, torch.uint8):\n    print(torch.empty(0, dtype=dt), torch.zeros(2, 0, dtype=dt))",
    "print empty shapes": "print(torch.empty(0, 3), torch.empty(3, 0), torch.empty(2, 0, 4), torch.ones(0, requires_grad=True))",
    "print int64 extremes": "print(torch.tensor([2**63 - 1, -2**63]), torch.tensor([10**15, 1]), torch.tensor([-1, 123456789012]))",
    "print int32 int16 extremes": "print(torch.tensor([2**31 - 1, -2**31], dtype=torch.int32), torch.tensor([-32768, 32767], dtype=torch.int16))",
    "print float32 sci threshold": "print(torch.tensor([1e-4, 1.]), torch.tensor([1e-5, 1.]), torch.tensor([999., 1000.]), "
                                   "torch.tensor([1e7, 1.]), torch.tensor([1e8, 1.]), torch.tensor([1e8, 2e8]))",
    "print float64 sci threshold": "print(torch.tensor([1e-4, 1.], dtype=torch.float64), torch.tensor([1e8, 1.5], dtype=torch.float64), "
                                   "torch.tensor([123456.789], dtype=torch.float64))",
    "print float ratio above 1000": "print(torch.tensor([0.5, 600.]), torch.tensor([0.5, 501.]), torch.tensor([0.1, 100.5]))",
    "print whole floats big": "print(torch.tensor([1., 2., 1e9]), torch.tensor([100000000., 1.]), torch.tensor([-5., 1e16]))",
    "print subnormals": "print(torch.tensor([1e-40, 1.]), torch.tensor([1e-45]), torch.tensor([5e-324], dtype=torch.float64))",
    "print float max and min": "print(torch.tensor([torch.finfo(torch.float32).max]), torch.tensor([torch.finfo(torch.float32).tiny]), "
                               "torch.tensor([torch.finfo(torch.float16).max], dtype=torch.float16))",
    "print nan only and inf only": "print(torch.tensor([float('nan')]), torch.tensor([float('inf'), -float('inf')]), "
                                   "torch.tensor([float('nan'), 2.]), torch.tensor([float('inf'), 0.5]))",
    "print nan inf with whole and sci": "print(torch.tensor([float('nan'), 1., 1e10]), torch.tensor([float('-inf'), 0.001, 2.]))",
    "print half nan inf": "print(torch.tensor([float('nan'), float('inf'), 1.5], dtype=torch.float16), "
                          "torch.tensor([70000.], dtype=torch.float16), torch.tensor([1e-8], dtype=torch.float16))",
    "print bfloat16 values": "print(torch.tensor([1/3, 100.7, 1e20], dtype=torch.bfloat16), torch.tensor([3.14159], dtype=torch.bfloat16))",
    "print complex nan and inf": "print(torch.tensor([complex(float('nan'), 1), complex(1, float('inf'))]), "
                                 "torch.tensor([1e-5 + 1e5j]), torch.tensor([-0.0 - 0.0j]))",
    "print complex128 and 0-d complex": "print(torch.tensor([1 / 3 + 2j], dtype=torch.complex128), torch.tensor(2 - 1j), "
                                        "torch.tensor([[1 + 1j, 2], [3, 4j]]))",
    "print bool 0-d and 2-d": "print(torch.tensor(True), torch.tensor([[True], [False]]), torch.ones(2, 3, dtype=torch.bool))",
    "print negative floats align": "print(torch.tensor([-1.5, 10.25, -100.125]), torch.tensor([[-1., 2.], [3., -40.]]))",
    "print nested lists": "print(torch.tensor([[[1, 2]], [[3, 4]]]), torch.tensor([[[]]]), torch.tensor([[[1.5]]]).shape)",
    "print requires_grad suffixes": "a = torch.ones(2, requires_grad=True)\nprint(a, a * 2, a.sum(), a[0], a.double(), a.detach(), "
                                    "torch.zeros(2, dtype=torch.float64, requires_grad=True))",
    "print grad_fn of in-place": "a = torch.ones(2, requires_grad=True)\nb = a * 1\nb.add_(1)\nc = a.clone()\nc[0] = 5\nprint(b, c)",
    "print half with grad": "a = torch.ones(2, dtype=torch.float16, requires_grad=True)\nprint(a, a * 3, torch.ones(2, dtype=torch.bfloat16) * 2)",
    "print integer dtype suffixes": "print(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1], dtype=torch.int16), "
                                    "torch.tensor([1], dtype=torch.uint8), torch.tensor([1]), torch.tensor([], dtype=torch.int32))",
    "print float dtype suffixes": "print(torch.tensor([1.], dtype=torch.float64), torch.tensor([]), torch.tensor([], dtype=torch.float64), "
                                  "torch.tensor(2., dtype=torch.float64))",
    "print default dtype float64 suffixes": "torch.set_default_dtype(torch.float64)\nprint(torch.tensor([1.5]), torch.tensor([1.5], dtype=torch.float32), "
                                            "torch.tensor([1 + 1j]))\ntorch.set_default_dtype(torch.float32)",
    "print precision zero": "torch.set_printoptions(precision=0)\nprint(torch.tensor([1.5, 2.5, 0.4]), torch.tensor([1e-3, 12.]))\n"
                            "torch.set_printoptions(profile='default')",
    "print precision ten": "torch.set_printoptions(precision=10)\nprint(torch.tensor([1 / 3]), torch.tensor([1 / 3], dtype=torch.float64))\n"
                           "torch.set_printoptions(profile='default')",
    "print sci_mode False large": "torch.set_printoptions(sci_mode=False)\nprint(torch.tensor([1e-8, 1e8]), torch.tensor([12345678.9]))\n"
                                  "torch.set_printoptions(profile='default')",
    "print edgeitems one": "torch.set_printoptions(threshold=3, edgeitems=1)\nprint(torch.arange(10), torch.arange(16).reshape(4, 4))\n"
                           "torch.set_printoptions(profile='default')",
    "print threshold inf": "torch.set_printoptions(threshold=float('inf'))\nprint(torch.arange(1005)[-3:], str(torch.arange(1500)).count('...'))\n"
                           "torch.set_printoptions(profile='default')",
    "print profile full and linewidth": "torch.set_printoptions(profile='full', linewidth=40)\nprint(torch.arange(30.))\n"
                                        "torch.set_printoptions(profile='default')",
    "print summarised 3-d": "print(torch.arange(2000.).reshape(20, 10, 10) / 7)",
    "print summarised float with nan": "x = torch.arange(2000.)\nx[5] = float('nan')\nx[-2] = float('inf')\nprint(x)",
    "print repr vs str": "x = torch.tensor([1.5])\nprint(repr(x) == str(x), repr(torch.Size([])), str(torch.Size([2, 3])), f'{x!r}')",
    "print tensor in dict and tuple": "print({'a': torch.tensor(1.), 'b': [torch.ones(2)]}, (torch.tensor([1]),))",
    "print format of 0-d": "x = torch.tensor(3.14159)\nprint(f'{x:.2f}', f'{x:8.3f}|', '{:e}'.format(x), f'{torch.tensor(5):03d}', f'{x}')",
    "print module param with grad": "p = nn.Parameter(torch.tensor([1., 2.]))\nprint(p, p * 1, nn.Parameter(torch.ones(1), requires_grad=False))",
    # ---- tensor construction from Python and NumPy mixes ------------------------------------------------
    "tensor from numpy and python mix": "import numpy as np\nprint(torch.tensor([np.float32(1.5), 2]), torch.tensor([np.int64(1), 2.5]), "
                                        "torch.tensor([np.float64(1), 2]).dtype, torch.tensor([np.int32(3)]).dtype)",
    "tensor from list of numpy arrays of float32": "import numpy as np\nprint(torch.tensor([np.ones(2, dtype=np.float32), np.zeros(2, dtype=np.float32)]).dtype, "
                                                   "torch.tensor([np.ones(2), np.zeros(2)]).dtype)",
    "tensor from numpy bool and uint8 scalars": "import numpy as np\nprint(torch.tensor(np.bool_(True)), torch.tensor(np.uint8(200)), "
                                                "torch.tensor([np.bool_(False), True]))",
    "tensor from 0-d numpy array": "import numpy as np\nprint(torch.tensor(np.array(2.5)), torch.from_numpy(np.array(3)), torch.as_tensor(np.array(1.5, dtype=np.float32)))",
    "tensor from numpy float16 and complex": "import numpy as np\nprint(torch.tensor(np.array([1.5], dtype=np.float16)), "
                                             "torch.tensor(np.array([1 + 2j], dtype=np.complex64)), torch.from_numpy(np.array([1j])).dtype)",
    "tensor from numpy int types": "import numpy as np\nfor dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):\n"
                                   "    print(torch.from_numpy(np.array([1], dtype=dt)).dtype)",
    "tensor from numpy non-writable": "import numpy as np\na = np.arange(3.)\na.flags.writeable = False\nprint(torch.tensor(a), torch.as_tensor(a).dtype)",
    "tensor from range and generator": "print(torch.tensor(range(4)), torch.tensor(list(x * 0.5 for x in range(3))))",
    "tensor from generator error": "torch.tensor(x for x in range(3))",
    "tensor from set error": "torch.tensor({1, 2})",
    "tensor from mixed tensor and number": "print(torch.tensor([torch.tensor(1), 2.5]), torch.tensor([[torch.tensor(1.)], [2]]))",
    "tensor from bigger ints": "torch.tensor([2**64])",
    "tensor from float overflow to int": "print(torch.tensor([1e10]).long(), torch.tensor([3.99, -3.99]).int())",
    "from_numpy of non-contiguous": "import numpy as np\na = np.arange(6.).reshape(2, 3).T\nt = torch.from_numpy(a)\nprint(t, t.stride(), t.is_contiguous())",
    "from_numpy of big-endian": "import numpy as np\ntorch.from_numpy(np.array([1, 2], dtype='>i4'))",
    "numpy shares after in-place": "x = torch.zeros(3)\na = x.numpy()\nx.add_(1)\nx[0] = 9\nprint(a, x.numpy() is a, x.numpy().base is not None)",
    "numpy of bool and half": "print(torch.tensor([True]).numpy(), torch.tensor([1.5], dtype=torch.float16).numpy().dtype, torch.tensor(2).numpy(), type(torch.tensor(2).numpy()))",
    "numpy of complex and non-contiguous": "x = torch.arange(6.).reshape(2, 3).t()\nprint(x.numpy(), x.numpy().strides, torch.tensor([1j]).numpy())",
    "numpy of conj error": "torch.tensor([1 + 1j]).conj().numpy()",
    "numpy after to keeps sharing": "x = torch.zeros(2)\na = x.to('cpu').numpy()\nx[0] = 1\nb = x.double().numpy()\nx[1] = 2\nprint(a, b)",
    "item of each dtype": "for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.bool, torch.complex64):\n"
                          "    v = torch.tensor(0.1 if dt.is_floating_point else 1, dtype=dt).item()\n    print(type(v).__name__, v)",
    "item of 1-element 2-d and grad": "print(torch.tensor([[7]]).item(), torch.ones(1, requires_grad=True).item(), torch.tensor([[1.5]]).item())",
    "tolist of each shape": "print(torch.tensor(3.5).tolist(), torch.zeros(0).tolist(), torch.zeros(2, 0).tolist(), torch.arange(4).reshape(2, 1, 2).tolist())",
    "tolist of half and bool": "print(torch.tensor([0.1], dtype=torch.float16).tolist(), torch.tensor([0.1]).tolist(), torch.tensor([True]).tolist(), "
                               "torch.tensor([1 + 2j]).tolist())",
    "int and float of tensors": "print(int(torch.tensor(3.9)), int(torch.tensor(-3.9)), float(torch.tensor(2)), complex(torch.tensor(1.5)), "
                                "bool(torch.tensor(0.)), int(torch.tensor([7])))",
    "int of nan error": "int(torch.tensor(float('nan')))",
    "index of float tensor error": "[1, 2, 3][torch.tensor(1.)]",
    "range of tensor": "print(list(range(torch.tensor(3))), [1, 2, 3][torch.tensor(1)], 'ab' * torch.tensor(2))",
    # ---- promotion and arithmetic rules -----------------------------------------------------------------
    "int tensor with float scalar": "x = torch.tensor([1, 2])\nprint(x + 1.5, x * 0.5, (x * 2).dtype, x / 1, x ** 0.5, x - True)",
    "uint8 with negative scalar": "x = torch.tensor([1, 2], dtype=torch.uint8)\nprint(x - 3, x + (-1), (x * -1).dtype, x + 256)",
    "int8 tensor with large scalar": "x = torch.tensor([100], dtype=torch.int8)\nprint(x * 2, x + 1000, (x + 1000).dtype)",
    "bool tensor arithmetic with scalars": "b = torch.tensor([True, False])\nprint(b + 1, b * 2.5, b + True, (b & True), b.sum(), b * b)",
    "float16 with float64 scalar": "x = torch.tensor([1.], dtype=torch.float16)\nprint((x + 1e-4).dtype, x + 1e-4, (x * torch.tensor(2., dtype=torch.float64)).dtype, "
                                   "(x * torch.tensor([2.], dtype=torch.float64)).dtype)",
    "0-d tensor does not promote dimensioned": "x = torch.ones(2, dtype=torch.int32)\nprint((x + torch.tensor(5)).dtype, (x + torch.tensor(5.)).dtype, "
                                               "(torch.ones(2, dtype=torch.float16) + torch.tensor(1., dtype=torch.float64)).dtype, (x + torch.tensor([5])).dtype)",
    "complex scalar promotion": "print((torch.ones(1) * 1j).dtype, (torch.ones(1, dtype=torch.float64) + 1j).dtype, (torch.ones(1, dtype=torch.int64) + 1j).dtype, "
                                "(torch.ones(1, dtype=torch.float16) * 1j).dtype)",
    "floor divide negatives int": "a = torch.tensor([7, -7, 7, -7])\nb = torch.tensor([2, 2, -2, -2])\nprint(a // b, a % b, torch.fmod(a, b), torch.remainder(a, b), a // -3)",
    "floor divide negatives float": "a = torch.tensor([7.5, -7.5, 7.5, -7.5])\nb = torch.tensor([2., 2., -2., -2.])\nprint(a // b, a % b, torch.fmod(a, b), a % -1.5, -7.5 // torch.tensor(2.))",
    "python scalar on left": "x = torch.tensor([2, 3])\nprint(10 // x, 10 % x, 1 / x, 2 ** x, 2.0 ** x, 1 - x, 5 > x)",
    "remainder by zero int": "print(torch.tensor([5.]) % 0, torch.tensor([5.]) // 0, torch.fmod(torch.tensor([5.]), 0))\ntorch.tensor([5]) % 0",
    "floor divide by zero int": "torch.tensor([5]) // 0",
    "float mod zero and negative zero": "print(torch.tensor([-0.0, 0.0]) % 3, torch.tensor([-3.0]) % 3, torch.tensor([3.0]) % -3, torch.fmod(torch.tensor([-3.]), 3))",
    "round half to even": "x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 3.5, 2.4999])\nprint(torch.round(x), x.round(decimals=0), torch.tensor([0.125, 0.375]).round(decimals=2))",
    "round with negative decimals": "print(torch.tensor([1234.5, 1250., -1350.]).round(decimals=-2), torch.tensor([15, 25]).round(), torch.tensor([15, 25]).round().dtype)",
    "round of integer with decimals error": "torch.tensor([15, 25]).round(decimals=1)",
    "python round of tensor": "print(round(torch.tensor(2.5)), round(torch.tensor(2.567), 2), type(round(torch.tensor(1.5))))",
    "pow with negative and fractional": "print(torch.tensor([-8.]) ** (1 / 3), torch.tensor([-2.]) ** 2, torch.tensor([0.]) ** 0, torch.tensor([2]) ** -1.0, torch.tensor([4]) ** 0.5)",
    "int pow overflow": "print(torch.tensor([10]) ** 20, torch.tensor([3], dtype=torch.int32) ** 30, torch.tensor([2], dtype=torch.uint8) ** 9)",
    "true divide of ints": "print(torch.tensor(7) / torch.tensor(2), torch.tensor([1, 2], dtype=torch.int8) / 3, torch.tensor([True]) / 2, (torch.tensor([1]) / 1).dtype)",
    "integer in-place true divide error": "x = torch.tensor([4, 6])\nx /= 2",
    "in-place add float scalar to int": "x = torch.tensor([1, 2])\nx += 1.7\nprint(x)\nx *= 2.5\nprint(x)",
    "sqrt and exp of integers": "print(torch.sqrt(torch.tensor([4, 2])), torch.exp(torch.tensor([0, 1])), torch.sin(torch.tensor([True])), torch.tensor([4]).sqrt().dtype)",
    "abs and neg of unsigned and bool": "print(torch.tensor([200], dtype=torch.uint8).neg(), torch.abs(torch.tensor([-128], dtype=torch.int8)), torch.tensor([True]).abs())",
    "neg of bool error": "torch.neg(torch.tensor([True, False]))",
    "division rounding modes with floats": "x = torch.tensor([-7.5, 7.5])\nprint(torch.div(x, 2, rounding_mode='floor'), torch.div(x, 2, rounding_mode='trunc'), torch.div(x, 2))",
    "bad rounding mode": "torch.div(torch.ones(2), 2, rounding_mode='round')",
    "max of mixed dtypes": "print(torch.maximum(torch.tensor([1, 5]), torch.tensor([2.5, 3.])), torch.max(torch.tensor([1]), torch.tensor([2.])).dtype)",
    # ---- broadcasting -----------------------------------------------------------------------------------
    "broadcast sub 2-d mismatch": "torch.ones(2, 3) - torch.ones(3, 2)",
    "broadcast in-place output shape": "x = torch.ones(3)\nx += torch.ones(2, 3)",
    "broadcast mul leading dims": "torch.ones(4, 1, 3) * torch.ones(2, 5, 3)",
    "broadcast eq mismatch": "torch.ones(3) == torch.ones(4)",
    "broadcast masked_fill mismatch": "torch.ones(3).masked_fill(torch.tensor([True, False]), 0.)",
    "broadcast maximum mismatch": "torch.maximum(torch.ones(2, 3), torch.ones(4))",
    "broadcast addcmul mismatch": "torch.addcmul(torch.ones(3), torch.ones(2), torch.ones(3))",
    "broadcast results": "print((torch.ones(3, 1) + torch.arange(4.)).shape, (torch.ones(1, 3) * torch.ones(2, 1)).shape, "
                         "torch.broadcast_tensors(torch.ones(1), torch.ones(2, 2))[0].shape, (torch.ones(0, 1) + torch.ones(3)).shape)",
    "broadcast with empty mismatch": "torch.ones(0) + torch.ones(2)",
    "expand_as and broadcast_to": "print(torch.tensor([1, 2]).expand(3, -1), torch.tensor([[1], [2]]).expand_as(torch.ones(2, 3)), "
                                  "torch.broadcast_to(torch.tensor(5), (2,)))",
    "expand with -1 in new dim": "torch.ones(2).expand(-1, 2)",
    # ---- indexing ---------------------------------------------------------------------------------------
    "bool mask wrong shape": "x = torch.arange(6).reshape(2, 3)\nx[torch.tensor([True, False, True])]",
    "bool mask 2-d and rows": "x = torch.arange(6).reshape(2, 3)\nprint(x[x > 2], x[torch.tensor([True, False])], x[:, torch.tensor([True, False, True])])",
    "bool mask all false and 0-d": "x = torch.arange(3)\nprint(x[x > 10], x[torch.tensor(True)], x[torch.tensor(False)], x[True].shape, x[False].shape)",
    "index with list and tensor": "x = torch.arange(10) * 10\nprint(x[[1, 3, 3]], x[torch.tensor([[0, 1], [2, 3]])], x[[-1, -2]], x[[]])",
    "index with list of bools": "x = torch.arange(3)\nprint(x[[True, False, True]])",
    "index with None and Ellipsis": "x = torch.arange(24).reshape(2, 3, 4)\nprint(x[None].shape, x[..., None].shape, x[:, None, ..., 1].shape, x[..., 0], x[None, None, 0, ..., 0])",
    "negative step in slice": "x = torch.arange(5)\nprint(x[::2], x[1::3], x[-3:], x[:-1])\nx[::-1]",
    "zero step in slice": "torch.arange(5)[::0]",
    "slice beyond end": "x = torch.arange(5)\nprint(x[3:100], x[10:], x[-100:2], x[4:2], x[4:2].shape)",
    "index long tensor negative values": "x = torch.arange(5)\nprint(x[torch.tensor([-1, -5])])\nx[torch.tensor([-6])]",
    "index with int32 and uint8 tensors": "x = torch.arange(5)\nprint(x[torch.tensor([1, 2], dtype=torch.int32)], x[torch.tensor([1, 0, 1, 0, 0], dtype=torch.uint8).bool()])",
    "index set with broadcast value": "x = torch.zeros(2, 3)\nx[:, 1] = torch.tensor([5., 6.])\nx[0] = 1\nx[x == 0] = torch.tensor(-1.)\nprint(x)",
    "index set bool mask with tensor values": "x = torch.zeros(4)\nx[torch.tensor([True, False, True, False])] = torch.tensor([1., 2.])\nprint(x)\n"
                                               "x[torch.tensor([True, True, False, False])] = torch.tensor([1., 2., 3.])",
    "index set duplicate indices": "x = torch.zeros(3)\nx[[0, 0, 1]] = torch.tensor([1., 2., 3.])\ny = torch.zeros(3)\ny[[0, 0]] += 1\nprint(x, y)",
    "index multi-dim lists": "x = torch.arange(12).reshape(3, 4)\nprint(x[[0, 2], [1, 3]], x[[[0], [2]], [1, 3]], x[[0, 2]][:, [1, 3]], x[1:, [0, 0]])",
    "index lists shape mismatch": "x = torch.arange(12).reshape(3, 4)\nx[[0, 1, 2], [0, 1]]",
    "index too many with ellipsis": "torch.zeros(2, 2)[..., 0, 0, 0]",
    "index_select and masked_select errors": "x = torch.arange(6).reshape(2, 3)\nprint(x.index_select(1, torch.tensor([2, 0])))\nx.index_select(1, torch.tensor([[0]]))",
    "nonzero as_tuple": "x = torch.tensor([[0, 1], [2, 0]])\nprint(x.nonzero(), x.nonzero(as_tuple=True), torch.where(x > 0), torch.argwhere(x))",
    # ---- gather and scatter -----------------------------------------------------------------------------
    "gather values": "x = torch.tensor([[1, 2], [3, 4]])\nprint(x.gather(1, torch.tensor([[0, 0], [1, 0]])), x.gather(0, torch.tensor([[1, 0]])), x.gather(1, torch.tensor([[1], [0]])))",
    "gather int32 index": "torch.ones(2, 2).gather(1, torch.tensor([[0], [1]], dtype=torch.int32))",
    "gather dims mismatch": "torch.ones(2, 2).gather(1, torch.tensor([0, 1]))",
    "gather index too large": "torch.ones(2, 2).gather(1, torch.tensor([[0], [2]]))",
    "gather index size too big": "torch.ones(2, 2).gather(1, torch.tensor([[0], [1], [0]]))",
    "scatter values": "print(torch.zeros(3, 3).scatter(0, torch.tensor([[0, 1, 2]]), 5.), torch.zeros(2, 4).scatter_(1, torch.tensor([[1], [3]]), torch.ones(2, 1)), "
                      "torch.zeros(3).scatter_add(0, torch.tensor([0, 0, 2]), torch.ones(3)))",
    "scatter reduce forms": "src = torch.tensor([1., 2., 3., 4.])\nidx = torch.tensor([0, 1, 0, 1])\nfor r in ('sum', 'prod', 'mean', 'amax', 'amin'):\n"
                            "    print(r, torch.zeros(2).scatter_reduce(0, idx, src, r), torch.zeros(2).scatter_reduce(0, idx, src, r, include_self=False))",
    "scatter src dtype mismatch": "torch.zeros(3).scatter_(0, torch.tensor([0]), torch.ones(1, dtype=torch.float64))",
    "scatter index out of range": "torch.zeros(3).scatter_(0, torch.tensor([5]), 1.)",
    "scatter float index": "torch.zeros(3).scatter(0, torch.tensor([0.]), 1.)",
    "scatter_add dims mismatch": "torch.zeros(3, 2).scatter_add(0, torch.tensor([0, 1]), torch.ones(2))",
    "scatter_reduce bad reduce": "torch.zeros(3).scatter_reduce(0, torch.tensor([0]), torch.ones(1), 'max')",
    "take_along_dim and gather with argsort": "x = torch.tensor([[3., 1., 2.], [0., 5., 4.]])\ni = x.argsort(dim=1)\nprint(x.gather(1, i), torch.take_along_dim(x, i, dim=1), "
                                              "torch.take_along_dim(x, x.argmax(dim=1, keepdim=True), dim=1))",
    # ---- views, in-place -----------------------------------------------------------------------------------
    "view on transposed": "x = torch.arange(6).reshape(2, 3).t()\nprint(x.reshape(6), x.is_contiguous())\nx.view(6)",
    "view on sliced columns": "x = torch.arange(12).reshape(3, 4)[:, :2]\nprint(x.reshape(-1), x.view(3, 2, 1).shape)\nx.view(-1)",
    "view keeps when compatible": "x = torch.arange(24).reshape(2, 3, 4).permute(1, 0, 2)\nprint(x.view(3, 2, 2, 2).shape, x.reshape(6, 4).is_contiguous())",
    "expand then in-place": "x = torch.zeros(1, 3).expand(2, 3)\nx.add_(1)",
    "expand then index assignment": "x = torch.zeros(3).expand(2, 3)\nx[0, 0] = 1",
    "expand then contiguous in-place": "x = torch.zeros(1, 3).expand(2, 3).contiguous()\nx[0, 0] = 1\nprint(x, x.stride())",
    "in-place on non-overlapping expand stride": "x = torch.zeros(3).unsqueeze(0).expand(1, 3)\nx.add_(1)\nprint(x)",
    "requires_grad on int tensor": "torch.arange(3).requires_grad_()",
    "requires_grad on bool factory": "torch.zeros(2, dtype=torch.bool, requires_grad=True)",
    "requires_grad on complex": "x = torch.ones(2, dtype=torch.complex64, requires_grad=True)\nprint(x, (x * 1j).abs().sum())",
    "detach shares storage": "a = torch.ones(3, requires_grad=True)\nb = a.detach()\nb[0] = 7\nprint(a, b.requires_grad, b.data_ptr() == a.data_ptr(), a.data.requires_grad)",
    "detach then in-place breaks backward": "a = torch.ones(3, requires_grad=True)\ny = a.sigmoid()\ny.detach().zero_()\ny.sum().backward()",
    "data modification silently allowed": "a = torch.ones(3, requires_grad=True)\ny = a.exp()\ny.data.mul_(2)\ny.sum().backward()\nprint(a.grad)",
    "no_grad result flag": "a = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    b = a * 2\n    c = a.requires_grad_(True)\nprint(b.requires_grad, b.grad_fn, c is a, b.is_leaf)",
    "requires_grad_ inside no_grad": "with torch.no_grad():\n    x = torch.ones(2).requires_grad_()\n    y = x * 2\nprint(x.requires_grad, y.requires_grad)\nz = (x * 3).sum()\nz.backward()\nprint(x.grad)",
    "no_grad then backward error": "a = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    b = (a * 2).sum()\nb.backward()",
    "enable_grad inside no_grad": "a = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    with torch.enable_grad():\n        b = a * 2\n    c = a * 2\nprint(b.requires_grad, c.requires_grad)",
    "inference_mode tensor in autograd": "with torch.inference_mode():\n    x = torch.ones(2)\nprint(x.is_inference())\ny = torch.ones(2, requires_grad=True)\n(x * y).sum().backward()\nprint(y.grad)\nx.requires_grad_()",
    "inference tensor in-place outside": "with torch.inference_mode():\n    x = torch.ones(2)\nx.add_(1)",
    # ---- autograd warnings and errors ----------------------------------------------------------------------
    "backward twice on mul": "a = torch.ones(2, requires_grad=True)\ny = (a * a).sum()\ny.backward()\nprint(a.grad)\ny.backward()",
    "backward twice retain then free": "a = torch.ones(2, requires_grad=True)\ny = (a.exp()).sum()\ny.backward(retain_graph=True)\ny.backward()\nprint(a.grad)\ny.backward()",
    "backward twice on add is fine": "a = torch.ones(2, requires_grad=True)\ny = (a + 1).sum()\ny.backward()\ny.backward()\nprint(a.grad)",
    "grad of non-leaf warning text": _WARN + "a = torch.ones(2, requires_grad=True)\nb = a * 2\nshow_warnings(lambda: print(b.grad))",
    "grad of non-leaf after retain_grad": _WARN + "a = torch.ones(2, requires_grad=True)\nb = a * 2\nb.retain_grad()\nb.sum().backward()\nshow_warnings(lambda: print(b.grad))",
    "grad of view of leaf warning": _WARN + "a = torch.ones(2, requires_grad=True)\nshow_warnings(lambda: print(a[0].grad, a.view(2).grad))",
    "grad of leaf without requires_grad": _WARN + "show_warnings(lambda: print(torch.ones(1).grad, torch.ones(1).is_leaf))",
    "set grad of wrong shape": "a = torch.ones(2, requires_grad=True)\na.grad = torch.ones(3)",
    "set grad of wrong dtype": "a = torch.ones(2, requires_grad=True)\na.grad = torch.ones(2, dtype=torch.float64)",
    "set grad to non-tensor": "a = torch.ones(2, requires_grad=True)\na.grad = [1., 1.]",
    "zero_grad set_to_none forms": "m = nn.Linear(2, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nm(torch.ones(1, 2)).sum().backward()\n"
                                   "opt.zero_grad(set_to_none=False)\nprint(m.weight.grad, m.bias.grad)\nopt.zero_grad()\nprint(m.weight.grad)\n"
                                   "m(torch.ones(1, 2)).sum().backward()\nm.zero_grad(set_to_none=False)\nprint(m.bias.grad, m.bias.grad.grad_fn)",
    "grad accumulates across backward": "w = torch.tensor([1., 2.], requires_grad=True)\nfor _ in range(3):\n    (w * w).sum().backward()\nprint(w.grad)\nw.grad.zero_()\nprint(w.grad)",
    "autograd.grad allow_unused": "a = torch.ones(2, requires_grad=True)\nb = torch.ones(2, requires_grad=True)\nprint(torch.autograd.grad((a * 2).sum(), [a, b], allow_unused=True))\n"
                                  "torch.autograd.grad((a * 2).sum(), [a, b])",
    "autograd.grad non-scalar": "a = torch.ones(2, requires_grad=True)\ntorch.autograd.grad(a * 2, a)",
    "autograd.grad of input not requiring grad": "a = torch.ones(2)\ntorch.autograd.grad(a.sum(), a)",
    "create_graph second derivative": "x = torch.tensor(2., requires_grad=True)\ny = x ** 3\n(g,) = torch.autograd.grad(y, x, create_graph=True)\n(h,) = torch.autograd.grad(g, x)\nprint(g, h)",
    "backward on int result error": "a = torch.ones(2, requires_grad=True)\n(a > 0).sum().backward()",
    "argmax has no grad": "a = torch.tensor([1., 3.], requires_grad=True)\nprint(a.argmax(), a.argmax().requires_grad, a.round().requires_grad, (a // 1).requires_grad)",
    "leaf in-place under no_grad then backward": "w = torch.ones(2, requires_grad=True)\nloss = (w * 3).sum()\nwith torch.no_grad():\n    w -= 0.1\nloss.backward()\nprint(w, w.grad)",
    "modified leaf used in pow backward": "w = torch.ones(2, requires_grad=True)\nloss = (w ** 2).sum()\nwith torch.no_grad():\n    w.mul_(2)\nloss.backward()",
    # ---- modules: repr, parameters, apply --------------------------------------------------------------------
    "repr nested custom models": "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3, padding=1)\n"
                                 "        self.bn = nn.BatchNorm2d(8)\n        self.act = nn.ReLU(inplace=True)\n"
                                 "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.Sequential(Block(), Block())\n"
                                 "        self.head = nn.ModuleDict({'cls': nn.Linear(8, 10), 'box': nn.Linear(8, 4)})\n        self.extra = nn.ModuleList([nn.Dropout(0.1)])\n"
                                 "print(Net())",
    "repr modules with options": "print(nn.Conv2d(3, 8, (3, 5), stride=2, padding=(1, 2), dilation=2, groups=1, bias=False, padding_mode='reflect'), "
                                 "nn.Linear(3, 4, bias=False), nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1), "
                                 "nn.BatchNorm1d(4, affine=False, track_running_stats=False), nn.LeakyReLU(0.2, inplace=True), nn.Upsample(scale_factor=2))",
    "repr pooling and padding": "print(nn.MaxPool2d(3, stride=2, padding=1), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((1, 1)), nn.ZeroPad2d(1), "
                                "nn.ConstantPad1d((1, 2), 0.5), nn.ReflectionPad2d(2), nn.Embedding(10, 3, padding_idx=0, max_norm=1.0))",
    "repr normalisation and attention": "print(nn.LayerNorm([4, 5], eps=1e-6), nn.GroupNorm(2, 4), nn.InstanceNorm2d(3), nn.MultiheadAttention(8, 2), nn.TransformerEncoderLayer(8, 2, 16))",
    "named_parameters of nested": "m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))\nprint([(n, tuple(p.shape)) for n, p in m.named_parameters()])\n"
                                  "print([n for n, _ in m.named_parameters(recurse=False)], [n for n, _ in m.named_modules()], [n for n, _ in m.named_children()])",
    "state_dict keys with buffers": "m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))\nm.register_buffer('scale', torch.ones(1))\nm.register_buffer('tmp', torch.ones(1), persistent=False)\n"
                                    "print(list(m.state_dict()), [n for n, _ in m.named_buffers()])",
    "state_dict keep_vars and prefix": "m = nn.Linear(1, 1)\nsd = m.state_dict(keep_vars=True)\nprint(type(sd['weight']).__name__, sd['weight'].requires_grad, list(m.state_dict(prefix='enc.')), "
                                       "m.state_dict()['weight'].requires_grad)",
    "shared parameter listed once": "l = nn.Linear(2, 2)\nm = nn.Sequential(l, l)\nprint(len(list(m.parameters())), [n for n, _ in m.named_parameters()], list(m.state_dict()), "
                                    "len(list(m.named_parameters(remove_duplicate=False))))",
    "apply init": "def init(m):\n    if isinstance(m, nn.Linear):\n        nn.init.constant_(m.weight, 0.5)\n        nn.init.zeros_(m.bias)\n    print('visit', type(m).__name__)\n"
                  "m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))\nr = m.apply(init)\nprint(r is m, m[1][1].weight)",
    "apply with xavier seeded": "torch.manual_seed(0)\nm = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))\n"
                                "m.apply(lambda m: nn.init.xavier_uniform_(m.weight) if isinstance(m, nn.Linear) else None)\nprint(m[0].weight, m[1].weight)",
    "count parameters idiom": "m = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Flatten(), nn.Linear(16 * 30 * 30, 10))\nm[0].weight.requires_grad_(False)\n"
                              "print(sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.parameters() if p.requires_grad))",
    "module to dtype and half": "m = nn.Linear(2, 2).double()\nprint(m.weight.dtype, m.half().bias.dtype, m.to(torch.float32).weight.dtype, m.bfloat16().weight.dtype)\n"
                                "nn.Linear(2, 2)(torch.ones(1, 2, dtype=torch.float64))",
    "module to int dtype error": "nn.Linear(2, 2).to(torch.int64)",
    "module setattr tensor not registered": "m = nn.Linear(1, 1)\nm.extra = torch.ones(1)\nprint('extra' in m.state_dict(), [n for n, _ in m.named_parameters()])\nm.weight = torch.ones(1, 1)",
    "train eval return and flags": "m = nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2))\nprint(m.eval() is m, m.training, m[0].training, m.train(False).training, m.train().training, m[1].training)",
    "requires_grad_ on module": "m = nn.Linear(2, 1)\nprint(m.requires_grad_(False) is m, [p.requires_grad for p in m.parameters()])",
    "load_state_dict strict false keys": "m = nn.Linear(2, 1)\nr = m.load_state_dict({'weight': torch.ones(1, 2), 'extra': torch.ones(1)}, strict=False)\nprint(r, r.missing_keys, r.unexpected_keys, m.weight)",
    "load_state_dict size mismatch text": "nn.Sequential(nn.Linear(2, 2)).load_state_dict(nn.Sequential(nn.Linear(2, 3)).state_dict())",
    "load_state_dict dtype cast": "m = nn.Linear(1, 1)\nm.load_state_dict({'weight': torch.ones(1, 1, dtype=torch.float64), 'bias': torch.zeros(1, dtype=torch.int64)})\nprint(m.weight, m.bias)",
    # ---- saving and loading ---------------------------------------------------------------------------------
    "save load nested dict": _SAVE + "obj = {'epoch': 3, 'losses': [0.5, 0.25], 'w': torch.arange(3.), 'meta': {'name': 'run', 'ok': True, 'shape': (2, 3)}}\n"
                                     "torch.save(obj, path)\nback = torch.load(path)\nprint(back, type(back['meta']['shape']))",
    "save load to BytesIO": "import io\nbuf = io.BytesIO()\ntorch.save({'a': torch.ones(2, dtype=torch.int8)}, buf)\nbuf.seek(0)\nprint(torch.load(buf), buf.tell() > 0)",
    "save load optimizer resumes": _SAVE + "torch.manual_seed(0)\nm = nn.Linear(2, 1)\nopt = torch.optim.Adam(m.parameters(), lr=0.1)\nx = torch.randn(4, 2)\n"
                                           "for _ in range(2):\n    opt.zero_grad(); m(x).pow(2).mean().backward(); opt.step()\n"
                                           "torch.save({'model': m.state_dict(), 'opt': opt.state_dict()}, path)\nck = torch.load(path)\n"
                                           "m2 = nn.Linear(2, 1)\nm2.load_state_dict(ck['model'])\nopt2 = torch.optim.Adam(m2.parameters(), lr=0.5)\nopt2.load_state_dict(ck['opt'])\n"
                                           "for o, mm in ((opt, m), (opt2, m2)):\n    o.zero_grad(); mm(x).pow(2).mean().backward(); o.step()\n"
                                           "print(torch.equal(m.weight, m2.weight), opt2.param_groups[0]['lr'], opt2.state_dict()['state'][0]['step'])",
    "optimizer load_state_dict wrong groups": "m = nn.Linear(2, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nopt2 = torch.optim.SGD([m.weight], lr=0.1)\nopt2.load_state_dict(opt.state_dict())",
    "save load module whole": _SAVE + "m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())\ntorch.save(m, path)\nback = torch.load(path, weights_only=False)\nprint(back, torch.equal(back[0].bias, m[0].bias))",
    "save load shares storage of views": _SAVE + "x = torch.arange(6.)\ntorch.save([x, x[2:4]], path)\na, b = torch.load(path)\nb[0] = 100\nprint(a)",
    "save load keeps dtype device grad": _SAVE + "torch.save({'h': torch.ones(2, dtype=torch.float16), 'g': torch.ones(2, requires_grad=True), 'c': torch.tensor([1j])}, path)\n"
                                                 "b = torch.load(path, map_location='cpu')\nprint(b, b['g'].requires_grad)",
    "load weights_only rejects custom": _SAVE + "class Cfg:\n    pass\ntorch.save({'cfg': Cfg()}, path)\ntorch.load(path)",
    # ---- data loading -------------------------------------------------------------------------------------------
    "dataloader tuples of tensor and int": "ds = [(torch.tensor([i, i + 1.]), i) for i in range(5)]\nfor x, y in torch.utils.data.DataLoader(ds, batch_size=2):\n    print(x, y, y.dtype)",
    "dataloader dicts of lists": "ds = [{'ids': [i, i * 2], 'label': float(i)} for i in range(3)]\nprint(next(iter(torch.utils.data.DataLoader(ds, batch_size=3))))",
    "dataloader strings and tuples of strings": "ds = [('cat', 0), ('dog', 1), ('eel', 2)]\nfor b in torch.utils.data.DataLoader(ds, batch_size=2):\n    print(b)",
    "dataloader namedtuple and numpy": "import collections, numpy as np\nP = collections.namedtuple('P', 'x y')\nds = [P(np.array([i, i]), np.float32(i)) for i in range(3)]\n"
                                       "b = next(iter(torch.utils.data.DataLoader(ds, batch_size=3)))\nprint(type(b).__name__, b.x, b.y)",
    "dataloader bools and floats": "print(next(iter(torch.utils.data.DataLoader([True, False, True], batch_size=3))), next(iter(torch.utils.data.DataLoader([0.5, 1.5], batch_size=2))).dtype)",
    "dataloader None in batch": "next(iter(torch.utils.data.DataLoader([None, None], batch_size=2)))",
    "dataloader mismatched shapes": "next(iter(torch.utils.data.DataLoader([torch.ones(2, 2), torch.ones(2, 3)], batch_size=2)))",
    "dataloader len and last batch": "dl = torch.utils.data.DataLoader(torch.arange(10), batch_size=4)\nprint(len(dl), [b.tolist() for b in dl], len(torch.utils.data.DataLoader(torch.arange(10), batch_size=4, drop_last=True)))",
    "TensorDataset indexing and len": "ds = torch.utils.data.TensorDataset(torch.arange(4.), torch.arange(4) * 10)\nprint(len(ds), ds[1], ds[-1], ds[1:3], ds.tensors[1])",
    "TensorDataset of one tensor loader": "ds = torch.utils.data.TensorDataset(torch.arange(5.).reshape(5, 1))\nprint([b for b in torch.utils.data.DataLoader(ds, batch_size=2)])",
    "random_split fractions": "parts = torch.utils.data.random_split(range(10), [0.7, 0.3], generator=torch.Generator().manual_seed(42))\nprint([list(p) for p in parts], [len(p) for p in parts])",
    "random_split fractions uneven": "parts = torch.utils.data.random_split(range(7), [0.5, 0.5], generator=torch.Generator().manual_seed(1))\nprint([len(p) for p in parts], [list(p) for p in parts])",
    "random_split global seed": "torch.manual_seed(3)\nprint([list(p) for p in torch.utils.data.random_split(list('abcdef'), [3, 3])])",
    "random_split fractions not summing": "torch.utils.data.random_split(range(10), [0.5, 0.2])",
    "Subset and indices": "ds = torch.utils.data.Subset(list('abcdef'), [5, 0, 2])\nprint(len(ds), ds[0], list(ds), ds.indices)",
    "WeightedRandomSampler seeded": "torch.manual_seed(0)\ns = torch.utils.data.WeightedRandomSampler([0.1, 0.9, 0.5], num_samples=8)\nprint(list(s), list(torch.utils.data.RandomSampler(range(5), replacement=True, num_samples=6)))",
    "shuffle order with sizes": "for n in (3, 10, 17):\n    torch.manual_seed(n)\n    print([b.tolist() for b in torch.utils.data.DataLoader(torch.arange(n), batch_size=5, shuffle=True)])",
    "shuffle with generator twice": "g = torch.Generator().manual_seed(7)\ndl = torch.utils.data.DataLoader(torch.arange(6), batch_size=6, shuffle=True, generator=g)\nprint([b.tolist() for b in dl], [b.tolist() for b in dl])",
    # ---- seeded randomness --------------------------------------------------------------------------------------
    "randn shapes seeded": "torch.manual_seed(42)\nprint(torch.randn(3), torch.randn(2, 2), torch.randn(5, dtype=torch.float64))",
    "randn large seeded tail": "torch.manual_seed(1)\nx = torch.randn(100)\nprint(x[:3], x[-3:], x[14:18])",
    "rand and randn interleaved": "torch.manual_seed(5)\nprint(torch.rand(2), torch.randn(1), torch.rand(3), torch.randint(10, (3,)))",
    "randint forms seeded": "torch.manual_seed(0)\nprint(torch.randint(0, 2**40, (3,)), torch.randint(-5, 5, (4,)), torch.randint(3, (2, 2), dtype=torch.int32), torch.randint(0, 256, (3,), dtype=torch.uint8))",
    "randperm sizes seeded": "torch.manual_seed(0)\nprint(torch.randperm(5), torch.randperm(10), torch.randperm(1), torch.randperm(0), torch.randperm(4, dtype=torch.int32))",
    "randperm large seeded": "torch.manual_seed(0)\nx = torch.randperm(100)\nprint(x[:10], x.sort().values.equal(torch.arange(100)))",
    "dropout seeded 2-d and train": "torch.manual_seed(0)\nd = nn.Dropout(0.3)\nprint(d(torch.ones(3, 4)), F.dropout(torch.ones(5), 0.5, training=False), nn.Dropout2d(0.5)(torch.ones(1, 4, 1, 1)).flatten())",
    "normal and uniform seeded": "torch.manual_seed(0)\nprint(torch.normal(2., 3., size=(3,)), torch.empty(3).uniform_(-1, 1), torch.empty(2).normal_(0, 0.01), torch.rand(2, dtype=torch.float64))",
    "multinomial and bernoulli seeded": "torch.manual_seed(0)\nprint(torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 5, replacement=True), torch.multinomial(torch.tensor([1., 1., 1., 1.]), 4), "
                                        "torch.bernoulli(torch.tensor([0.2, 0.5, 0.9])))",
    "seed reproducibility twice": "torch.manual_seed(123)\na = (torch.randn(4), torch.randint(0, 100, (3,)), torch.randperm(6))\ntorch.manual_seed(123)\nb = (torch.randn(4), torch.randint(0, 100, (3,)), torch.randperm(6))\n"
                                  "print(all(torch.equal(x, y) for x, y in zip(a, b)), a)",
    "initial_seed and seed value": "torch.manual_seed(99)\nprint(torch.initial_seed(), torch.random.initial_seed(), torch.Generator().manual_seed(5).initial_seed())",
    "randn half and bfloat16 seeded": "torch.manual_seed(0)\nprint(torch.randn(4, dtype=torch.float16), torch.rand(3, dtype=torch.bfloat16))",
    "randn with generator and requires_grad": "g = torch.Generator().manual_seed(2)\nprint(torch.randn(3, generator=g, requires_grad=True), torch.rand(2, generator=g))",
    "linear default init seeded": "torch.manual_seed(0)\nm = nn.Linear(3, 2)\nprint(m.weight, m.bias)",
    "conv default init seeded": "torch.manual_seed(0)\nm = nn.Conv1d(2, 1, 2)\nprint(m.weight, m.bias, nn.Embedding(3, 2).weight)",
    # ---- cat, where, argmax, sort, unique --------------------------------------------------------------------------
    "cat dtype promotion": "print(torch.cat([torch.tensor([1]), torch.tensor([2.5])]), torch.cat([torch.tensor([True]), torch.tensor([2])]), "
                           "torch.cat([torch.ones(1, dtype=torch.float16), torch.ones(1)]).dtype, torch.cat([torch.tensor([1], dtype=torch.uint8), torch.tensor([-1], dtype=torch.int8)]).dtype)",
    "cat with legacy empty": "print(torch.cat([torch.tensor([]), torch.ones(2, 2)]).shape, torch.cat([torch.ones(0, 2), torch.ones(1, 2)]).shape)",
    "cat 0-d error": "torch.cat([torch.tensor(1.), torch.ones(1)])",
    "cat tuple and negative dim": "print(torch.cat((torch.ones(2, 1), torch.zeros(2, 2)), dim=-1), torch.cat([torch.ones(1, 2)] * 3, 0).shape)",
    "cat not a list": "torch.cat(torch.ones(2), torch.ones(2))",
    "stack dtype promotion and new dim": "print(torch.stack([torch.tensor([1]), torch.tensor([2.])]), torch.stack([torch.ones(2), torch.zeros(2)], dim=1), torch.stack([torch.tensor(1), torch.tensor(2)]))",
    "where scalar forms": "c = torch.tensor([True, False, True])\nprint(torch.where(c, 1., 0.), torch.where(c, 1, 0), torch.where(c, torch.tensor([5, 6, 7]), 0.5), "
                          "torch.where(c, torch.ones(3, dtype=torch.float16), 2.).dtype)",
    "where one argument and scalar tensor": "print(torch.where(torch.tensor([0, 3, 0, 4])), torch.where(torch.tensor([True, False]), torch.tensor(1.), torch.tensor(2, dtype=torch.int64)))",
    "where non-bool condition": "torch.where(torch.tensor([1, 0]), 1., 0.)",
    "where mixed tensor dtypes": "print(torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), torch.tensor([0.5, 0.25])), "
                                 "torch.where(torch.tensor([True]), torch.tensor([1.], dtype=torch.float64), torch.tensor([2.])).dtype)",
    "argmax ties and nan": "print(torch.tensor([1, 3, 3, 2]).argmax(), torch.tensor([2, 1, 1]).argmin(), torch.tensor([1., float('nan'), 3.]).argmax(), "
                           "torch.tensor([[1, 1], [0, 2]]).argmax(dim=0), torch.tensor([5., 5.]).max(dim=0))",
    "max min with nan": "x = torch.tensor([1., float('nan'), 3.])\nprint(x.max(), x.min(), x.amax(), torch.maximum(x, torch.zeros(3)), x.nanmean(), x.nansum(), torch.fmax(x, torch.zeros(3)))",
    "argmax on 2-d flattens": "x = torch.tensor([[1, 9], [9, 2]])\nprint(x.argmax(), x.argmin(), x.max(1), x.min(0).indices)",
    "sort stable descending and ties": "x = torch.tensor([3, 1, 3, 2, 1, 3])\nprint(x.sort(stable=True, descending=True), torch.sort(x, stable=True), x.argsort(stable=True))",
    "sort with nan and 2-d": "x = torch.tensor([[2., float('nan'), 1.], [0., -1., float('inf')]])\nprint(x.sort(), x.sort(dim=0, descending=True), x.argsort(dim=1, descending=True))",
    "sort of bool and empty": "print(torch.tensor([True, False, True]).sort(), torch.tensor([]).sort(), torch.tensor(5.).sort())",
    "topk ties and errors": "print(torch.tensor([1., 3., 3., 2.]).topk(2), torch.tensor([1, 2, 3]).topk(3, sorted=True))\ntorch.tensor([1., 2.]).topk(3)",
    "unique return forms": "x = torch.tensor([2, 3, 2, 1, 3, 3])\nprint(torch.unique(x), torch.unique(x, return_counts=True), torch.unique(x, return_inverse=True, return_counts=True))",
    "unique dim and floats": "x = torch.tensor([[1, 2], [1, 2], [0, 5]])\nprint(torch.unique(x, dim=0), torch.unique(x, dim=1), torch.unique(torch.tensor([1.5, float('nan'), 1.5, float('nan')])))",
    "unique sorted false and consecutive": "x = torch.tensor([3, 3, 1, 1, 3])\nprint(torch.unique_consecutive(x, return_counts=True, return_inverse=True), x.unique(sorted=False).sort().values, torch.unique(torch.tensor([], dtype=torch.long)))",
    "bincount and histc": "print(torch.bincount(torch.tensor([0, 2, 2, 5])), torch.bincount(torch.tensor([1, 1]), weights=torch.tensor([0.5, 0.25]), minlength=3), "
                          "torch.histc(torch.tensor([1., 2., 1., 4.]), bins=4, min=0, max=4))",
    "bincount negative error": "torch.bincount(torch.tensor([-1, 2]))",
    # ---- einsum, arange, linspace, isclose ------------------------------------------------------------------------
    "einsum with spaces and ellipsis": "a = torch.arange(6.).reshape(2, 3)\nb = torch.arange(12.).reshape(2, 3, 2)\nprint(torch.einsum('i j , j k -> i k', a, b[0]), torch.einsum('...ij->...ji', b).shape, "
                                       "torch.einsum('bij,bjk->bik', b.transpose(1, 2), b))",
    "einsum diagonal trace and implicit": "m = torch.arange(9.).reshape(3, 3)\nprint(torch.einsum('ii->i', m), torch.einsum('ii', m), torch.einsum('ij', m), torch.einsum('ji', m), torch.einsum('ba', m))",
    "einsum list operands and uppercase": "a = torch.ones(2, 3)\nprint(torch.einsum('Ab,bC->AC', [a, a.t()]), torch.einsum('ij,j', a, torch.arange(3.)))",
    "einsum wrong operand count": "torch.einsum('ij,jk->ik', torch.ones(2, 2))",
    "einsum dimension mismatch": "torch.einsum('ij,jk->ik', torch.ones(2, 3), torch.ones(2, 2))",
    "einsum wrong subscripts count": "torch.einsum('ijk->i', torch.ones(2, 2))",
    "einsum output repeats": "torch.einsum('ij->ii', torch.ones(2, 2))",
    "arange float steps length": "for args in ((0, 1, 0.1), (1, 2.5, 0.5), (-1, 1, 0.3), (0, 0.3, 0.1), (0., 1., 1 / 3), (1, 0, -0.25)):\n    x = torch.arange(*args)\n    print(args, len(x), x)",
    "arange float32 accumulation": "x = torch.arange(0, 10, 0.1)\nprint(len(x), x[-3:], x.dtype, torch.arange(0, 5, 0.5, dtype=torch.float64)[-1], torch.arange(0.5, 3).dtype, torch.arange(5, dtype=torch.float32))",
    "arange int dtype with float step": "print(torch.arange(0, 5, 1.5, dtype=torch.int64), torch.arange(0, 2.5, dtype=torch.int32), torch.arange(1e3, 1e3 + 2))",
    "arange zero step": "torch.arange(0, 1, 0)",
    "arange wrong sign": "torch.arange(0, -5, 1)",
    "linspace steps and dtypes": "print(torch.linspace(0, 1, 5), torch.linspace(0, 10, steps=1), torch.linspace(0, 1, 0), torch.linspace(0, 10, 4, dtype=torch.int64), "
                                 "torch.linspace(-1, 1, 3, dtype=torch.float64))",
    "linspace float32 exact ends": "x = torch.linspace(0, 1, 7)\nprint(x, x[-1].item(), torch.linspace(1, 0, 4), torch.linspace(0, 1, 11)[3].item())",
    "linspace steps below zero": "torch.linspace(-1, 1, steps=-3)",
    "linspace missing steps": "torch.linspace(0, 1)",
    "isclose defaults and nan": "a = torch.tensor([1., float('nan'), float('inf'), 1e-9])\nb = torch.tensor([1 + 1e-6, float('nan'), float('inf'), 0.])\n"
                                "print(torch.isclose(a, b), torch.isclose(a, b, equal_nan=True), torch.isclose(a, b, rtol=0, atol=1e-7))",
    "allclose forms": "print(torch.allclose(torch.tensor([1., 2.]), torch.tensor([1., 2.0001])), torch.allclose(torch.tensor([1e-10]), torch.tensor([0.])), "
                      "torch.allclose(torch.tensor([1]), torch.tensor([1])), torch.allclose(torch.ones(2), torch.ones(1)))",
    "allclose shape mismatch": "torch.allclose(torch.ones(2), torch.ones(3))",
    "isclose integer and bool": "print(torch.isclose(torch.tensor([1, 2]), torch.tensor([1, 3])), torch.isclose(torch.tensor([True]), torch.tensor([True])), "
                                "torch.isclose(torch.tensor([1., 2.]), torch.tensor([1., 2.]), rtol=0, atol=0))",
    "isclose dtype mismatch": "torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64))",
    "equal and eq differences": "print(torch.equal(torch.ones(2), torch.ones(2, dtype=torch.int64)), torch.equal(torch.ones(2), torch.ones(3)), (torch.ones(2) == torch.ones(2)).all(), "
                                "torch.equal(torch.tensor([float('nan')]), torch.tensor([float('nan')])))",
    "testing assert_close failure": "torch.testing.assert_close(torch.tensor([1., 2.]), torch.tensor([1., 2.1]))",
    "testing assert_close dtype": "torch.testing.assert_close(torch.tensor([1.]), torch.tensor([1.], dtype=torch.float64))",
    # ---- a few more first-week operations ---------------------------------------------------------------------------
    "clamp with min greater than max": "print(torch.tensor([0., 5., 10.]).clamp(6, 4), torch.tensor([1, 5]).clamp(max=3.5), torch.tensor([1, 5]).clamp(min=2.5).dtype)",
    "softmax of integer and dim": "print(torch.tensor([1., 2., 3.]).softmax(0), torch.softmax(torch.tensor([[1, 2]]), dim=1, dtype=torch.float64), F.log_softmax(torch.zeros(2, 2), dim=-1))",
    "one_hot forms and errors": "print(F.one_hot(torch.tensor([0, 2]), 4), F.one_hot(torch.tensor([[1], [0]])), F.one_hot(torch.tensor([1]), -1))\nF.one_hot(torch.tensor([1.]), 3)",
    "one_hot class out of range": "F.one_hot(torch.tensor([3]), 3)",
    "cross_entropy with probabilities and smoothing": "logits = torch.tensor([[2., 0.5, -1.], [0., 1., 0.]])\nprint(F.cross_entropy(logits, torch.tensor([0, 1])), F.cross_entropy(logits, torch.tensor([[0.7, 0.2, 0.1], [0., 1., 0.]])), "
                                                      "F.cross_entropy(logits, torch.tensor([0, 1]), label_smoothing=0.1), F.cross_entropy(logits, torch.tensor([0, 1]), reduction='none'))",
    "flatten and squeeze everyday": "x = torch.zeros(2, 1, 3, 1)\nprint(x.squeeze().shape, x.squeeze(1).shape, x.squeeze((1, 3)).shape, x.flatten(1).shape, x.flatten().shape, torch.zeros(1, 1).squeeze().shape)",
    "transpose and permute everyday": "x = torch.arange(6).reshape(1, 2, 3)\nprint(x.transpose(1, 2), x.permute(2, 0, 1).shape, x.mT.shape, x.movedim(0, -1).shape, x.swapaxes(0, 2).shape)",
    "unsqueeze negative dims": "x = torch.ones(2, 3)\nprint(x.unsqueeze(-1).shape, x.unsqueeze(0).shape, x.unsqueeze(2).shape, x.unsqueeze(-3).shape)\nx.unsqueeze(3)",
    "repeat vs expand vs tile": "x = torch.tensor([[1, 2]])\nprint(x.repeat(2, 2), x.expand(2, 2), x.tile(2), x.repeat_interleave(2), x.repeat_interleave(torch.tensor([1, 3]), dim=1))",
    "chunk and split uneven": "x = torch.arange(7)\nprint(x.chunk(3), x.split(3), x.split([2, 5]), torch.tensor_split(x, 3), x.chunk(10))",
    "mean of int error text": "torch.tensor([1, 2, 3]).mean()",
    "std of one element": "print(torch.tensor([1.]).std(), torch.tensor([1., 2.]).std(unbiased=False), torch.tensor([1., 2., 4.]).var(correction=0), torch.tensor([]).mean())",
    "sum with dtype and of bool": "print(torch.tensor([True, True]).sum(), torch.tensor([200, 100], dtype=torch.uint8).sum(dtype=torch.uint8), torch.ones(2, 2).sum((0, 1)), torch.ones(3).sum(0, keepdim=True))",
    "matmul shapes everyday": "print((torch.ones(3) @ torch.ones(3)).shape, (torch.ones(2, 3) @ torch.ones(3)).shape, (torch.ones(3) @ torch.ones(3, 4)).shape, "
                              "(torch.ones(5, 2, 3) @ torch.ones(3, 4)).shape, (torch.ones(5, 1, 2, 3) @ torch.ones(4, 3, 1)).shape)",
    "matmul int and float error": "torch.ones(2, 2, dtype=torch.int64) @ torch.ones(2, 2)",
    "numel size shape dim": "x = torch.ones(2, 3, 4)\nprint(x.numel(), x.size(), x.size(-1), x.shape[1:], x.dim(), x.ndim, len(x), x.nelement(), torch.numel(x))",
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
