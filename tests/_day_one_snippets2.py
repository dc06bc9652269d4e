"""The second sweep of day-one snippets: a newcomer working through the tutorial and the first pages of
the docs (creation, printing, promotion, indexing, views, in-place rules, reductions, saving and loading,
data loading, training with every optimizer and scheduler, initialisation, common layer errors).
Run by ``tests/test_day_one_identity.py`` the same way as ``_day_one_snippets.py``: once under real torch
(``python THIS``) and once under ``hookgrad run THIS``; printed text and final exception must match."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _day_one_snippets import run  # noqa: E402

_OPTIMIZERS = ("SGD(p, lr=0.1)", "SGD(p, lr=0.1, momentum=0.9, nesterov=True)", "Adam(p, lr=0.1)",
               "AdamW(p, lr=0.1)", "Adam(p, lr=0.1, amsgrad=True)", "RMSprop(p, lr=0.01)", "Adagrad(p, lr=0.1)",
               "Adadelta(p, lr=1.0)", "Adamax(p, lr=0.1)", "NAdam(p, lr=0.1)", "RAdam(p, lr=0.1)",
               "ASGD(p, lr=0.1)", "Rprop(p, lr=0.1)", "Adafactor(p, lr=0.1)",
               "LBFGS(p, lr=0.5)")
_SCHEDULERS = ("StepLR(o, step_size=2, gamma=0.5)", "MultiStepLR(o, milestones=[1, 3], gamma=0.1)",
               "ExponentialLR(o, gamma=0.9)", "CosineAnnealingLR(o, T_max=4)",
               "CosineAnnealingWarmRestarts(o, T_0=2)", "LinearLR(o, start_factor=0.5, total_iters=3)",
               "ConstantLR(o, factor=0.5, total_iters=2)", "PolynomialLR(o, total_iters=4, power=2.0)",
               "LambdaLR(o, lambda e: 0.9 ** e)", "MultiplicativeLR(o, lambda e: 0.8)",
               "OneCycleLR(o, max_lr=1.0, total_steps=6)", "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2)",
               "ReduceLROnPlateau(o, patience=0)")

_TRAIN = ("torch.manual_seed(0)\nx = torch.randn(16, 3)\ny = x @ torch.tensor([[1.], [-2.], [0.5]]) + 0.1\n"
          "model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))\np = model.parameters()\n"
          "opt = torch.optim.{opt}\n"
          "def closure():\n    opt.zero_grad()\n    loss = F.mse_loss(model(x), y)\n    loss.backward()\n    return loss\n"
          "for step in range(4):\n    loss = opt.step(closure)\n    print(step, f'{{loss.item():.4f}}')\n"
          "print(sorted(opt.state_dict()['param_groups'][0]))")

_SCHEDULE = ("o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, momentum=0.9)\n"
             "s = torch.optim.lr_scheduler.{sched}\n"
             "for epoch in range(5):\n    o.step()\n"
             "    s.step(1.0) if isinstance(s, torch.optim.lr_scheduler.ReduceLROnPlateau) else s.step()\n"
             "    print(epoch, [round(g['lr'], 6) for g in o.param_groups], [round(v, 6) for v in s.get_last_lr()])\n"
             "print(sorted(k for k in s.state_dict() if not k.startswith('_')))")

_OPTIMIZER_STATE = ("torch.manual_seed(0)\nmodel = nn.Linear(2, 1)\np = model.parameters()\nopt = torch.optim.{opt}\n"
                    "def closure():\n    opt.zero_grad()\n    loss = model(torch.ones(3, 2)).pow(2).mean()\n    loss.backward()\n"
                    "    return loss\nfor _ in range(2):\n    opt.step(closure)\nprint(opt.state_dict())")

_SCHEDULER_STATE = ("o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, momentum=0.9)\n"
                    "s = torch.optim.lr_scheduler.{sched}\nfor _ in range(2):\n    o.step()\n"
                    "    s.step(1.0) if isinstance(s, torch.optim.lr_scheduler.ReduceLROnPlateau) else s.step()\n"
                    "print({{k: v for k, v in s.state_dict().items() if k not in ('_scale_fn_ref',)}})\nprint(o.state_dict()['param_groups'])")

_SAVE = "import tempfile, os\nd = tempfile.mkdtemp()\npath = os.path.join(d, 'f.pt')\n"

SNIPPETS = {
    # ---- creation ------------------------------------------------------------------------------------
    "tensor from mixed ints and floats": "print(torch.tensor([1, 2.5, 3]), torch.tensor([[1, 2], [3., 4]]).dtype)",
    "tensor from bools and ints": "print(torch.tensor([True, 2]), torch.tensor([True, 2.5]), torch.tensor([False, True]).dtype)",
    "tensor from complex and float": "print(torch.tensor([1, 2j]), torch.tensor([1.5, 1j]).dtype)",
    "tensor from nested tuples": "print(torch.tensor(((1, 2), (3, 4))), torch.tensor([(1., 2.)]).shape)",
    "tensor from tensors in a list": "print(torch.tensor([torch.tensor(1.), torch.tensor(2.)]))",
    "tensor from list of 1-d tensors": "print(torch.tensor([torch.ones(2), torch.zeros(2)]))",
    "tensor with dtype keyword": "print(torch.tensor([1, 2], dtype=torch.float32), torch.tensor([1.9, -1.9], dtype=torch.int64), "
                                 "torch.tensor([0, 2], dtype=torch.bool))",
    "tensor with device keyword": "print(torch.tensor([1.], device='cpu'), torch.zeros(1, device=torch.device('cpu')).device)",
    "tensor from numpy float64": "import numpy as np\na = np.array([1.5, 2.5])\nt = torch.from_numpy(a)\n"
                                 "print(t, t.dtype, torch.tensor(a).dtype, torch.as_tensor(a).dtype)",
    "tensor from numpy ints": "import numpy as np\nprint(torch.from_numpy(np.arange(3)), torch.from_numpy(np.arange(3, dtype=np.int32)), "
                              "torch.from_numpy(np.array([1, 2], dtype=np.uint8)))",
    "from_numpy shares memory": "import numpy as np\na = np.zeros(3, dtype=np.float32)\nt = torch.from_numpy(a)\n"
                                "a[1] = 7\nt[2] = 3\nprint(t, a)",
    "tensor copies numpy": "import numpy as np\na = np.zeros(2)\nt = torch.tensor(a)\na[0] = 1\nprint(t)",
    "as_tensor shares numpy": "import numpy as np\na = np.zeros(2)\nt = torch.as_tensor(a)\na[0] = 1\nprint(t, "
                              "torch.as_tensor(a, dtype=torch.float32))",
    "numpy round trip dtypes": "import numpy as np\nfor dt in (torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, "
                               "torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64):\n"
                               "    print(dt, torch.zeros(1, dtype=dt).numpy().dtype)",
    "from_numpy bool and float16": "import numpy as np\nprint(torch.from_numpy(np.array([True, False])), "
                                   "torch.from_numpy(np.array([1.5], dtype=np.float16)))",
    "from_numpy negative strides": "import numpy as np\ntorch.from_numpy(np.arange(4)[::-1])",
    "from_numpy unsupported dtype": "import numpy as np\ntorch.from_numpy(np.array(['a']))",
    "tensor from numpy scalar": "import numpy as np\nprint(torch.tensor(np.float32(1.5)), torch.tensor(np.int64(3)), "
                                "torch.tensor(np.float64(2.0)).dtype)",
    "tensor from list of numpy arrays": "import numpy as np\nprint(torch.tensor(np.array([[1, 2], [3, 4]])), "
                                        "torch.tensor([np.float32(1.), np.float32(2.)]).dtype)",
    "zeros ones empty shapes": "print(torch.zeros(2, 3).shape, torch.ones((2, 3)).shape, torch.zeros([2]).shape, "
                               "torch.empty(size=(1, 2)).shape, torch.zeros(()).shape, torch.ones(torch.Size([3])).shape)",
    "zeros with dtype": "print(torch.zeros(2, dtype=torch.int64), torch.ones(2, dtype=torch.bool), torch.zeros(2, dtype=torch.float16))",
    "full variants": "print(torch.full((2, 2), 3), torch.full((2,), 2.5), torch.full((2,), True), torch.full((1,), 1, dtype=torch.float64))",
    "like functions keep dtype": "x = torch.tensor([1, 2], dtype=torch.int16)\nprint(torch.zeros_like(x), torch.ones_like(x), "
                                 "torch.full_like(x, 2.7), torch.empty_like(x).dtype, torch.randint_like(x, 5).dtype)",
    "like functions with requires_grad": "x = torch.ones(2)\nprint(torch.zeros_like(x, requires_grad=True), "
                                         "torch.ones_like(x, dtype=torch.float64))",
    "rand_like of integer": "torch.rand_like(torch.ones(2, dtype=torch.long))",
    "arange forms": "print(torch.arange(5), torch.arange(1, 4), torch.arange(1, 2.5, 0.5), torch.arange(0, 1, 0.1).shape, "
                    "torch.arange(5, dtype=torch.float32), torch.arange(3.0).dtype)",
    "arange negative step": "print(torch.arange(5, 0, -1), torch.arange(1., 0., -0.25))",
    "arange empty range": "print(torch.arange(0), torch.arange(3, 3))",
    "linspace forms": "print(torch.linspace(0, 1, 5), torch.linspace(-1, 1, 3, dtype=torch.float64), torch.linspace(0, 10, 1), "
                      "torch.linspace(0, 4, steps=5, dtype=torch.int64))",
    "linspace negative steps": "torch.linspace(0, 1, -1)",
    "logspace forms": "print(torch.logspace(0, 2, 3), torch.logspace(0, 3, 4, base=2), torch.logspace(-1, 1, 3, dtype=torch.float64))",
    "eye forms": "print(torch.eye(3), torch.eye(2, 3), torch.eye(2, dtype=torch.int64), torch.eye(3, 1))",
    "eye negative": "torch.eye(-1)",
    "zeros negative size": "torch.zeros(-1)",
    "empty with negative dims": "torch.empty(2, -3)",
    "diag and tril": "x = torch.arange(9.).reshape(3, 3)\nprint(torch.diag(torch.tensor([1, 2])), x.diag(), x.tril(), x.triu(1), "
                     "torch.diag_embed(torch.ones(2)))",
    "complex creation": "print(torch.complex(torch.tensor([1.]), torch.tensor([2.])), torch.polar(torch.tensor([1.]), torch.tensor([0.])), "
                        "torch.zeros(2, dtype=torch.complex128))",
    "default dtype switch": "torch.set_default_dtype(torch.float64)\nprint(torch.tensor([1.5]).dtype, torch.ones(1).dtype, "
                            "torch.arange(3.).dtype, torch.tensor([1]).dtype, torch.get_default_dtype())\n"
                            "torch.set_default_dtype(torch.float32)\nprint(torch.get_default_dtype(), torch.tensor([1 + 1j]).dtype)",
    "default dtype integer refused": "torch.set_default_dtype(torch.int64)",
    "tensor of tensor with grad": "x = torch.ones(2, requires_grad=True)\nprint(x.new_tensor([1., 2.]), x.new_zeros(2), x.new_ones(1, 2), "
                                  "x.new_full((2,), 4.), x.new_empty(3).shape)",
    "scalar_tensor and as_tensor of list": "print(torch.scalar_tensor(3), torch.as_tensor([1, 2]), torch.as_tensor(3.5))",
    "tensor requires_grad and dtype": "print(torch.tensor([1., 2.], requires_grad=True, dtype=torch.float64))",
    "heterogeneous list error": "torch.tensor([1, 'a'])",
    "tensor from None": "torch.tensor(None)",
    "tensor from dict": "torch.tensor({'a': 1})",
    "tensor overflow": "torch.tensor([300], dtype=torch.uint8)",
    "tensor int too big": "torch.tensor([2 ** 64])",
    # ---- random numbers ------------------------------------------------------------------------------
    "rand randn seeded 2-d": "torch.manual_seed(42)\nprint(torch.rand(2, 3), torch.randn(2, 2))",
    "randint forms": "torch.manual_seed(1)\nprint(torch.randint(10, (3,)), torch.randint(-5, 5, (2, 2)), torch.randint(3, (2,), dtype=torch.int32))",
    "randperm": "torch.manual_seed(3)\nprint(torch.randperm(6), torch.randperm(4, dtype=torch.int32))",
    "normal forms": "torch.manual_seed(0)\nprint(torch.normal(0., 1., (3,)), torch.normal(torch.zeros(2), torch.ones(2)), "
                    "torch.normal(2., torch.ones(2)))",
    "uniform_ and normal_ in place": "torch.manual_seed(0)\nx = torch.empty(3)\nprint(x.uniform_(-1, 1), x.normal_(), x.normal_(5, 0.1), "
                                     "x.fill_(2), x.exponential_(), x.bernoulli_(0.5))",
    "bernoulli and multinomial": "torch.manual_seed(0)\nprint(torch.bernoulli(torch.full((5,), 0.5)), "
                                 "torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 4, replacement=True), "
                                 "torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 2))",
    "rand with generator": "g = torch.Generator().manual_seed(7)\nprint(torch.rand(2, generator=g), torch.randn(2, generator=g), "
                           "torch.randint(0, 5, (3,), generator=g))",
    "seed reproducibility": "torch.manual_seed(5)\na = torch.randn(3)\ntorch.manual_seed(5)\nprint(torch.equal(a, torch.randn(3)), "
                            "torch.initial_seed())",
    "rng state restore": "s = torch.get_rng_state()\na = torch.rand(2)\ntorch.set_rng_state(s)\nprint(torch.equal(a, torch.rand(2)), s.dtype)",
    "rand float64 and half": "torch.manual_seed(0)\nprint(torch.rand(2, dtype=torch.float64), torch.randn(2, dtype=torch.float64), "
                             "torch.rand(2, dtype=torch.float16))",
    "randn of integer dtype": "torch.randn(2, dtype=torch.long)",
    "dropout seeded": "torch.manual_seed(0)\nprint(F.dropout(torch.ones(8), 0.5), nn.Dropout(0.25)(torch.ones(2, 4)))",
    "shuffle dataloader seeded": "torch.manual_seed(0)\nprint([b.tolist() for b in torch.utils.data.DataLoader(torch.arange(6), "
                                 "batch_size=2, shuffle=True)])",
    "random_split seeded": "print([list(s) for s in torch.utils.data.random_split(range(6), [4, 2], "
                           "generator=torch.Generator().manual_seed(42))], [len(s) for s in "
                           "torch.utils.data.random_split(range(10), [0.7, 0.3])])",
    # ---- printing ------------------------------------------------------------------------------------
    "print int64 large values": "print(torch.tensor([123456789012, -5]), torch.tensor([2 ** 62]))",
    "print float mixed magnitudes": "print(torch.tensor([0.1, 123.456, 1e-3]), torch.tensor([1e5, 1.]), torch.tensor([1e-5, 1.]))",
    "print float64 precision": "print(torch.tensor([1 / 3, 2 / 3], dtype=torch.float64), torch.tensor(1 / 3, dtype=torch.float64))",
    "print complex forms": "print(torch.tensor([1.5 + 0.5j, -2j]), torch.tensor([1 + 1j], dtype=torch.complex128), torch.tensor(2 + 3j))",
    "print complex large": "print(torch.arange(8.).view(2, 4).to(torch.complex64) * (1 + 1e5j))",
    "print half and bfloat16 2-d": "print(torch.arange(6.).reshape(2, 3).half() / 3, torch.arange(4.).bfloat16() / 3)",
    "print uint8 int8 2-d": "print(torch.arange(6, dtype=torch.uint8).reshape(2, 3), torch.tensor([[-128, 127]], dtype=torch.int8))",
    "print bool 2-d": "print(torch.eye(2, dtype=torch.bool), torch.zeros(2, 0, dtype=torch.bool))",
    "print big 3-d": "print(torch.arange(2000).reshape(10, 10, 20))",
    "print big float32 random": "torch.manual_seed(0)\nprint(torch.randn(100, 100))",
    "print long row wraps": "print(torch.arange(40.) * 1.5)",
    "print long int row wraps": "print(torch.arange(100) * 1000)",
    "print column vector": "print(torch.arange(4.).reshape(4, 1), torch.ones(1, 1, 1))",
    "print 5-d": "print(torch.zeros(1, 2, 1, 2, 1))",
    "print negative zero": "print(torch.tensor([-0.0, 0.0]), torch.tensor([-0.0]))",
    "print scientific negatives": "print(torch.tensor([-1e-7, 3e8]), torch.tensor([-1e20, 1.]))",
    "print all nan and inf": "print(torch.tensor([float('nan')] * 3), torch.tensor([float('inf'), -float('inf')]))",
    "print inf with whole floats": "print(torch.tensor([float('inf'), 1., 2.]), torch.tensor([float('nan'), 1.5e10]))",
    "print with grad_fn kinds": "x = torch.ones(2, 2, requires_grad=True)\nprint(x + 1, x.sum(0), x.t(), x[0], x.view(4), "
                                "x.expand(2, 2, 2).shape, torch.cat([x, x]).grad_fn)",
    "print requires_grad float64 and half": "print(torch.ones(2, dtype=torch.float64, requires_grad=True), "
                                            "torch.ones(2, dtype=torch.float16, requires_grad=True))",
    "print 0-d with grad": "x = torch.tensor(2., requires_grad=True)\nprint(x, x * 3, (x * 3).item())",
    "print summarised with grad": "x = torch.zeros(2000, requires_grad=True)\nprint(x, x + 1)",
    "print int tensor of large and small": "print(torch.tensor([1, 100000, -3]), torch.tensor([[1], [22], [333]]))",
    "print set_printoptions precision": "torch.set_printoptions(precision=2)\nprint(torch.tensor([1.23456, 2.5]), torch.tensor([1e-5]))\n"
                                        "torch.set_printoptions(profile='default')\nprint(torch.tensor([1.23456]))",
    "print set_printoptions threshold": "torch.set_printoptions(threshold=5, edgeitems=2)\nprint(torch.arange(10), torch.arange(20.).reshape(4, 5))\n"
                                        "torch.set_printoptions(profile='default')",
    "print set_printoptions full and short": "torch.set_printoptions(profile='short')\nprint(torch.arange(20.) / 3)\n"
                                             "torch.set_printoptions(profile='full')\nprint(torch.arange(1200)[-3:], len(str(torch.arange(1200))))\n"
                                             "torch.set_printoptions(profile='default')",
    "print set_printoptions sci_mode": "torch.set_printoptions(sci_mode=True)\nprint(torch.tensor([1., 2.]), torch.tensor([1]))\n"
                                       "torch.set_printoptions(sci_mode=False)\nprint(torch.tensor([1e-8, 1e8]))\n"
                                       "torch.set_printoptions(profile='default')",
    "print set_printoptions linewidth": "torch.set_printoptions(linewidth=30)\nprint(torch.arange(12.))\n"
                                        "torch.set_printoptions(profile='default')",
    "print get_printoptions": "print(torch._tensor_str.PRINT_OPTS.precision, torch._tensor_str.PRINT_OPTS.threshold, "
                              "torch._tensor_str.PRINT_OPTS.linewidth)",
    "print nested module": "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                           "        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)\n        self.bn = nn.BatchNorm2d(8)\n"
                           "        self.act = nn.ReLU(inplace=True)\n    def forward(self, x):\n        return self.act(self.bn(self.conv(x)))\n"
                           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                           "        self.features = nn.Sequential(Block(), nn.MaxPool2d(2, 2), Block())\n"
                           "        self.pool = nn.AdaptiveAvgPool2d((1, 1))\n        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(8, 10))\n"
                           "print(Net())",
    "print Sequential with OrderedDict": "from collections import OrderedDict\nprint(nn.Sequential(OrderedDict([('fc', nn.Linear(2, 2)), "
                                         "('act', nn.ReLU())])))",
    "print empty containers": "print(nn.Sequential(), nn.ModuleList(), nn.ModuleDict(), nn.ParameterList(), nn.ParameterDict())",
    "print ParameterList and Dict": "print(nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(1, 3))]))\n"
                                    "print(nn.ParameterDict({'a': nn.Parameter(torch.ones(2))}))",
    "print repeated modules": "print(nn.Sequential(*[nn.Linear(2, 2) for _ in range(4)]), nn.ModuleList([nn.ReLU()] * 3))",
    "print layer reprs": "print(nn.Conv2d(3, 6, kernel_size=(3, 5), stride=2, padding=(1, 2), dilation=2, groups=3), "
                         "nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1), nn.BatchNorm1d(4, momentum=None), "
                         "nn.LayerNorm([2, 3], elementwise_affine=False), nn.GroupNorm(2, 4), nn.AvgPool2d(3, stride=1), "
                         "nn.MaxPool1d(2, return_indices=True), nn.Upsample(scale_factor=2, mode='nearest'), nn.PReLU(), "
                         "nn.Softplus(beta=2), nn.Hardtanh(-2, 2), nn.ELU(alpha=0.5), nn.Threshold(0.1, 20), nn.Softmax2d(), "
                         "nn.Unflatten(1, (2, 2)), nn.Embedding(4, 2, max_norm=1.0), nn.MultiheadAttention(4, 2))",
    "print loss reprs": "print(nn.NLLLoss(ignore_index=0), nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(), nn.KLDivLoss(reduction='batchmean'), "
                        "nn.CrossEntropyLoss(label_smoothing=0.1), nn.BCELoss(weight=torch.ones(2)), nn.CosineEmbeddingLoss(), "
                        "nn.TripletMarginLoss(margin=2.0), nn.MarginRankingLoss())",
    "print parameter forms": "p = nn.Parameter(torch.tensor([[1., 2.], [3., 4.]]))\nprint(p, nn.Parameter(torch.ones(2), requires_grad=False), "
                             "nn.Parameter(torch.tensor(3.)), p * 2, p[0])",
    "print parameter of int": "print(nn.Parameter(torch.ones(2, dtype=torch.long), requires_grad=False))",
    "print parameter requires float": "nn.Parameter(torch.ones(2, dtype=torch.long))",
    "print Size forms": "s = torch.Size([2, 3])\nprint(s, repr(s), str(s), s.numel(), torch.Size(), torch.Size((1,)), list(s), s[0], s[-1:], s == (2, 3))",
    "print dtype forms": "print(repr(torch.float32), str(torch.int64), torch.float64, torch.cfloat, torch.cdouble, torch.short, torch.int8, "
                         "torch.uint16, torch.uint32, torch.uint64, torch.complex32, torch.chalf)",
    "print device forms": "print(torch.device('cpu:0'), repr(torch.device('cuda', 1)), torch.device('meta'), torch.device('cpu').type, "
                          "torch.device('cpu').index, torch.device('cuda:2').index, torch.device('cpu') == torch.device('cpu'))",
    "device bad string": "torch.device('gpu')",
    "print tensor in f-string and list": "x = torch.tensor([1., 2.])\nprint(f'value: {x}', [x, x[0]], {'k': x}, (x,))",
    "print tensor format spec": "print(f'{torch.tensor(1.23456):.2f}', '{:.1e}'.format(torch.tensor(12345.)), format(torch.tensor(3), 'd'))",
    "format spec on 1-d": "f'{torch.ones(2):.2f}'",
    "print item and tolist values": "x = torch.tensor([[1.5, 2.], [3., 4.]])\nprint(x.tolist(), x[0, 0].item(), torch.tensor(3).tolist(), "
                                    "torch.tensor([True]).tolist(), x.half().tolist(), torch.tensor([1 + 2j]).tolist())",
    "print float32 item precision": "print(torch.tensor(0.1).item(), torch.tensor([0.1]).tolist(), float(torch.tensor(0.1)), "
                                    "torch.tensor(1 / 3).item())",
    "print int and float conversions": "print(int(torch.tensor(3.9)), float(torch.tensor(2)), bool(torch.tensor(0.)), "
                                       "complex(torch.tensor(1.)), int(torch.tensor([5])), torch.tensor(2) ** 2)",
    "print index conversion": "print([10, 20, 30][torch.tensor(1)], list(range(5))[torch.tensor(1):torch.tensor(3)])",
    "index with float tensor": "[1, 2][torch.tensor(1.)]",
    # ---- type promotion ------------------------------------------------------------------------------
    "promotion int and float tensors": "a = torch.tensor([1, 2])\nb = torch.tensor([0.5, 1.5])\nprint(a + b, (a * b).dtype, (a - b.double()).dtype)",
    "promotion with python scalars": "i = torch.tensor([1, 2], dtype=torch.int32)\nf = torch.tensor([1.], dtype=torch.float16)\n"
                                     "print((i + 1).dtype, (i + 1.5).dtype, (i * True).dtype, (f + 1.5).dtype, (f * 2).dtype, "
                                     "(i + 1j).dtype, (f + 1j).dtype)",
    "promotion 0-d tensors": "i = torch.tensor([1, 2], dtype=torch.int8)\nprint((i + torch.tensor(1000)).dtype, (i + torch.tensor(1.5)).dtype, "
                             "(torch.ones(1, dtype=torch.float16) + torch.tensor(1., dtype=torch.float64)).dtype)",
    "promotion uint8 int8": "print((torch.ones(1, dtype=torch.uint8) + torch.ones(1, dtype=torch.int8)).dtype, "
                            "(torch.ones(1, dtype=torch.uint8) + torch.ones(1, dtype=torch.int16)).dtype, "
                            "(torch.ones(1, dtype=torch.bool) + torch.ones(1, dtype=torch.bool)).dtype)",
    "promotion half and bfloat16": "print((torch.ones(1, dtype=torch.float16) + torch.ones(1, dtype=torch.bfloat16)).dtype, "
                                   "(torch.ones(1, dtype=torch.bfloat16) * 2.5).dtype)",
    "promotion bool arithmetic": "b = torch.tensor([True, False])\nprint(b + b, b * 2, b + 1.5, b.sum(), b.float().mean(), b & b, ~b)",
    "bool subtraction error": "torch.tensor([True]) - torch.tensor([False])",
    "bool negation error": "-torch.tensor([True])",
    "promotion true division": "print(torch.tensor([3]) / torch.tensor([2]), torch.tensor([3], dtype=torch.int8) / 2, "
                               "torch.true_divide(torch.tensor([1]), 2).dtype, torch.div(torch.tensor([7]), 2, rounding_mode='floor'), "
                               "torch.div(torch.tensor([-7]), 2, rounding_mode='trunc'))",
    "promotion power": "print(torch.tensor([2]) ** 2, torch.tensor([2]) ** 0.5, 2 ** torch.tensor([3]), 2.0 ** torch.tensor([3]), "
                       "torch.tensor([2.]) ** torch.tensor([3]))",
    "integer negative power error": "torch.tensor([2]) ** -1",
    "promotion comparisons": "print(torch.tensor([1, 2]) == torch.tensor([1., 3.]), torch.tensor([1]) < 1.5, torch.tensor([0.5]) > True)",
    "promotion result_type": "print(torch.result_type(torch.tensor([1]), 1.0), torch.result_type(torch.tensor([1.], dtype=torch.float16), 1), "
                             "torch.promote_types(torch.int32, torch.float16), torch.can_cast(torch.float32, torch.int32), "
                             "torch.can_cast(torch.int32, torch.float32))",
    "in-place promotion error": "x = torch.tensor([1, 2])\nx += 1.5",
    "in-place promotion allowed": "x = torch.tensor([1., 2.])\nx += torch.tensor([1, 1])\nx *= 2\nprint(x, x.dtype)",
    "in-place bool result error": "x = torch.tensor([True])\nx += 2",
    "out= dtype mismatch": "torch.add(torch.ones(2), torch.ones(2), out=torch.zeros(2, dtype=torch.long))",
    "integer overflow wraps": "print(torch.tensor([127], dtype=torch.int8) + 1, torch.tensor([250], dtype=torch.uint8) + 10, "
                              "torch.tensor([2 ** 62]) * 4)",
    "mixed device-free ops with numpy scalars": "import numpy as np\nprint(torch.ones(2) * np.float64(2.5), (torch.ones(2) + np.int64(1)).dtype, "
                                                "(torch.ones(2) * np.float32(2)).dtype)",
    # ---- indexing and assignment -----------------------------------------------------------------------
    "basic indexing": "x = torch.arange(12).reshape(3, 4)\nprint(x[1], x[:, 1], x[1:, ::2], x[-1, -1], x[..., 0], x[None, 0].shape, x[:, None].shape)",
    "advanced indexing": "x = torch.arange(12).reshape(3, 4)\nprint(x[[0, 2]], x[[0, 1], [1, 2]], x[torch.tensor([2, 0])], x[:, [3, 0]], "
                         "x[[[0], [2]], [1, 3]])",
    "advanced indexing mixed with slices": "x = torch.arange(24).reshape(2, 3, 4)\nprint(x[:, [0, 2], 1], x[0, :, [1, 2]].shape, "
                                           "x[[0, 1], :, [0, 1]].shape, x[..., [0, 0]].shape)",
    "boolean indexing": "x = torch.arange(6.).reshape(2, 3)\nprint(x[x > 2], x[torch.tensor([True, False])], x[:, torch.tensor([True, False, True])], "
                        "x[x > 100].shape)",
    "boolean assignment": "x = torch.arange(6.)\nx[x > 2] = 0\nprint(x)\nx[torch.tensor([True, False] * 3)] = torch.tensor([7., 8., 9.])\nprint(x)",
    "slice assignment": "x = torch.zeros(3, 3)\nx[0] = 1\nx[:, 1] = torch.tensor([5., 6., 7.])\nx[1:, 2] = 9\nx[..., 0] += 2\nprint(x)",
    "advanced assignment": "x = torch.zeros(5)\nx[[0, 3]] = torch.tensor([1., 2.])\nx[torch.tensor([1, 1])] = 4.\nprint(x)",
    "index_put accumulate": "x = torch.zeros(3)\nprint(x.index_put_((torch.tensor([0, 0, 2]),), torch.tensor([1., 2., 3.]), accumulate=True))",
    "negative step error": "torch.arange(5)[::-1]",
    "flip instead of negative step": "print(torch.arange(5).flip(0), torch.arange(6).reshape(2, 3).flip(1), torch.fliplr(torch.eye(2)))",
    "index with float error": "torch.arange(5)[1.5]",
    "index with float tensor error": "torch.arange(5)[torch.tensor([0.])]",
    "index out of range advanced": "torch.arange(5)[torch.tensor([7])]",
    "index with list out of range": "torch.arange(5)[[1, 9]]",
    "assignment shape mismatch": "x = torch.zeros(2, 3)\nx[0] = torch.ones(4)",
    "assignment from list": "x = torch.zeros(3)\nx[:2] = torch.tensor([1, 2])\nprint(x)\nx[0] = 2.5\nx[1] = True\nprint(x)",
    "index 0-d with index": "torch.tensor(1.)[0]",
    "index 0-d with ellipsis and None": "x = torch.tensor(1.)\nprint(x[...], x[None], x[()], x[None, None].shape)",
    "index with tuple of lists": "x = torch.arange(9).reshape(3, 3)\nprint(x[([0, 1], [2, 0])], x[(0, 1)], x[[0, 1]])",
    "index with numpy array": "import numpy as np\nx = torch.arange(5)\nprint(x[np.array([0, 4])], x[np.array([True, False, True, False, True])], "
                              "x[np.int64(2)])",
    "index two ellipses": "torch.ones(2, 2)[..., ...]",
    "masked_select and nonzero": "x = torch.tensor([[0, 1], [2, 0]])\nprint(x.nonzero(), torch.nonzero(x, as_tuple=True), "
                                 "x.masked_select(x > 0), torch.argwhere(x), x.count_nonzero())",
    "take and take_along_dim": "x = torch.arange(6).reshape(2, 3)\nprint(torch.take(x, torch.tensor([0, 5])), "
                               "torch.take_along_dim(x, torch.tensor([[2], [0]]), dim=1))",
    "index_add and scatter_add": "print(torch.zeros(3).index_add(0, torch.tensor([0, 0]), torch.tensor([1., 2.])), "
                                 "torch.zeros(3).scatter_add(0, torch.tensor([1, 1]), torch.tensor([1., 3.])), "
                                 "torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([2., 5.]), reduce='amax'))",
    # ---- views and copies ------------------------------------------------------------------------------
    "contiguity and strides": "x = torch.arange(12.).reshape(3, 4)\nt = x.t()\nprint(x.is_contiguous(), t.is_contiguous(), x.stride(), t.stride(), "
                              "t.contiguous().stride(), x[:, 1].stride(), x[1].storage_offset(), x[:, 1:].storage_offset(), x.stride(1))",
    "expand strides": "x = torch.ones(3, 1)\ne = x.expand(3, 4)\nprint(e.stride(), e.is_contiguous(), x.unsqueeze(0).stride(), "
                      "torch.ones(2, 3, 4).permute(2, 0, 1).stride(), torch.ones(2, 3)[::2].stride())",
    "view of non-contiguous error": "torch.ones(2, 3).t().view(6)",
    "reshape copies when needed": "x = torch.arange(6.).reshape(2, 3)\nr = x.t().reshape(6)\nv = x.view(3, 2)\nv[0, 0] = 100\nr[1] = -1\n"
                                  "print(x, r, x.data_ptr() == v.data_ptr(), x.t().reshape(6).is_contiguous())",
    "view shares memory": "x = torch.zeros(4)\nv = x.view(2, 2)\nv[1, 1] = 3\ns = x[1:3]\ns += 1\nprint(x, s.storage_offset(), "
                          "s.data_ptr() - x.data_ptr(), x.untyped_storage().nbytes())",
    "numpy shares with tensor": "x = torch.zeros(3)\na = x.numpy()\nx[0] = 4\na[1] = 5\nprint(a, x, x.numpy().ctypes.data == x.data_ptr())",
    "numpy of a view": "x = torch.arange(6.).reshape(2, 3)\na = x.t().numpy()\nprint(a.strides, a.flags['C_CONTIGUOUS'], a)",
    "clone does not share": "x = torch.zeros(2)\nc = x.clone()\nc[0] = 1\nd = x.detach()\nd[1] = 2\nprint(x, c, x.data_ptr() == d.data_ptr())",
    "unfold and as_strided": "x = torch.arange(6.)\nprint(x.unfold(0, 2, 2), x.as_strided((2, 2), (1, 2)), x.narrow(0, 1, 3))",
    "is_view and _base": "x = torch.ones(4)\nv = x.view(2, 2)\nprint(v._base is x, x._base, x[1:]._is_view(), x.clone()._is_view())",
    "view dtype": "x = torch.tensor([1.], dtype=torch.float32)\nprint(x.view(torch.int32), torch.tensor([1, 0], dtype=torch.int16).view(torch.int32), "
                  "x.view(torch.uint8))",
    "view dtype size mismatch": "torch.ones(3, dtype=torch.float32).view(torch.float64)",
    "transpose shares and contiguous copies": "x = torch.arange(4.).reshape(2, 2)\nt = x.T\nt[0, 1] = 9\nc = t.contiguous()\nc[0, 0] = -1\nprint(x)",
    "squeeze and flatten views": "x = torch.zeros(1, 3)\nx.squeeze(0)[0] = 1\nx.flatten()[1] = 2\nx.reshape(3)[2] = 3\nprint(x)",
    "chunk views": "x = torch.zeros(4)\na, b = x.chunk(2)\nb[0] = 5\nprint(x, [t.storage_offset() for t in x.split(1)])",
    "element_size and nbytes": "print(torch.ones(3).element_size(), torch.ones(3, dtype=torch.float64).nbytes, torch.ones(2, dtype=torch.bool).itemsize, "
                               "torch.ones(2, 3).numel())",
    # ---- in-place ops ---------------------------------------------------------------------------------
    "in-place on leaf requiring grad": "x = torch.ones(2, requires_grad=True)\nx.add_(1)",
    "in-place indexing on leaf": "x = torch.ones(2, requires_grad=True)\nx[0] = 3",
    "in-place under no_grad on leaf": "x = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    x.mul_(2)\n    x[0] = 5\n"
                                      "print(x, x.is_leaf, x.grad_fn)",
    "in-place on data of leaf": "x = torch.ones(2, requires_grad=True)\nx.data.add_(1)\nx.data[0] = 7\nprint(x)",
    "in-place on non-leaf": "x = torch.ones(2, requires_grad=True)\ny = x * 2\ny.add_(1)\ny.sum().backward()\nprint(y, x.grad)",
    "in-place on view of leaf": "x = torch.ones(2, 2, requires_grad=True)\nx[0].mul_(2)",
    "in-place on view of non-leaf": "x = torch.ones(2, 2, requires_grad=True)\ny = x.clone()\ny[0].mul_(3)\ny.sum().backward()\n"
                                    "print(y, x.grad, y.grad_fn.name())",
    "in-place relu on leaf": "x = torch.ones(2, requires_grad=True)\nF.relu(x, inplace=True)",
    "in-place on expanded tensor": "x = torch.ones(1).expand(3)\nx.add_(1)",
    "in-place overlapping copy": "x = torch.arange(4.)\nx[1:] = x[:-1]\nprint(x)",
    "in-place returns self": "x = torch.zeros(2)\nprint(x.add_(1) is x, x.zero_() is x, x.clamp_(min=1), x.fill_(3) is x)",
    "in-place ops family": "x = torch.tensor([1., -2., 3.])\nprint(x.abs_(), x.sqrt_(), x.pow_(2), x.neg_(), x.exp_().round_(decimals=2), "
                           "x.clamp_(max=0.5), x.copy_(torch.tensor([1, 2, 3])), x.masked_fill_(x > 1, 0), x.sub_(1, alpha=2), "
                           "x.addcmul_(x, x, value=0.5), x.lerp_(torch.zeros(3), 0.5))",
    "in-place on integer with float op": "torch.tensor([4]).sqrt_()",
    "in-place broadcast output error": "x = torch.ones(2)\nx.add_(torch.ones(2, 2))",
    "set requires_grad false on leaf": "x = torch.ones(2, requires_grad=True)\nx.requires_grad = False\nx.add_(1)\nprint(x)",
    "requires_grad on non-leaf assign": "x = torch.ones(1, requires_grad=True)\ny = x * 2\ny.requires_grad = False",
    "leaf used then modified": "w = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nwith torch.no_grad():\n    w.sub_(0.1)\n"
                               "loss.backward()",
    "version counter": "x = torch.ones(2)\nprint(x._version)\nx.add_(1)\nx[0] = 3\nprint(x._version, x.view(2)._version)",
    # ---- reductions -----------------------------------------------------------------------------------
    "reductions with keepdim": "x = torch.arange(24.).reshape(2, 3, 4)\nprint(x.sum(1, keepdim=True).shape, x.mean((0, 2)), "
                               "x.mean((0, 2), keepdim=True).shape, x.amax((1, 2)), x.prod(0).shape, x.sum(-1)[0])",
    "reductions with negative dim tuples": "x = torch.arange(6.).reshape(1, 2, 3)\nprint(x.sum((-1, -2)), x.std((0, 2)), x.var(-1, keepdim=True), "
                                           "x.logsumexp((1, 2)), x.norm(dim=(1, 2)))",
    "reductions of integers": "x = torch.tensor([[1, 2], [3, 4]])\nprint(x.sum(), x.sum().dtype, x.prod(1), x.max(), x.cumsum(0), "
                              "torch.tensor([1, 2], dtype=torch.int8).sum().dtype, torch.tensor([True, True]).sum())",
    "reductions of bool": "b = torch.tensor([[True, False], [True, True]])\nprint(b.all(), b.any(1), b.all(dim=0), b.sum(0), b.int().prod())",
    "max min with dim return": "x = torch.tensor([[1., 5.], [7., 2.]])\nv, i = x.max(0)\nprint(v, i, x.min(dim=1, keepdim=True), "
                               "x.max(), torch.max(x, torch.ones(2, 2)), x.argmin(0))",
    "median mode var": "x = torch.tensor([[1., 5., 3.], [7., 2., 2.]])\nprint(x.median(), x.median(1), x.mode(1), x.var(), x.var(1, correction=0), "
                       "torch.std_mean(x, 1), torch.var_mean(x))",
    "reductions on empty": "print(torch.zeros(0).sum(), torch.zeros(0).prod(), torch.zeros(2, 0).sum(1), torch.zeros(0).amax(0) if False else 0)",
    "max of empty error": "torch.zeros(0).max()",
    "amax of empty dim error": "torch.zeros(2, 0).amax(1)",
    "reduction duplicate dims": "torch.ones(2, 3).sum((0, 0))",
    "reduction dim out of range in tuple": "torch.ones(2, 3).mean((0, 2))",
    "mean of integer dim": "torch.arange(4).mean(0)",
    "mean with dtype": "print(torch.arange(4).mean(dtype=torch.float32), torch.arange(4).sum(dtype=torch.float64), "
                       "torch.ones(2).sum(dtype=torch.int32))",
    "cumulative ops": "x = torch.tensor([1., 3., 2.])\nprint(x.cumsum(0), x.cumprod(0), torch.cummax(x, 0), x.cumsum(dim=-1).dtype, "
                      "torch.tensor([1, 2]).cumsum(0).dtype, torch.logcumsumexp(x, 0))",
    "norms": "x = torch.tensor([[3., 4.], [0., 0.]])\nprint(x.norm(), x.norm(dim=1), x.norm(p=1), torch.linalg.norm(x), "
             "torch.linalg.vector_norm(x, ord=float('inf')), torch.linalg.matrix_norm(x), x.norm(p='fro'))",
    "all any of floats": "print(torch.tensor([1., 0.]).all(), torch.tensor([0.5]).any(), torch.tensor([]).all(), torch.tensor([]).any())",
    "sum of list of tensors": "print(sum([torch.ones(2), torch.ones(2)]), sum(torch.arange(4)), max(torch.tensor([3, 1, 2])))",
    # ---- shape errors ---------------------------------------------------------------------------------
    "matmul vector vector mismatch": "torch.ones(2) @ torch.ones(3)",
    "matmul matrix mismatch": "torch.ones(2, 3) @ torch.ones(2, 3)",
    "matmul matrix vector mismatch": "torch.ones(2, 3) @ torch.ones(2)",
    "matmul vector matrix mismatch": "torch.ones(2) @ torch.ones(3, 4)",
    "matmul batched mismatch": "torch.ones(5, 2, 3) @ torch.ones(4, 3, 2)",
    "matmul 0-d error": "torch.ones(2) @ torch.tensor(2.)",
    "mm of 1-d": "torch.mm(torch.ones(2), torch.ones(2, 2))",
    "mm mismatch": "torch.mm(torch.ones(2, 3), torch.ones(2, 3))",
    "mv mismatch": "torch.mv(torch.ones(2, 3), torch.ones(2))",
    "dot of different sizes": "torch.dot(torch.ones(2), torch.ones(3))",
    "dot of 2-d": "torch.dot(torch.ones(2, 2), torch.ones(2, 2))",
    "matmul int and float": "torch.ones(2, 2, dtype=torch.long) @ torch.ones(2, 2)",
    "matmul of integers": "print(torch.arange(4).reshape(2, 2) @ torch.arange(4).reshape(2, 2), torch.tensor([1, 2]) @ torch.tensor([3, 4]))",
    "matmul broadcast shapes": "print((torch.ones(2, 1, 3, 4) @ torch.ones(5, 4, 2)).shape, (torch.ones(3) @ torch.ones(2, 3, 4)).shape, "
                               "(torch.ones(2, 3, 4) @ torch.ones(4)).shape)",
    "broadcast add mismatch": "torch.ones(2, 3) + torch.ones(2)",
    "broadcast mul mismatch 3-d": "torch.ones(4, 2, 3) * torch.ones(3, 3)",
    "broadcast where mismatch": "torch.where(torch.ones(2) > 0, torch.ones(3), torch.ones(2))",
    "broadcast_to error": "torch.ones(3).broadcast_to((2, 2))",
    "broadcast works": "print((torch.ones(3, 1) + torch.arange(4.)).shape, torch.broadcast_shapes((2, 1), (1, 3)), "
                       "torch.broadcast_tensors(torch.ones(2, 1), torch.ones(3))[0].shape)",
    "broadcast_shapes error": "torch.broadcast_shapes((2, 3), (4,))",
    "cat shape mismatch": "torch.cat([torch.ones(2, 3), torch.ones(2, 4)])",
    "cat of 0-d": "torch.cat([torch.tensor(1.), torch.tensor(2.)])",
    "cat empty list": "torch.cat([])",
    "stack shape mismatch": "torch.stack([torch.ones(2), torch.ones(3)])",
    "cat mixed dtypes": "print(torch.cat([torch.ones(1, dtype=torch.int64), torch.ones(1)]), torch.stack([torch.ones(1, dtype=torch.int32), "
                        "torch.ones(1, dtype=torch.int64)]).dtype)",
    "view wrong size": "torch.ones(6).view(4, 2)",
    "reshape wrong size 3-d": "torch.ones(2, 3, 4).reshape(5, -1)",
    "squeeze dim not one": "print(torch.ones(2, 3).squeeze(0).shape, torch.ones(1, 1, 3).squeeze((0, 1)).shape)",
    "permute repeated dim": "torch.ones(2, 3).permute(0, 0)",
    "expand wrong dims": "torch.ones(2, 3).expand(3)",
    "repeat fewer dims": "torch.ones(2, 3).repeat(2)",
    "transpose of 1-d": "print(torch.ones(3).t().shape, torch.ones(3).T.shape)",
    "mT of 1-d": "torch.ones(3).mT",
    # ---- item, tolist, numpy ----------------------------------------------------------------------------
    "numpy with grad": "torch.ones(2, requires_grad=True).numpy()",
    "numpy of non-leaf": "x = torch.ones(2, requires_grad=True)\n(x * 2).numpy()",
    "numpy force": "x = torch.ones(2, requires_grad=True)\nprint(x.numpy(force=True), x.detach().numpy(), x.tolist(), x.sum().item())",
    "item of many": "torch.ones(2).item()",
    "item of empty": "torch.zeros(0).item()",
    "tolist with grad": "x = torch.tensor([1.5], requires_grad=True)\nprint(x.tolist(), (x * 2).tolist(), x[0].item())",
    "numpy of bfloat16": "torch.ones(2, dtype=torch.bfloat16).numpy()",
    "numpy array from tensor": "import numpy as np\nx = torch.tensor([1., 2.])\nprint(np.array(x), np.asarray(x).dtype, np.array(torch.ones(2, requires_grad=True) * 1) if False else 0)",
    "np.array of grad tensor": "import numpy as np\nnp.array(torch.ones(2, requires_grad=True))",
    "numpy ufunc on tensor": "import numpy as np\nx = torch.tensor([1., 4.])\nprint(np.sqrt(x), type(np.sqrt(x)), np.sum(x), np.mean(x))",
    "len and iteration": "x = torch.arange(6).reshape(3, 2)\nprint(len(x), [r.tolist() for r in x], list(torch.arange(3)), "
                         "[type(v) for v in torch.arange(2)])",
    "tensor hashing": "x = torch.ones(1)\nprint(x in {x: 1}, len({torch.ones(1), torch.ones(1)}))",
    "tensor in list equality": "x = torch.tensor([1, 2])\nprint(2 in x, 5 in x, torch.tensor(1) in x)",
    "unhashable containment check": "[torch.ones(2)].index(torch.zeros(2))",
    # ---- saving and loading -----------------------------------------------------------------------------
    "save and load a tensor": _SAVE + "torch.save(torch.arange(3.), path)\nprint(torch.load(path))\n"
                                      "torch.save({'a': torch.ones(2, dtype=torch.int32), 'b': [1, 'x']}, path)\nprint(torch.load(path))",
    "save and load views share": _SAVE + "x = torch.arange(4.)\ntorch.save([x, x[1:]], path)\na, b = torch.load(path)\nb[0] = 10\n"
                                         "print(a, b.storage_offset())",
    "save and load state_dict": _SAVE + "torch.manual_seed(0)\nm = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))\n"
                                        "torch.save(m.state_dict(), path)\nsd = torch.load(path)\nprint(list(sd), sd['1.num_batches_tracked'])\n"
                                        "m2 = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))\nprint(m2.load_state_dict(sd), "
                                        "torch.equal(m2[0].weight, m[0].weight), type(sd).__name__)",
    "save optimizer state": _SAVE + "p = nn.Parameter(torch.ones(2))\no = torch.optim.Adam([p], lr=0.1)\np.grad = torch.ones(2)\no.step()\n"
                                    "torch.save({'opt': o.state_dict(), 'epoch': 3}, path)\nck = torch.load(path)\n"
                                    "o2 = torch.optim.Adam([p], lr=0.1)\no2.load_state_dict(ck['opt'])\nprint(ck['epoch'], o2.state_dict()['state'])",
    "save whole model weights_only default": _SAVE + "torch.save(nn.Linear(2, 1), path)\ntorch.load(path)",
    "save whole model weights_only False": _SAVE + "torch.manual_seed(0)\ntorch.save(nn.Sequential(nn.Linear(2, 1), nn.ReLU()), path)\n"
                                                   "m = torch.load(path, weights_only=False)\nprint(m, m[0].weight)",
    "save custom class weights_only": _SAVE + "class Box:\n    pass\ntorch.save({'box': Box()}, path)\ntorch.load(path, weights_only=True)",
    "load weights_only with safe globals": _SAVE + "torch.save(nn.Sequential(nn.ReLU()), path)\n"
                                                   "with torch.serialization.safe_globals([nn.Sequential, nn.ReLU]):\n"
                                                   "    print(torch.load(path))",
    "load map_location": _SAVE + "torch.save({'w': torch.ones(2)}, path)\nprint(torch.load(path, map_location='cpu'), "
                                 "torch.load(path, map_location=torch.device('cpu'))['w'].device, "
                                 "torch.load(path, map_location=lambda s, loc: s)['w'])",
    "save to a buffer": "import io\nb = io.BytesIO()\ntorch.save({'x': torch.tensor([1, 2])}, b)\nb.seek(0)\nprint(torch.load(b))",
    "save parameter and load": _SAVE + "torch.save(nn.Parameter(torch.ones(2)), path)\np = torch.load(path)\nprint(type(p), p)",
    "save requires_grad tensor": _SAVE + "torch.save(torch.ones(2, requires_grad=True), path)\nt = torch.load(path)\nprint(t, t.is_leaf)",
    "save non-leaf tensor": _SAVE + "x = torch.ones(2, requires_grad=True)\ntorch.save(x * 2, path)\nprint(torch.load(path))",
    "save dtypes round trip": _SAVE + "ts = [torch.ones(2, dtype=d) for d in (torch.float16, torch.bfloat16, torch.int8, torch.bool, "
                                      "torch.complex64, torch.uint8, torch.float64)]\ntorch.save(ts, path)\nprint(torch.load(path))",
    "load garbage file": _SAVE + "open(path, 'wb').write(b'not a checkpoint')\ntorch.load(path)",
    "load_state_dict unexpected keys": "nn.Linear(2, 1).load_state_dict({'weight': torch.ones(1, 2), 'bias': torch.ones(1), 'extra': torch.ones(1)})",
    "load_state_dict of a model into another": "nn.Linear(2, 1).load_state_dict(nn.Linear(3, 1).state_dict())",
    "state_dict keeps tensors detached": "m = nn.Linear(1, 1)\nsd = m.state_dict()\nprint(sd['weight'].requires_grad, sd['weight'] is m.weight, "
                                         "m.state_dict(keep_vars=True)['weight'].requires_grad)",
    # ---- data loading ---------------------------------------------------------------------------------
    "TensorDataset basics": "ds = torch.utils.data.TensorDataset(torch.arange(6.).reshape(3, 2), torch.tensor([0, 1, 0]))\n"
                            "print(len(ds), ds[1], ds[-1], ds.tensors[1], ds[0:2])",
    "TensorDataset size mismatch": "torch.utils.data.TensorDataset(torch.ones(3), torch.ones(2))",
    "DataLoader batches": "ds = torch.utils.data.TensorDataset(torch.arange(10.), torch.arange(10) % 2)\n"
                          "for xb, yb in torch.utils.data.DataLoader(ds, batch_size=4):\n    print(xb, yb)",
    "DataLoader drop_last and len": "dl = torch.utils.data.DataLoader(torch.arange(10), batch_size=4, drop_last=True)\nprint(len(dl), list(dl))",
    "DataLoader batch_size None": "print(list(torch.utils.data.DataLoader(torch.arange(3), batch_size=None)))",
    "DataLoader collate numbers": "print(next(iter(torch.utils.data.DataLoader([1.5, 2.5], batch_size=2))), "
                                  "next(iter(torch.utils.data.DataLoader([(1, 2.), (3, 4.)], batch_size=2))))",
    "DataLoader collate numpy": "import numpy as np\nprint(next(iter(torch.utils.data.DataLoader([np.ones(2), np.zeros(2)], batch_size=2))))",
    "DataLoader custom Dataset": "class Squares(torch.utils.data.Dataset):\n    def __len__(self):\n        return 5\n"
                                 "    def __getitem__(self, i):\n        return torch.tensor(i * i), i\n"
                                 "print([b for b in torch.utils.data.DataLoader(Squares(), batch_size=2)])",
    "DataLoader custom collate_fn": "print(list(torch.utils.data.DataLoader([1, 2, 3], batch_size=2, collate_fn=lambda b: sum(b))))",
    "DataLoader ragged batch error": "next(iter(torch.utils.data.DataLoader([torch.ones(2), torch.ones(3)], batch_size=2)))",
    "DataLoader shuffle and sampler error": "torch.utils.data.DataLoader([1, 2], shuffle=True, sampler=torch.utils.data.SequentialSampler([1, 2]))",
    "DataLoader samplers": "torch.manual_seed(0)\nprint(list(torch.utils.data.SequentialSampler(range(3))), list(torch.utils.data.RandomSampler(range(4))), "
                           "list(torch.utils.data.BatchSampler(range(5), 2, False)), "
                           "list(torch.utils.data.WeightedRandomSampler([0.1, 0.9], 4)), list(torch.utils.data.SubsetRandomSampler([5, 6])))",
    "Subset and ConcatDataset": "ds = torch.utils.data.Subset(list(range(10)), [1, 3])\nc = torch.utils.data.ConcatDataset([[1, 2], [3]])\n"
                                "print(len(ds), ds[1], len(c), c[2], c.cumulative_sizes)",
    "IterableDataset": "class Count(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter(range(5))\n"
                       "print(list(torch.utils.data.DataLoader(Count(), batch_size=2)))",
    "IterableDataset with shuffle": "class Count(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter(range(5))\n"
                                    "torch.utils.data.DataLoader(Count(), shuffle=True)",
    "Dataset without len": "class D(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n        return i\nlen(D())",
    "DataLoader len of iterable": "class Count(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter(range(5))\n"
                                  "len(torch.utils.data.DataLoader(Count()))",
    "default_collate directly": "from torch.utils.data import default_collate\nprint(default_collate([{'a': 1}, {'a': 2}]), "
                                "default_collate([torch.tensor([1]), torch.tensor([2])]))",
    # ---- training loops -------------------------------------------------------------------------------
    **{f"train with {opt}": _TRAIN.format(opt=opt)
       for opt in _OPTIMIZERS},
    **{f"schedule {sched.split('(')[0]}": _SCHEDULE.format(sched=sched) for sched in _SCHEDULERS},
    **{f"optimizer state_dict of {opt}": _OPTIMIZER_STATE.format(opt=opt) for opt in _OPTIMIZERS},
    **{f"scheduler state_dict of {sched.split('(')[0]}": _SCHEDULER_STATE.format(sched=sched) for sched in _SCHEDULERS
       if "lambda" not in sched},
    "classification loop": "torch.manual_seed(0)\nx = torch.randn(32, 4)\ny = (x[:, 0] > 0).long()\n"
                           "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"
                           "opt = torch.optim.SGD(model.parameters(), lr=0.5)\nloss_fn = nn.CrossEntropyLoss()\n"
                           "dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=True)\n"
                           "for epoch in range(3):\n    total = 0.\n    for xb, yb in dl:\n        opt.zero_grad()\n"
                           "        loss = loss_fn(model(xb), yb)\n        loss.backward()\n        opt.step()\n        total += loss.item()\n"
                           "    print(epoch, round(total / len(dl), 4))\n"
                           "with torch.no_grad():\n    acc = (model(x).argmax(1) == y).float().mean()\nprint(f'accuracy {acc:.4f}', acc)",
    "sequential scheduler and chained": "o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0)\nS = torch.optim.lr_scheduler\n"
                                        "s = S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)], milestones=[2])\n"
                                        "for _ in range(4):\n    o.step()\n    s.step()\n    print(round(o.param_groups[0]['lr'], 6))",
    "scheduler step before optimizer warning": "warnings.simplefilter('always')\nwith warnings.catch_warnings(record=True) as w:\n"
                                               "    o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0)\n"
                                               "    s = torch.optim.lr_scheduler.StepLR(o, 1)\n    s.step()\n"
                                               "print([str(x.message)[:70] for x in w])",
    "optimizer param group options": "p1, p2 = nn.Parameter(torch.ones(1)), nn.Parameter(torch.ones(1))\n"
                                     "o = torch.optim.SGD([{'params': [p1]}, {'params': [p2], 'lr': 0.01}], lr=0.1, momentum=0.9)\n"
                                     "print([(g['lr'], g['momentum']) for g in o.param_groups])",
    "optimizer duplicate params": "p = nn.Parameter(torch.ones(1))\ntorch.optim.SGD([{'params': [p]}, {'params': [p]}], lr=0.1)",
    "optimizer non-leaf param": "x = torch.ones(1, requires_grad=True)\ntorch.optim.SGD([x * 2], lr=0.1)",
    "optimizer unknown option ignored": "torch.optim.Adam([nn.Parameter(torch.ones(1))], lr=0.1, betas=(1.5, 0.9))",
    "optimizer lr missing for SGD": "print(torch.optim.SGD([nn.Parameter(torch.ones(1))]).param_groups[0]['lr'])",
    "optimizer nesterov without momentum": "torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, nesterov=True)",
    "backward twice": "x = torch.ones(1, requires_grad=True)\ny = (x * x).sum()\ny.backward()\ny.backward()",
    "backward non-scalar": "x = torch.ones(2, requires_grad=True)\n(x * 2).backward()",
    "backward without grad": "torch.ones(2).sum().backward()",
    "backward with gradient argument": "x = torch.ones(2, requires_grad=True)\n(x * 2).backward(torch.tensor([1., 0.5]))\nprint(x.grad)",
    "backward with wrong gradient shape": "x = torch.ones(2, requires_grad=True)\n(x * 2).backward(torch.ones(3))",
    "retain_graph then backward": "x = torch.ones(1, requires_grad=True)\ny = (x.exp()).sum()\ny.backward(retain_graph=True)\ny.backward()\nprint(x.grad)",
    # ---- initialisation --------------------------------------------------------------------------------
    "init seeded functions": "torch.manual_seed(0)\nw = torch.empty(3, 4)\nfor f in (nn.init.uniform_, nn.init.normal_, nn.init.xavier_uniform_, "
                             "nn.init.xavier_normal_, nn.init.kaiming_uniform_, nn.init.kaiming_normal_, nn.init.trunc_normal_, "
                             "nn.init.orthogonal_):\n    print(f.__name__, f(w))",
    "init with arguments": "torch.manual_seed(1)\nw = torch.empty(2, 5)\nprint(nn.init.uniform_(w, -0.1, 0.1), nn.init.normal_(w, 1., 0.01), "
                           "nn.init.kaiming_uniform_(w, a=5 ** 0.5), nn.init.kaiming_normal_(w, mode='fan_out', nonlinearity='relu'), "
                           "nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain('tanh')), nn.init.trunc_normal_(w, std=0.02, a=-0.04, b=0.04))",
    "init deterministic": "w = torch.empty(2, 3)\nprint(nn.init.ones_(w), nn.init.zeros_(w), nn.init.constant_(w, 0.3), "
                          "nn.init.eye_(torch.empty(2, 3)), nn.init.dirac_(torch.empty(2, 1, 3)))",
    "init sparse": "torch.manual_seed(0)\nprint(nn.init.sparse_(torch.empty(4, 2), sparsity=0.5))",
    "init gains": "print([nn.init.calculate_gain(n) for n in ('linear', 'conv2d', 'sigmoid', 'tanh', 'relu', 'selu')], "
                  "nn.init.calculate_gain('leaky_relu', 0.2))",
    "init gain unknown": "nn.init.calculate_gain('swish')",
    "init fan of 1-d": "nn.init.xavier_uniform_(torch.empty(3))",
    "init kaiming bad mode": "nn.init.kaiming_uniform_(torch.empty(2, 2), mode='fan')",
    "init orthogonal of 1-d": "nn.init.orthogonal_(torch.empty(3))",
    "default layer init seeded": "torch.manual_seed(0)\nprint(nn.Linear(3, 2).weight, nn.Conv2d(1, 1, 2).weight, nn.Embedding(2, 3).weight, "
                                 "nn.LayerNorm(2).weight, nn.BatchNorm1d(2).running_var)",
    "default recurrent init seeded": "torch.manual_seed(0)\nprint(nn.LSTM(2, 2).weight_hh_l0, nn.GRU(1, 1).bias_ih_l0, nn.MultiheadAttention(2, 1).in_proj_weight)",
    "init under no_grad keeps leaf": "m = nn.Linear(2, 2)\nnn.init.zeros_(m.weight)\nprint(m.weight.is_leaf, m.weight.grad_fn, m.weight.requires_grad)",
    # ---- common layer errors -----------------------------------------------------------------------------
    "linear wrong input features": "nn.Linear(3, 2)(torch.ones(4, 5))",
    "linear 1-d wrong size": "nn.Linear(3, 2)(torch.ones(4))",
    "linear 0-d input": "nn.Linear(3, 2)(torch.tensor(1.))",
    "linear integer input": "nn.Linear(2, 1)(torch.ones(1, 2, dtype=torch.long))",
    "linear float64 input": "nn.Linear(2, 1)(torch.ones(1, 2, dtype=torch.float64))",
    "conv2d 3-d unbatched": "print(nn.Conv2d(1, 2, 3)(torch.ones(1, 5, 5)).shape)",
    "conv2d 5-d input": "nn.Conv2d(1, 1, 3)(torch.ones(1, 1, 1, 5, 5))",
    "conv2d wrong channels unbatched": "nn.Conv2d(3, 1, 3)(torch.ones(1, 5, 5))",
    "conv2d channels last by mistake": "nn.Conv2d(3, 8, 3)(torch.ones(1, 32, 32, 3))",
    "conv2d kernel bigger than padded input": "nn.Conv2d(1, 1, 5, padding=1)(torch.ones(1, 1, 2, 2))",
    "conv2d bad groups": "nn.Conv2d(4, 6, 3, groups=4)",
    "conv2d padding same with stride": "nn.Conv2d(1, 1, 3, stride=2, padding='same')",
    "conv2d padding same": "print(nn.Conv2d(1, 1, 3, padding='same')(torch.ones(1, 1, 4, 4)).shape, nn.Conv2d(1, 1, 3, padding='same'))",
    "conv1d wrong rank": "nn.Conv1d(1, 1, 3)(torch.ones(1, 1, 5, 5))",
    "conv2d float64 input": "nn.Conv2d(1, 1, 1)(torch.ones(1, 1, 2, 2, dtype=torch.float64))",
    "maxpool too small": "nn.MaxPool2d(3)(torch.ones(1, 1, 2, 2))",
    "maxpool wrong rank": "nn.MaxPool2d(2)(torch.ones(4))",
    "batchnorm wrong channels": "nn.BatchNorm2d(3)(torch.ones(2, 4, 2, 2))",
    "batchnorm1d wrong rank": "nn.BatchNorm1d(3)(torch.ones(2, 3, 4, 4))",
    "batchnorm2d wrong rank": "nn.BatchNorm2d(3)(torch.ones(2, 3))",
    "layernorm wrong shape": "nn.LayerNorm(4)(torch.ones(2, 3))",
    "embedding negative index": "nn.Embedding(3, 2)(torch.tensor([-1]))",
    "lstm wrong input size": "nn.LSTM(4, 2)(torch.ones(3, 1, 5))",
    "lstm wrong rank": "nn.LSTM(4, 2)(torch.ones(4))",
    "cross_entropy wrong class index": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 3]))",
    "cross_entropy batch mismatch": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1, 2]))",
    "cross_entropy target as float 1-d": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0., 1.]))",
    "mse_loss broadcasting mismatch": "F.mse_loss(torch.ones(2, 3), torch.ones(4))",
    "bce with logits shape mismatch": "F.binary_cross_entropy_with_logits(torch.ones(2), torch.ones(3))",
    "bce with integer target": "F.binary_cross_entropy(torch.full((2,), 0.5), torch.tensor([1, 0]))",
    "sequential called with two args": "nn.Sequential(nn.Linear(1, 1))(torch.ones(1), torch.ones(1))",
    "forward with wrong arg count": "nn.Linear(1, 1)()",
    "dropout bad p": "nn.Dropout(1.5)",
    "linear negative features": "nn.Linear(-1, 2)",
    "flatten then linear shapes": "m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(8, 1))\nm(torch.ones(1, 1, 4, 4))",
    "softmax on integer": "torch.tensor([1, 2]).softmax(0)",
    "relu on bool": "torch.relu(torch.tensor([True]))",
    "sigmoid on integer": "print(torch.sigmoid(torch.tensor([0, 1])), torch.exp(torch.tensor([0, 1])), torch.tensor([4]).sqrt())",
    # ---- third pass: more random streams, printing corners, module and tensor everyday calls ----------------
    "random large sizes": "torch.manual_seed(0)\nprint(torch.rand(20)[-3:], torch.randn(33)[-3:], torch.randint(0, 1000, (40,))[-4:], "
                          "torch.randperm(50)[:6], torch.randn(17, dtype=torch.float64)[-2:])",
    "random in-place samplers": "torch.manual_seed(0)\nx = torch.empty(20)\nprint(x.exponential_(2.)[:3], x.geometric_(0.3)[:3], "
                                "x.cauchy_()[:3], x.log_normal_()[:3], x.random_(0, 10)[:5], x.random_()[:2], x.uniform_()[-2:])",
    "random integer in-place": "torch.manual_seed(0)\nprint(torch.empty(5, dtype=torch.int64).random_(0, 100), "
                               "torch.empty(5, dtype=torch.int8).random_(), torch.empty(3, dtype=torch.bool).random_())",
    "poisson and normal tensor": "torch.manual_seed(0)\nprint(torch.poisson(torch.full((5,), 3.)), torch.normal(torch.zeros(20), 2.)[-3:])",
    "randn_like and randint_like seeded": "torch.manual_seed(0)\nx = torch.zeros(2, 2)\nprint(torch.randn_like(x), torch.randint_like(x, 10), "
                                          "torch.rand_like(x, dtype=torch.float64))",
    "generator states": "g = torch.Generator()\ng.manual_seed(3)\ns = g.get_state()\na = torch.randn(2, generator=g)\ng.set_state(s)\n"
                        "print(torch.equal(a, torch.randn(2, generator=g)), g.initial_seed(), torch.Generator().manual_seed(5).initial_seed())",
    "fork_rng": "torch.manual_seed(0)\nwith torch.random.fork_rng():\n    a = torch.rand(2)\nprint(a, torch.rand(2))",
    "seed after seed()": "torch.manual_seed(9)\nprint(torch.initial_seed(), torch.rand(1))",
    "shuffle with generator": "g = torch.Generator().manual_seed(1)\ndl = torch.utils.data.DataLoader(torch.arange(8), batch_size=4, shuffle=True, generator=g)\n"
                              "print([b.tolist() for b in dl], [b.tolist() for b in dl])",
    "print float64 scientific": "print(torch.tensor([1e-12, 1.0], dtype=torch.float64), torch.tensor([123456789.123], dtype=torch.float64))",
    "print float64 many digits": "print(torch.tensor([3.141592653589793, 2.718281828459045], dtype=torch.float64))",
    "print half summarised": "print(torch.arange(1200).half())",
    "print complex summarised": "print(torch.arange(1200.).to(torch.complex64))",
    "print int8 summarised": "print(torch.arange(1100, dtype=torch.int16))",
    "print bool summarised": "print(torch.ones(1001, dtype=torch.bool))",
    "print 2-d summarised columns": "print(torch.arange(2000.).reshape(2, 1000))",
    "print 2-d summarised rows": "print(torch.arange(2000.).reshape(1000, 2))",
    "print sci with nan": "print(torch.tensor([1e-9, float('nan'), 1e9]), torch.tensor([float('nan'), 1e-9]))",
    "print negative whole floats": "print(torch.tensor([-1., -20., 300.]), torch.tensor([-0.5]), torch.tensor([[-1.], [10.]]))",
    "print large whole floats": "print(torch.tensor([1e8, 1.]), torch.tensor([1e9]), torch.tensor([123456789.]))",
    "print small floats": "print(torch.tensor([0.0001]), torch.tensor([0.00001]), torch.tensor([1e-4, 1.0]))",
    "print float with grad and dtype": "print(torch.ones(2, dtype=torch.float64, requires_grad=True) * 2, "
                                       "torch.ones(2, dtype=torch.float16, requires_grad=True).sum())",
    "print view grad_fn": "x = torch.ones(2, 2, requires_grad=True)\nprint(x.view(4).grad_fn, x.t().grad_fn, x[0].grad_fn, x.expand(3, 2, 2).grad_fn, "
                          "x.unsqueeze(0).grad_fn, x.permute(1, 0).grad_fn, x.reshape(4).grad_fn, x.flatten().grad_fn)",
    "print grad_fn of ops": "x = torch.ones(2, requires_grad=True)\nfor y in (x.sin(), x.log(), x.sqrt(), x.abs(), x / 2, 2 / x, x - 1, 1 - x, -x, "
                            "x ** 2, 2 ** x, x.max(), x.norm(), x.clamp(0, 1), F.softplus(x), F.gelu(x), F.silu(x), x.cumsum(0)):\n"
                            "    print(y.grad_fn.name())",
    "print tensor subclass-like param in list": "m = nn.Linear(1, 1)\nnn.init.ones_(m.weight)\nnn.init.zeros_(m.bias)\nprint(list(m.parameters()))",
    "print module with parameter attribute": "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                             "        self.scale = nn.Parameter(torch.ones(1))\n        self.fc = nn.Linear(1, 1)\nprint(M(), len(list(M().parameters())))",
    "print sliced Sequential": "m = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1))\nprint(m[1:], m[-1], len(m), type(m[0:2]).__name__)",
    "print ModuleDict nested": "print(nn.ModuleDict({'enc': nn.Sequential(nn.Linear(2, 2)), 'act': nn.ModuleDict({'r': nn.ReLU()})}))",
    "print model after to double": "m = nn.Linear(2, 1).double()\nprint(m, m.weight.dtype, m(torch.ones(1, 2, dtype=torch.float64)).dtype)",
    "print model summary loop": "m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(36, 2))\n"
                                "for name, p in m.named_parameters():\n    print(name, tuple(p.shape), p.numel(), p.requires_grad)\n"
                                "print(m(torch.zeros(1, 1, 5, 5)).shape)",
    "print model state_dict shapes": "m = nn.Sequential(nn.BatchNorm2d(2), nn.LSTM(2, 3))\nprint({k: tuple(v.shape) for k, v in m.state_dict().items()})",
    "freeze parameters": "m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))\nfor p in m[0].parameters():\n    p.requires_grad = False\n"
                         "print([p.requires_grad for p in m.parameters()], sum(p.numel() for p in m.parameters() if p.requires_grad))\n"
                         "m(torch.ones(1, 2)).sum().backward()\nprint(m[0].weight.grad, m[1].bias.grad)",
    "zero_grad set_to_none False": "m = nn.Linear(1, 1)\nm(torch.ones(1, 1)).sum().backward()\nm.zero_grad(set_to_none=False)\nprint(m.weight.grad, m.bias.grad)",
    "optimizer state after Adam steps": "torch.manual_seed(0)\np = nn.Parameter(torch.ones(2))\no = torch.optim.Adam([p], lr=0.1)\nfor _ in range(2):\n"
                                        "    o.zero_grad()\n    (p * torch.tensor([1., -2.])).sum().backward()\n    o.step()\n"
                                        "print(p, o.state[p]['step'], o.state[p]['exp_avg'], o.state[p]['exp_avg_sq'])",
    "optimizer print state_dict after step": "p = nn.Parameter(torch.ones(2))\no = torch.optim.Adam([p], lr=0.1)\np.grad = torch.ones(2)\no.step()\nprint(o.state_dict())",
    "Tensor.to forms": "x = torch.ones(2)\nprint(x.to(torch.float64).dtype, x.to(torch.zeros(1, dtype=torch.int32)).dtype, x.to('cpu', torch.int64).dtype, "
                       "x.to(dtype=torch.float16).dtype, x.to(x) is x, x.to(torch.float32) is x, x.type_as(torch.zeros(1, dtype=torch.int8)).dtype)",
    "Tensor.type forms": "x = torch.ones(2)\nprint(x.type(), x.type(torch.DoubleTensor).type(), x.type('torch.IntTensor'), x.double().type(torch.float32).dtype)",
    "Tensor.type bad name": "torch.ones(1).type('torch.NoSuchTensor')",
    "Tensor new forms": "x = torch.ones(2, dtype=torch.float64)\nprint(x.new_tensor([1, 2]), x.new_zeros((2, 1)), x.new_ones(2, dtype=torch.int32), x.new(2).shape, x.new([3.]))",
    "is_floating_point and friends": "print(torch.ones(1).is_floating_point(), torch.ones(1, dtype=torch.long).is_floating_point(), "
                                     "torch.is_tensor(1), torch.is_tensor(torch.ones(1)), torch.is_floating_point(torch.ones(1, dtype=torch.bool)), "
                                     "torch.numel(torch.ones(2, 3)), torch.is_complex(torch.ones(1, dtype=torch.complex64)), torch.ones(1).is_signed())",
    "dtype methods": "print(torch.float32.to_complex(), torch.complex128.to_real(), torch.int8.is_signed, torch.uint8.is_signed, "
                     "torch.bfloat16.is_floating_point, torch.float16.itemsize, torch.bool.itemsize, torch.float64 == torch.double)",
    "Size errors and ops": "s = torch.Size([2, 3, 4])\nprint(s.numel(), s[1:], s.count(3), s.index(4), s + torch.Size([5]), torch.Size([2]) * 2, hash(s) == hash((2, 3, 4)))",
    "Size from floats": "torch.Size([2.0])",
    "equal allclose isclose corners": "a = torch.tensor([1., float('nan')])\nprint(torch.equal(a, a), torch.allclose(a, a), torch.allclose(a, a, equal_nan=True), "
                                      "torch.isclose(a, a), torch.equal(torch.ones(2), torch.ones(2, dtype=torch.int64)), torch.equal(torch.ones(2), torch.ones(3)))",
    "allclose dtype mismatch": "torch.allclose(torch.ones(2), torch.ones(2, dtype=torch.float64))",
    "detach_ and requires_grad_": "x = torch.ones(2, requires_grad=True)\ny = x * 2\ny.detach_()\nprint(y.requires_grad, y.grad_fn, y.is_leaf, x.requires_grad_(False).requires_grad)",
    "inplace on detached shares": "x = torch.ones(2, requires_grad=True)\nd = x.detach()\nd.zero_()\nprint(x)",
    "backward through modified detached": "x = torch.ones(2, requires_grad=True)\ny = x.exp()\ny.detach().zero_()\ny.sum().backward()",
    "torch.no_grad and requires_grad_": "with torch.no_grad():\n    x = torch.ones(2, requires_grad=True)\n    y = x * 2\nprint(x.requires_grad, y.requires_grad)",
    "set_grad_enabled function": "torch.set_grad_enabled(False)\nx = torch.ones(1, requires_grad=True)\nprint((x * 2).requires_grad)\n"
                                 "torch.set_grad_enabled(True)\nprint((x * 2).requires_grad)",
    "max of empty tensor": "torch.tensor([]).max()",
    "T on 3-d": "warnings.simplefilter('always')\nwith warnings.catch_warnings(record=True) as w:\n    print(torch.ones(2, 3, 4).T.shape)\n"
                "print([str(x.message)[:60] for x in w])",
    "numpy T vs mT": "x = torch.ones(2, 3, 4)\nprint(x.mT.shape, x.transpose(-2, -1).shape, x.permute(2, 1, 0).shape)",
    "view -1 on non-contiguous": "torch.ones(2, 3).t().view(-1)",
    "contiguous then view": "print(torch.arange(6).reshape(2, 3).t().contiguous().view(-1))",
    "flatten unflatten": "x = torch.arange(24).reshape(2, 3, 4)\nprint(x.flatten(1).shape, x.flatten(0, 1).shape, x.unflatten(2, (2, 2)).shape, "
                         "nn.Flatten()(x).shape, nn.Unflatten(1, (3, 1))(torch.ones(2, 3)).shape)",
    "squeeze and unsqueeze chains": "x = torch.zeros(1, 3, 1, 2)\nprint(x.squeeze().shape, x.squeeze(2).shape, x.squeeze(-1).shape, x.unsqueeze(-1).shape, x[None, :, None].shape)",
    "stack cat hstack vstack": "a, b = torch.tensor([1, 2]), torch.tensor([3, 4])\nprint(torch.hstack([a, b]), torch.vstack([a, b]), torch.dstack([a, b]).shape, "
                               "torch.column_stack([a, b]), torch.row_stack([a, b]).shape)",
    "split chunk unbind": "x = torch.arange(10)\nprint(x.split([3, 7]), x.chunk(3), x.reshape(2, 5).unbind(), torch.tensor_split(x, 3))",
    "sort stable and topk largest": "x = torch.tensor([2, 1, 2, 1, 3])\nprint(x.sort(stable=True), x.topk(2, largest=False), x.argsort(descending=True), x.kthvalue(2))",
    "unique options": "x = torch.tensor([3, 1, 3, 2, 1])\nprint(x.unique(sorted=True, return_inverse=True), torch.unique_consecutive(x), "
                      "torch.unique(torch.tensor([[1, 2], [1, 2]]), dim=0))",
    "clamp with tensors and errors": "x = torch.arange(4.)\nprint(x.clamp(min=torch.tensor([1., 1., 1., 1.])), x.clamp(max=2), torch.clip(x, 1, 2))",
    "clamp without bounds": "torch.arange(4.).clamp()",
    "math functions": "x = torch.tensor([0.5, 2.])\nprint(x.exp(), x.log(), x.log2(), x.log10(), x.sqrt(), x.rsqrt(), x.sin(), x.cos(), x.tanh(), x.sigmoid(), "
                      "x.erf(), x.reciprocal(), x.pow(3), x.exp2(), x.expm1(), x.log1p(), torch.atan2(x, x + 1))",
    "rounding functions": "x = torch.tensor([-2.5, -0.5, 0.5, 1.5, 2.567])\nprint(x.round(), x.round(decimals=1), x.trunc(), x.frac(), x.fix(), "
                          "torch.floor_divide(x, 2), torch.remainder(x, 2), torch.fmod(x, 2))",
    "integer math": "a = torch.tensor([-7, 7])\nprint(a // 2, a % 3, a.abs(), a.neg(), a.pow(2), a * a, torch.div(a, 2), a.sign(), a.float().sqrt())",
    "bitwise and logical": "a, b = torch.tensor([1, 2, 3]), torch.tensor([3, 2, 1])\nprint(a & b, a | b, a ^ b, ~a, a << 1, a >> 1, "
                           "torch.logical_and(a > 1, b > 1), torch.logical_not(a > 1), (a > 1) | (b > 2))",
    "bitwise on floats": "torch.tensor([1.]) & torch.tensor([1.])",
    "comparisons return bool": "a = torch.tensor([1., 2., 3.])\nprint(a > 2, a >= 2, a < 2, a == 2, a != 2, torch.gt(a, 2), a.eq(torch.tensor([1., 0., 3.])), "
                               "torch.maximum(a, torch.tensor(2.)), torch.minimum(a, torch.tensor([0., 5., 0.])))",
    "lerp addcmul addcdiv": "a = torch.zeros(2)\nb = torch.ones(2)\nprint(torch.lerp(a, b, 0.3), torch.addcmul(a, b, b, value=2), torch.addcdiv(a, b, b + 1), "
                            "torch.addmm(torch.zeros(2, 2), torch.eye(2), torch.ones(2, 2), beta=0.5, alpha=2))",
    "outer cross kron": "a = torch.tensor([1., 2., 3.])\nprint(torch.outer(a, a), torch.cross(a, a.flip(0), dim=0), torch.kron(torch.eye(2), torch.ones(1, 2)))",
    "einsum forms": "a = torch.arange(6.).reshape(2, 3)\nprint(torch.einsum('ij->ji', a), torch.einsum('ij,ij->', a, a), torch.einsum('i,j->ij', a[0], a[1]), "
                    "torch.einsum('ii->i', torch.eye(2)), torch.einsum('bi,bi->b', a, a))",
    "einsum bad equation": "torch.einsum('ij,jk->ik', torch.ones(2, 3), torch.ones(2, 3))",
    "linalg basics": "a = torch.tensor([[2., 1.], [1., 3.]])\nprint(torch.linalg.inv(a), torch.linalg.det(a), torch.linalg.solve(a, torch.ones(2)), "
                     "torch.linalg.eigh(a).eigenvalues, torch.linalg.norm(a, 'fro'), torch.linalg.matrix_rank(a), torch.trace(a))",
    "linalg singular": "torch.linalg.inv(torch.ones(2, 2))",
    "linalg non-square": "torch.linalg.det(torch.ones(2, 3))",
    "cholesky not positive definite": "torch.linalg.cholesky(torch.tensor([[1., 2.], [2., 1.]]))",
    "softmax family": "x = torch.tensor([[1., 2., 3.]])\nprint(F.softmax(x, dim=1), F.log_softmax(x, 1), F.softmin(x, 1), torch.softmax(x, -1, dtype=torch.float64))",
    "activation values": "x = torch.linspace(-2, 2, 5)\nfor f in (F.relu, F.relu6, F.elu, F.selu, F.celu, F.leaky_relu, F.gelu, F.silu, F.mish, F.softplus, "
                         "F.softsign, F.hardtanh, F.hardswish, F.hardsigmoid, F.tanhshrink, F.logsigmoid, torch.tanh, torch.sigmoid):\n"
                         "    print(f.__name__, f(x))",
    "losses values": "torch.manual_seed(0)\nx, y = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])\nprint(F.cross_entropy(x, y), F.nll_loss(F.log_softmax(x, 1), y), "
                     "F.mse_loss(x, x * 0), F.l1_loss(x, x * 0), F.smooth_l1_loss(x, x * 0), F.huber_loss(x, x * 0, delta=0.5), "
                     "F.binary_cross_entropy_with_logits(x, (x > 0).float()), F.kl_div(F.log_softmax(x, 1), F.softmax(x * 2, 1), reduction='batchmean'), "
                     "F.cross_entropy(x, y, label_smoothing=0.1), F.cross_entropy(x, y, reduction='none'), F.cross_entropy(x, F.softmax(x, 1)))",
    "loss modules reductions": "x, y = torch.tensor([[1., 2.]]), torch.tensor([[0., 4.]])\nprint(nn.MSELoss()(x, y), nn.MSELoss(reduction='sum')(x, y), "
                               "nn.MSELoss(reduction='none')(x, y), nn.L1Loss()(x, y))",
    "loss bad reduction": "nn.MSELoss(reduction='avg')(torch.ones(1), torch.ones(1))",
    "cross_entropy ignore_index and weight": "x = torch.tensor([[1., 2., 3.], [1., 0., 0.]])\nprint(F.cross_entropy(x, torch.tensor([2, -100])), "
                                             "F.cross_entropy(x, torch.tensor([0, 1]), weight=torch.tensor([1., 2., 3.])), F.cross_entropy(x, torch.tensor([0, 1]), ignore_index=1))",
    "cross_entropy 3-d input": "print(F.cross_entropy(torch.zeros(2, 3, 4), torch.zeros(2, 4, dtype=torch.long)))",
    "layers forward values": "torch.manual_seed(0)\nx = torch.randn(1, 2, 4, 4)\nprint(nn.Conv2d(2, 1, 3)(x), nn.MaxPool2d(2)(x), nn.AvgPool2d(2)(x).shape, nn.BatchNorm2d(2)(x).mean(), "
                              "nn.GroupNorm(1, 2)(x).std(), nn.LayerNorm(4)(x)[0, 0, 0], nn.Upsample(scale_factor=2)(x).shape)",
    "rnn forward shapes": "torch.manual_seed(0)\nrnn = nn.LSTM(3, 4, batch_first=True)\nout, (h, c) = rnn(torch.randn(2, 5, 3))\nprint(out.shape, h.shape, c.shape, out[0, -1])\n"
                          "gru = nn.GRU(3, 2, num_layers=2)\nout, h = gru(torch.randn(5, 1, 3))\nprint(out.shape, h.shape)",
    "embedding forward": "torch.manual_seed(0)\ne = nn.Embedding(5, 2, padding_idx=0)\nprint(e(torch.tensor([[0, 1], [4, 4]])), e.weight[0])",
    "transformer encoder forward": "torch.manual_seed(0)\nlayer = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, batch_first=True)\n"
                                   "enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)\nprint(enc(torch.randn(1, 3, 4)))",
    "multihead attention forward": "torch.manual_seed(0)\nmha = nn.MultiheadAttention(4, 2, batch_first=True)\nx = torch.randn(1, 3, 4)\nout, w = mha(x, x, x)\nprint(out, w)",
    "dropout modes": "torch.manual_seed(0)\nd = nn.Dropout(0.5)\nx = torch.ones(6)\nprint(d(x), d.eval()(x), F.dropout(x, 0.5, training=False), nn.Dropout(0.)(x))",
    "batchnorm running stats": "torch.manual_seed(0)\nbn = nn.BatchNorm1d(2)\nfor _ in range(3):\n    bn(torch.randn(4, 2))\nprint(bn.running_mean, bn.running_var, bn.num_batches_tracked)\n"
                               "bn.eval()\nprint(bn(torch.ones(1, 2)))",
    "train eval flags nested": "m = nn.Sequential(nn.Dropout(), nn.Sequential(nn.BatchNorm1d(1)))\nm.eval()\nprint([x.training for x in m.modules()])\nm.train()\n"
                               "print([x.training for x in m.modules()])",
    "hooks everyday": "m = nn.Linear(2, 1)\nh = m.register_forward_hook(lambda mod, inp, out: print('hook', type(mod).__name__, inp[0].shape, out.shape))\n"
                      "m(torch.ones(3, 2))\nh.remove()\nm(torch.ones(3, 2))\nprint(type(h).__name__)",
    "tensor hook": "x = torch.ones(2, requires_grad=True)\nx.register_hook(lambda g: print('grad', g))\n(x * 3).sum().backward()\nprint(x.grad)",
    "torch.save of tensor dtype kept": _SAVE + "torch.save(torch.arange(3, dtype=torch.int16), path)\nt = torch.load(path)\nprint(t, t.dtype)",
    "checkpoint dict idiom": _SAVE + "torch.manual_seed(0)\nmodel = nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n"
                                     "model(torch.ones(1, 2)).sum().backward()\nopt.step()\n"
                                     "torch.save({'epoch': 1, 'model_state_dict': model.state_dict(), 'optimizer_state_dict': opt.state_dict(), 'loss': 0.5}, path)\n"
                                     "ck = torch.load(path)\nm2 = nn.Linear(2, 1)\no2 = torch.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)\n"
                                     "m2.load_state_dict(ck['model_state_dict'])\no2.load_state_dict(ck['optimizer_state_dict'])\n"
                                     "print(ck['epoch'], ck['loss'], m2.weight, o2.state_dict()['state'])",
    "load_state_dict strict false report": "m = nn.Sequential(nn.Linear(2, 2))\nr = m.load_state_dict({'0.weight': torch.ones(2, 2), 'x': torch.ones(1)}, strict=False)\n"
                                           "print(r, r.missing_keys, r.unexpected_keys)",
    "save with pathlib": "import tempfile, pathlib\np = pathlib.Path(tempfile.mkdtemp()) / 'x.pt'\ntorch.save([1, torch.ones(1)], p)\nprint(torch.load(p))",
    "load weights_only with numpy inside": _SAVE + "import numpy as np\ntorch.save({'a': np.ones(2)}, path)\ntorch.load(path)",
    "print Parameter repr with grad_fn free": "p = nn.Parameter(torch.arange(3.))\nprint(repr(p), str(p * 1), p.data, p.detach())",
    "print printoptions context": "with torch._tensor_str.printoptions(precision=1):\n    print(torch.tensor([1.25, 3.14159]))\nprint(torch.tensor([1.25, 3.14159]))",
    "print PRINT_OPTS after set": "torch.set_printoptions(precision=3, linewidth=60)\nprint(torch._tensor_str.PRINT_OPTS)\ntorch.set_printoptions(profile='default')",
    "in-place partial overlap views": "x = torch.arange(6.)\nx[:3].copy_(x[3:])\nprint(x)\nx[1:4].copy_(x[2:5])",
    # ---- fourth pass: the official tutorials, line by line ---------------------------------------------
    "blitz tensors": "torch.manual_seed(0)\ndata = [[1, 2], [3, 4]]\nx_data = torch.tensor(data)\nimport numpy as np\nnp_array = np.array(data)\n"
                     "x_np = torch.from_numpy(np_array)\nx_ones = torch.ones_like(x_data)\nprint(f'Ones Tensor: \\n {x_ones} \\n')\n"
                     "x_rand = torch.rand_like(x_data, dtype=torch.float)\nprint(f'Random Tensor: \\n {x_rand} \\n')\nshape = (2, 3,)\n"
                     "print(torch.rand(shape), torch.ones(shape), torch.zeros(shape))\ntensor = torch.rand(3, 4)\n"
                     "print(f'Shape of tensor: {tensor.shape}')\nprint(f'Datatype of tensor: {tensor.dtype}')\nprint(f'Device tensor is stored on: {tensor.device}')",
    "blitz operations": "tensor = torch.ones(4, 4)\nprint(f'First row: {tensor[0]}')\nprint(f'First column: {tensor[:, 0]}')\nprint(f'Last column: {tensor[..., -1]}')\n"
                        "tensor[:, 1] = 0\nprint(tensor)\nt1 = torch.cat([tensor, tensor, tensor], dim=1)\nprint(t1)\ny1 = tensor @ tensor.T\ny2 = tensor.matmul(tensor.T)\n"
                        "y3 = torch.rand_like(y1)\ntorch.matmul(tensor, tensor.T, out=y3)\nz1 = tensor * tensor\nz3 = torch.rand_like(tensor)\ntorch.mul(tensor, tensor, out=z3)\n"
                        "print(y1, y3, z1, z3)\nagg = tensor.sum()\nagg_item = agg.item()\nprint(agg_item, type(agg_item))\nprint(f'{tensor} \\n')\ntensor.add_(5)\nprint(tensor)",
    "blitz numpy bridge": "t = torch.ones(5)\nprint(f't: {t}')\nn = t.numpy()\nprint(f'n: {n}')\nt.add_(1)\nprint(f't: {t}')\nprint(f'n: {n}')\n"
                          "import numpy as np\nn = np.ones(5)\nt = torch.from_numpy(n)\nnp.add(n, 1, out=n)\nprint(f't: {t}')\nprint(f'n: {n}')",
    "blitz autograd": "x = torch.ones(2, 2, requires_grad=True)\nprint(x)\ny = x + 2\nprint(y)\nprint(y.grad_fn)\nz = y * y * 3\nout = z.mean()\nprint(z, out)\n"
                      "a = torch.randn(2, 2)\na = ((a * 3) / (a - 1))\nprint(a.requires_grad)\na.requires_grad_(True)\nprint(a.requires_grad)\nb = (a * a).sum()\n"
                      "print(b.grad_fn)\nout.backward()\nprint(x.grad)",
    "blitz vector-Jacobian": "torch.manual_seed(0)\nx = torch.randn(3, requires_grad=True)\ny = x * 2\nwhile y.data.norm() < 1000:\n    y = y * 2\nprint(y)\n"
                             "v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)\ny.backward(v)\nprint(x.grad)\nprint(x.requires_grad)\n"
                             "print((x ** 2).requires_grad)\nwith torch.no_grad():\n    print((x ** 2).requires_grad)\ny = x.detach()\nprint(y.requires_grad)\n"
                             "print(x.eq(y).all())",
    "blitz autograd gradients": "import torch\na = torch.tensor([2., 3.], requires_grad=True)\nb = torch.tensor([6., 4.], requires_grad=True)\nQ = 3*a**3 - b**2\n"
                                "external_grad = torch.tensor([1., 1.])\nQ.backward(gradient=external_grad)\nprint(9*a**2 == a.grad)\nprint(-2*b == b.grad)\n"
                                "x = torch.rand(5, 5)\ny = torch.rand(5, 5)\nz = torch.rand((5, 5), requires_grad=True)\na = x + y\n"
                                "print(f'Does `a` require gradients?: {a.requires_grad}')\nb = x + z\nprint(f'Does `b` require gradients?: {b.requires_grad}')",
    "blitz neural network": "torch.manual_seed(0)\nclass Net(nn.Module):\n    def __init__(self):\n        super(Net, self).__init__()\n"
                            "        self.conv1 = nn.Conv2d(1, 6, 5)\n        self.conv2 = nn.Conv2d(6, 16, 5)\n        self.fc1 = nn.Linear(16 * 5 * 5, 120)\n"
                            "        self.fc2 = nn.Linear(120, 84)\n        self.fc3 = nn.Linear(84, 10)\n    def forward(self, input):\n"
                            "        c1 = F.relu(self.conv1(input))\n        s2 = F.max_pool2d(c1, (2, 2))\n        c3 = F.relu(self.conv2(s2))\n"
                            "        s4 = F.max_pool2d(c3, 2)\n        s4 = torch.flatten(s4, 1)\n        f5 = F.relu(self.fc1(s4))\n        f6 = F.relu(self.fc2(f5))\n"
                            "        output = self.fc3(f6)\n        return output\nnet = Net()\nprint(net)\nparams = list(net.parameters())\nprint(len(params))\n"
                            "print(params[0].size())\ninput = torch.randn(1, 1, 32, 32)\nout = net(input)\nprint(out)\nnet.zero_grad()\nout.backward(torch.randn(1, 10))\n"
                            "output = net(input)\ntarget = torch.randn(10)\ntarget = target.view(1, -1)\ncriterion = nn.MSELoss()\nloss = criterion(output, target)\n"
                            "print(loss)\nprint(loss.grad_fn)\nprint(loss.grad_fn.next_functions[0][0])\nprint(loss.grad_fn.next_functions[0][0].next_functions[0][0])\n"
                            "net.zero_grad()\nprint('conv1.bias.grad before backward')\nprint(net.conv1.bias.grad)\nloss.backward()\nprint('conv1.bias.grad after backward')\n"
                            "print(net.conv1.bias.grad)\nlearning_rate = 0.01\nfor f in net.parameters():\n    f.data.sub_(f.grad.data * learning_rate)\n"
                            "import torch.optim as optim\noptimizer = optim.SGD(net.parameters(), lr=0.01)\noptimizer.zero_grad()\noutput = net(input)\n"
                            "loss = criterion(output, target)\nloss.backward()\noptimizer.step()\nprint(loss)",
    "quickstart model and loop": "torch.manual_seed(0)\ndevice = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else 'cpu'\n"
                                 "print(f'Using {device} device')\nclass NeuralNetwork(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                 "        self.flatten = nn.Flatten()\n        self.linear_relu_stack = nn.Sequential(nn.Linear(4*4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))\n"
                                 "    def forward(self, x):\n        x = self.flatten(x)\n        logits = self.linear_relu_stack(x)\n        return logits\n"
                                 "model = NeuralNetwork().to(device)\nprint(model)\nX = torch.rand(20, 1, 4, 4)\ny = torch.randint(0, 3, (20,))\n"
                                 "dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=8)\nloss_fn = nn.CrossEntropyLoss()\n"
                                 "optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)\nsize = len(dl.dataset)\nmodel.train()\n"
                                 "for batch, (Xb, yb) in enumerate(dl):\n    Xb, yb = Xb.to(device), yb.to(device)\n    pred = model(Xb)\n    loss = loss_fn(pred, yb)\n"
                                 "    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n    loss, current = loss.item(), (batch + 1) * len(Xb)\n"
                                 "    print(f'loss: {loss:>7f}  [{current:>5d}/{size:>5d}]')\nmodel.eval()\ntest_loss, correct = 0, 0\nwith torch.no_grad():\n"
                                 "    for Xb, yb in dl:\n        pred = model(Xb)\n        test_loss += loss_fn(pred, yb).item()\n"
                                 "        correct += (pred.argmax(1) == yb).type(torch.float).sum().item()\n"
                                 "print(f'Test Error: \\n Accuracy: {(100*correct/size):>0.1f}%, Avg loss: {test_loss/len(dl):>8f} \\n')\n"
                                 "pred_probab = nn.Softmax(dim=1)(model(X[:1]))\nprint(pred_probab.argmax(1))\n"
                                 "for name, param in model.named_parameters():\n    print(f'Layer: {name} | Size: {param.size()} | Values : {param[:2]} \\n')",
    "tensor format specs": "t = torch.tensor(0.123456)\nprint(f'{t:>7f}', f'{t:.3e}', f'{t:10.2f}|', f'{torch.tensor(3):>5d}', f'{torch.tensor(2.5):g}', '{:.1%}'.format(torch.tensor(0.25)))",
    "tensor format empty spec": "print(f'{torch.tensor([1.5, 2.]):}', format(torch.tensor(1.5)), format(torch.ones(2), ''))",
    "tensor format spec int on float": "f'{torch.tensor(2.5):d}'",
    "save load tutorial": _SAVE + "torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(2, 2))\ntorch.save(model.state_dict(), path)\n"
                                  "model2 = nn.Sequential(nn.Linear(2, 2))\nprint(model2.load_state_dict(torch.load(path, weights_only=True)))\nmodel2.eval()\n"
                                  "torch.save(model, path)\nm3 = torch.load(path, weights_only=False)\nprint(m3, torch.equal(m3[0].weight, model[0].weight))",
    "datasets tutorial custom": "class CustomDataset(torch.utils.data.Dataset):\n    def __init__(self, n, transform=None, target_transform=None):\n"
                                "        self.n, self.transform, self.target_transform = n, transform, target_transform\n    def __len__(self):\n        return self.n\n"
                                "    def __getitem__(self, idx):\n        x, y = torch.full((2,), float(idx)), idx % 2\n        if self.transform:\n            x = self.transform(x)\n"
                                "        if self.target_transform:\n            y = self.target_transform(y)\n        return x, y\n"
                                "ds = CustomDataset(5, transform=lambda x: x * 10, target_transform=lambda y: torch.zeros(2).scatter_(0, torch.tensor(y), value=1))\n"
                                "dl = torch.utils.data.DataLoader(ds, batch_size=2, shuffle=False)\nxs, ys = next(iter(dl))\n"
                                "print(f'Feature batch shape: {xs.size()}')\nprint(f'Labels batch shape: {ys.size()}')\nprint(xs, ys)",
    "autograd tutorial": "x = torch.ones(5)\ny = torch.zeros(3)\nw = torch.tensor([[0.1 * i for i in range(3)]] * 5, requires_grad=True)\n"
                         "b = torch.tensor([0.5, -0.5, 0.], requires_grad=True)\nz = torch.matmul(x, w) + b\nloss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)\n"
                         "print(f'Gradient function for z = {z.grad_fn}')\nprint(f'Gradient function for loss = {loss.grad_fn}')\nloss.backward()\nprint(w.grad)\nprint(b.grad)\n"
                         "z = torch.matmul(x, w) + b\nprint(z.requires_grad)\nwith torch.no_grad():\n    z = torch.matmul(x, w) + b\nprint(z.requires_grad)\n"
                         "z_det = (torch.matmul(x, w) + b).detach()\nprint(z_det.requires_grad)\ninp = torch.eye(4, 5, requires_grad=True)\nout = (inp + 1).pow(2).t()\n"
                         "out.backward(torch.ones_like(out), retain_graph=True)\nprint(f'First call\\n{inp.grad}')\nout.backward(torch.ones_like(out), retain_graph=True)\n"
                         "print(f'\\nSecond call\\n{inp.grad}')\ninp.grad.zero_()\nout.backward(torch.ones_like(out), retain_graph=True)\nprint(f'\\nCall after zeroing gradients\\n{inp.grad}')",
    "optimization tutorial hyperparameters": "learning_rate = 1e-3\nbatch_size = 64\nepochs = 5\nloss_fn = nn.CrossEntropyLoss()\nmodel = nn.Linear(2, 2)\n"
                                             "optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)\nprint(optimizer, loss_fn)",
    "buildmodel tutorial layers": "torch.manual_seed(0)\ninput_image = torch.rand(3, 28, 28)\nprint(input_image.size())\nflatten = nn.Flatten()\nflat_image = flatten(input_image)\n"
                                  "print(flat_image.size())\nlayer1 = nn.Linear(in_features=28*28, out_features=20)\nhidden1 = layer1(flat_image)\nprint(hidden1.size())\n"
                                  "print(f'Before ReLU: {hidden1}\\n\\n')\nhidden1 = nn.ReLU()(hidden1)\nprint(f'After ReLU: {hidden1}')\n"
                                  "seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))\nlogits = seq_modules(torch.rand(3, 28, 28))\n"
                                  "softmax = nn.Softmax(dim=1)\npred_probab = softmax(logits)\nprint(pred_probab)",
    "tensor tutorial more": "tensor = torch.ones(4, 4)\nif torch.accelerator.is_available():\n    tensor = tensor.to(torch.accelerator.current_accelerator())\n"
                            "print(tensor.is_cuda, torch.accelerator.is_available(), torch.accelerator.current_accelerator())\n"
                            "t = torch.arange(4.)\nprint(t.T if t.dim() < 2 else t, torch.cat([t, t], dim=0).view(2, 4))",
    # ---- fifth pass: conversions between dtypes -------------------------------------------------------
    "float to int conversions": "x = torch.tensor([-2.7, -0.5, 0.5, 2.7, 1e3])\nprint(x.int(), x.long(), x.short(), x.to(torch.int8), x.char())",
    "float to uint8 in range": "print(torch.tensor([0.4, 1.6, 254.9]).byte(), torch.tensor([300.]).to(torch.int16))",
    "half overflow and underflow": "print(torch.tensor([70000., 1e-8, -70000.]).half(), torch.tensor([1e39], dtype=torch.float64).float())",
    "bool conversions": "print(torch.tensor([0., -0., 0.1, float('nan'), float('inf')]).bool(), torch.tensor([0, 2, -1]).bool(), torch.tensor([True, False]).float())",
    "int64 to float32 precision": "print(torch.tensor([2 ** 24 + 1]).float().long(), torch.tensor([2 ** 53 + 1]).double().long(), torch.tensor(16777217).float().item())",
    "complex conversions": "z = torch.tensor([1 + 2j])\nprint(z.real, z.imag, z.abs(), z.angle(), z.conj(), torch.view_as_real(z), z.to(torch.complex128).dtype)",
    "complex to real warning": "warnings.simplefilter('always')\nwith warnings.catch_warnings(record=True) as w:\n    print(torch.tensor([1 + 2j]).float())\n"
                               "print([str(x.message).split(' (Triggered')[0] for x in w])",
    "bfloat16 conversions": "x = torch.tensor([1.2345678, 100.5, 3e38, 1e-40])\nprint(x.bfloat16(), x.bfloat16().float(), x.bfloat16().half(), torch.tensor([1, 2]).bfloat16())",
    "double to float rounding": "print(torch.tensor([0.1], dtype=torch.float64).float().double(), torch.tensor([1 / 3], dtype=torch.float64).half())",
    "to same dtype shares": "x = torch.ones(2)\ny = x.to(torch.float32)\ny[0] = 5\nz = x.to(torch.float32, copy=True)\nz[1] = 7\nprint(x, y is x, x.float() is x, x.to(torch.float64) is x)",
    "int division results": "a = torch.tensor([7, -7], dtype=torch.int32)\nprint(a / 2, (a / 2).dtype, a // 2, (a // 2).dtype, a % 2, torch.div(a, 2, rounding_mode='trunc').dtype)",
    "uint8 arithmetic wraps": "a = torch.tensor([250, 5], dtype=torch.uint8)\nprint(a + 10, a - 10, a * 2, -a if False else 0, a.sum(), a.sum().dtype, a.prod().dtype)",
    "int8 sum promotes": "a = torch.tensor([100, 100], dtype=torch.int8)\nprint(a.sum(), a.sum().dtype, a.cumsum(0), a.cumsum(0).dtype, a.mean(dtype=torch.float32), a.max().dtype)",
    "float16 sum accumulates": "x = torch.full((10000,), 0.1, dtype=torch.float16)\nprint(x.sum(), x.mean(), x.cumsum(0)[-1], x.float().sum())",
    "bfloat16 arithmetic": "a = torch.tensor([1.5, 2.25], dtype=torch.bfloat16)\nprint(a + 1, a * a, a / 3, a.exp(), a.sum(), (a + 1.0).dtype, (a + torch.ones(2)).dtype)",
    "tensor type conversions by string": "x = torch.ones(2)\nprint(x.to('cpu').dtype, x.type(torch.int32).dtype, x.type('torch.LongTensor').dtype, x.type(torch.LongTensor).dtype)",
    "astype style errors": "torch.ones(2).astype(torch.int32)",
    "dtype from numpy dtype": "import numpy as np\ntorch.ones(2, dtype=np.float32)",
    "tensor from numpy object array": "import numpy as np\ntorch.tensor(np.array([1, 'a'], dtype=object))",
    "torch.as_tensor with dtype keeps sharing": "import numpy as np\na = np.zeros(2, dtype=np.float32)\nt = torch.as_tensor(a, dtype=torch.float32)\na[0] = 3\nu = torch.as_tensor(a, dtype=torch.float64)\na[1] = 4\nprint(t, u)",
    "float16 reductions accumulate in float32": "torch.manual_seed(0)\nx = (torch.rand(4000) * 10).half()\nm = torch.rand(64, 64).half()\n"
                                                "print(x.norm(), x.sum(), m.sum(0)[:3], m.mean(1)[:3], x.var(), x.std(), x.logsumexp(0), "
                                                "x.cumsum(0)[-2:], (x[:50] / 5 + 0.5).cumprod(0)[-1], x.dot(x), x.bfloat16().norm())",
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
