"""Everyday snippets a new user runs on day one, run by ``tests/test_day_one_identity.py`` once under
real torch (``python THIS``) and once under ``hookgrad run THIS``; each snippet's printed text and the
class and message of the exception it ends with must be the same.

Run as a script it prints one JSON object: snippet name -> {"out": stdout, "error": [class, message]}.
Memory addresses (``0x7f...``) are masked; every snippet starts from ``torch.manual_seed(0)``.
"""
import contextlib
import io
import json
import re
import sys
import warnings

SNIPPETS = {
    # ---- types and module identity ---------------------------------------------------------------
    "type of a tensor": "print(type(torch.ones(2)), type(torch.tensor(3)))",
    "type of common classes": "print(type(nn.Linear(2, 3)), type(torch.float32), type(torch.Size([2])), "
                              "type(torch.device('cpu')))",
    "type of a grad_fn": "y = torch.ones(2, requires_grad=True)\nprint(type((y * 2).grad_fn), "
                         "type((y * 2).grad_fn).__module__, type(y.sum().grad_fn).__name__)",
    "type of AccumulateGrad": "y = torch.ones(2, requires_grad=True)\nprint(type((y * 2).grad_fn.next_functions[0][0]))",
    "grad_fn names": "y = torch.ones(2, 2, requires_grad=True)\n"
                     "for z in (y + 1, y - 1, y * y, y / 2, y @ y, y.exp(), y.relu(), y.sum(), y.mean(), y.t(), "
                     "y.view(4), y[0], y.pow(2), torch.tanh(y), torch.sigmoid(y), y.reshape(4), y.unsqueeze(0)):\n"
                     "    print(z.grad_fn.name(), type(z.grad_fn).__qualname__)",
    "type of optimizers": "p = [nn.Parameter(torch.ones(2))]\n"
                          "for o in (torch.optim.SGD(p, lr=0.1), torch.optim.Adam(p), torch.optim.AdamW(p), "
                          "torch.optim.RMSprop(p), torch.optim.Adagrad(p)):\n    print(type(o))",
    "type of schedulers": "o = torch.optim.SGD([nn.Parameter(torch.ones(2))], lr=0.1)\n"
                          "for s in (torch.optim.lr_scheduler.StepLR(o, 2), torch.optim.lr_scheduler.ExponentialLR(o, 0.9),"
                          " torch.optim.lr_scheduler.CosineAnnealingLR(o, 10)):\n    print(type(s))",
    "type of data classes": "ds = torch.utils.data.TensorDataset(torch.arange(4.))\n"
                            "dl = torch.utils.data.DataLoader(ds, batch_size=2, shuffle=True)\n"
                            "print(type(ds), type(dl), type(dl.sampler), type(dl.batch_sampler))\n"
                            "print(type(torch.utils.data.random_split(ds, [2, 2])[0]))",
    "type of a batch": "dl = torch.utils.data.DataLoader([1, 2, 3], batch_size=2)\nb = next(iter(dl))\n"
                       "print(type(b), b, type(iter(dl)))",
    "type of distributions": "D = torch.distributions\nfor d in (D.Normal(0., 1.), D.Categorical(torch.tensor([0.5, 0.5])), "
                             "D.Bernoulli(torch.tensor(0.3))):\n    print(type(d), type(d).__module__)",
    "type of a parameter": "p = nn.Parameter(torch.ones(1))\nprint(p.__class__, type(p).__module__, isinstance(p, torch.Tensor))",
    "layer modules": "for m in (nn.Linear(1, 1), nn.Conv2d(1, 1, 1), nn.ReLU(), nn.Sequential(), nn.BatchNorm1d(2), "
                     "nn.LSTM(2, 2), nn.Embedding(3, 2), nn.Dropout(), nn.MSELoss(), nn.CrossEntropyLoss(), nn.LayerNorm(2), "
                     "nn.ModuleList(), nn.MaxPool2d(2), nn.Flatten(), nn.Identity(), nn.GELU(), nn.Softmax(dim=0)):\n"
                     "    print(type(m).__module__, type(m).__qualname__, m.__module__.startswith('torch.nn'))",
    "class identities": "print(torch.Tensor.__module__, nn.Module.__module__, nn.Parameter.__module__, "
                        "torch.optim.Optimizer.__module__, torch.utils.data.Dataset.__module__, "
                        "torch.autograd.Function.__module__, torch.dtype.__module__, torch.Size.__module__, "
                        "torch.device.__module__, torch.Generator.__module__)",
    "reprs of context managers": "print(repr(torch.no_grad()).split(' at ')[0], repr(torch.enable_grad()).split(' at ')[0], "
                                 "repr(torch.inference_mode()).split(' at ')[0], repr(torch.set_grad_enabled(True)).split(' at ')[0])",
    "type of a generator": "g = torch.Generator().manual_seed(1)\nprint(type(g), type(torch.default_generator))",
    "custom Function node": "class Square(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                            "        ctx.save_for_backward(x)\n        return x * x\n    @staticmethod\n"
                            "    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 2 * x * g\n"
                            "x = torch.tensor([3.], requires_grad=True)\ny = Square.apply(x)\ny.backward()\n"
                            "print(type(y.grad_fn), y.grad_fn.name(), x.grad)",
    "custom Function with setup_context": "class Double(torch.autograd.Function):\n    @staticmethod\n"
                                          "    def forward(x):\n        return x * 2\n    @staticmethod\n"
                                          "    def setup_context(ctx, inputs, output):\n        pass\n"
                                          "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n"
                                          "x = torch.tensor([3.], requires_grad=True)\nDouble.apply(x).sum().backward()\n"
                                          "print(x.grad, type(Double.apply(x).grad_fn).__name__)",
    "user module identity": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                            "        self.fc = nn.Linear(2, 1)\n    def forward(self, x):\n        return self.fc(x)\n"
                            "print(type(Net()), Net.__module__, Net.__mro__[1], [c.__module__ for c in Net.__mro__])",
    "exception classes": "print(torch.OutOfMemoryError.__module__, torch.OutOfMemoryError.__mro__[1])",
    "item and tolist types": "x = torch.tensor([1.5, 2.5])\nprint(type(x[0].item()), type(x.tolist()), "
                             "type(torch.tensor(3).item()), type(x.numpy()), type(x.shape), type(x.size()))",
    "type strings": "print(torch.ones(1).type(), torch.ones(1, dtype=torch.long).type(), torch.zeros(1).double().type(), "
                    "torch.typename(torch.ones(1)), torch.typename(nn.Linear(1, 1)))",
    "legacy tensor types": "print(torch.FloatTensor, type(torch.FloatTensor([1.])), isinstance(torch.ones(1), "
                           "torch.FloatTensor), torch.LongTensor.__module__)",
    # ---- printing tensors -----------------------------------------------------------------------------
    "print float32 vector": "print(torch.tensor([1.0, 2.5, -3.25]))",
    "print float64": "print(torch.tensor([1.0, 2.5], dtype=torch.float64))",
    "print float16": "print(torch.tensor([1.0, 2.5], dtype=torch.float16))",
    "print bfloat16": "print(torch.tensor([1.0, 2.5], dtype=torch.bfloat16))",
    "print int64": "print(torch.tensor([1, 2, 3]))",
    "print int32": "print(torch.tensor([1, 2, 3], dtype=torch.int32))",
    "print int16 int8 uint8": "print(torch.tensor([1, -2], dtype=torch.int16), torch.tensor([1, -2], dtype=torch.int8), "
                              "torch.tensor([1, 200], dtype=torch.uint8))",
    "print bool": "print(torch.tensor([True, False]), torch.ones(2) > 0)",
    "print complex": "print(torch.tensor([1 + 2j, 3 - 1j]))",
    "print 0-d": "print(torch.tensor(3.5), torch.tensor(2), torch.tensor(True))",
    "print empty": "print(torch.empty(0), torch.zeros(0, 3), torch.ones(2, 0, dtype=torch.int64))",
    "print 2-d": "print(torch.arange(6.).reshape(2, 3))",
    "print 3-d": "print(torch.arange(12).reshape(2, 2, 3))",
    "print arange and linspace": "print(torch.arange(5), torch.arange(0, 1, 0.25), torch.linspace(0, 1, 5))",
    "print eye zeros ones full": "print(torch.eye(2), torch.zeros(2), torch.ones(2, dtype=torch.int32), torch.full((2,), 7.))",
    "print large": "print(torch.arange(1500.))",
    "print large 2-d": "print(torch.arange(3000).reshape(30, 100))",
    "print requires_grad": "x = torch.ones(2, requires_grad=True)\nprint(x, x * 2, (x * 2).sum())",
    "print mean grad_fn": "x = torch.ones(2, requires_grad=True)\nprint(x.mean(), x.exp())",
    "print parameter": "print(nn.Parameter(torch.tensor([1., 2.])))",
    "print scientific": "print(torch.tensor([1e-10, 1.0, 1e10]), torch.tensor([0.001, 0.0002]))",
    "print nan inf": "print(torch.tensor([float('nan'), float('inf'), -float('inf'), 1.0]))",
    "print rand seeded": "torch.manual_seed(0)\nprint(torch.rand(3), torch.randn(2), torch.randint(0, 10, (4,)))",
    "print shape and size": "x = torch.zeros(2, 3, 4)\nprint(x.shape, x.size(), x.size(1), x.shape[-1], len(x), x.ndim, x.dim(), x.numel())",
    "print dtypes": "print(torch.float32, torch.float, torch.double, torch.long, torch.int, torch.half, torch.bool, "
                    "torch.bfloat16, torch.complex64, torch.uint8)",
    "print devices": "print(torch.device('cpu'), repr(torch.device('cpu')), torch.device('cpu', 0), torch.ones(1).device, "
                     "repr(torch.ones(1).device))",
    "str and format": "x = torch.tensor(2.5)\nprint(str(x), f'{x}', f'{x.item():.2f}', f'{x:.3f}', '%s' % torch.ones(1))",
    "print after ops": "a = torch.tensor([[1., 2.], [3., 4.]])\nprint(a @ a, a * a, a.T, a.sum(0), a.max(), a.argmax(), a.mean(1))",
    "print int division": "print(torch.tensor([5, 7]) / 2, torch.tensor([5, 7]) // 2, torch.tensor([5, 7]) % 3)",
    "print bool ops": "a = torch.tensor([1, 2, 3])\nprint(a > 1, (a > 1).sum(), a[a > 1], torch.where(a > 1, a, 0))",
    "print cat stack": "a = torch.ones(2)\nprint(torch.cat([a, a]), torch.stack([a, a]), torch.cat([a[None], a[None]], dim=1))",
    "print detach numpy": "x = torch.ones(2, requires_grad=True)\nprint(x.detach(), x.detach().numpy(), x.data, x.clone())",
    "print softmax": "print(torch.softmax(torch.tensor([1., 2., 3.]), dim=0), F.relu(torch.tensor([-1., 1.])))",
    "print one_hot": "print(F.one_hot(torch.tensor([0, 2]), 3))",
    "print max with dim": "x = torch.tensor([[1., 5.], [7., 2.]])\nprint(x.max(dim=1))\nprint(torch.sort(x))",
    "print unique": "print(torch.unique(torch.tensor([3, 1, 3, 2])), torch.tensor([3, 1, 3]).unique(return_counts=True))",
    "print float tensor of ints": "print(torch.tensor([1., 2., 3.]), torch.tensor([1.5, 2.]), torch.tensor([100000., 1.]))",
    "print named_tuple fields": "r = torch.tensor([3., 1.]).topk(1)\nprint(r.values, r.indices, r[0], type(r).__name__)",
    # ---- reprs ---------------------------------------------------------------------------------------
    "repr Linear": "print(nn.Linear(3, 2), nn.Linear(3, 2, bias=False))",
    "repr Sequential": "print(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1), nn.Sigmoid()))",
    "repr conv net": "print(nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.MaxPool2d(2), "
                     "nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Conv1d(2, 4, 3, stride=2)))",
    "repr recurrent": "print(nn.LSTM(4, 8, num_layers=2, batch_first=True), nn.GRU(3, 5), nn.RNN(2, 2), nn.Embedding(10, 3))",
    "repr custom module": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                          "        self.fc1 = nn.Linear(2, 4)\n        self.act = nn.Tanh()\n"
                          "        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])\n"
                          "        self.heads = nn.ModuleDict({'a': nn.Linear(4, 1)})\n"
                          "    def forward(self, x):\n        return x\nprint(Net())",
    "repr losses and activations": "print(nn.CrossEntropyLoss(), nn.MSELoss(reduction='sum'), nn.BCEWithLogitsLoss(), "
                                   "nn.LeakyReLU(0.1), nn.Softmax(dim=1), nn.GELU(), nn.LayerNorm(4), nn.Dropout(p=0.1))",
    "repr transformer layer": "print(nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16))",
    "repr optimizers": "p = [nn.Parameter(torch.ones(2))]\nprint(torch.optim.SGD(p, lr=0.1, momentum=0.9))\n"
                       "print(torch.optim.Adam(p, lr=1e-3))",
    "repr AdamW": "print(torch.optim.AdamW([nn.Parameter(torch.ones(2))], lr=1e-3, weight_decay=0.01))",
    "repr scheduler": "o = torch.optim.SGD([nn.Parameter(torch.ones(2))], lr=0.1)\n"
                      "s = torch.optim.lr_scheduler.StepLR(o, step_size=2)\nprint(s.get_last_lr(), s.state_dict())",
    "repr distributions": "D = torch.distributions\nprint(D.Normal(torch.tensor(0.), torch.tensor(1.)), "
                          "D.Categorical(probs=torch.tensor([0.2, 0.8])), D.Uniform(0., 1.), D.Bernoulli(probs=0.3))",
    "repr grad_fn": "y = torch.ones(2, requires_grad=True)\nprint(repr((y * 2).grad_fn).split(' at ')[0], "
                    "str(y.sum().grad_fn).split(' at ')[0])",
    "repr dataloader pieces": "ds = torch.utils.data.TensorDataset(torch.ones(4, 2), torch.zeros(4))\n"
                              "print(len(ds), ds[0], len(torch.utils.data.DataLoader(ds, batch_size=3)))",
    "repr state_dict": "m = nn.Linear(2, 1)\nm.weight.data.fill_(0.5)\nm.bias.data.zero_()\nprint(m.state_dict())",
    "repr optimizer state_dict": "p = nn.Parameter(torch.ones(2))\no = torch.optim.SGD([p], lr=0.1, momentum=0.9)\n"
                                 "p.grad = torch.ones(2)\no.step()\nprint(o.state_dict())",
    "repr Size and finfo": "print(repr(torch.Size([2, 3])), torch.Size([]), torch.finfo(torch.float32).eps, "
                           "torch.iinfo(torch.int8))",
    "repr generator state": "g = torch.Generator()\nprint(g.initial_seed(), g.get_state().dtype, g.get_state().shape)",
    "repr named_parameters": "m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))\n"
                             "print([(n, p.shape) for n, p in m.named_parameters()])\n"
                             "print([n for n, _ in m.named_modules()], [n for n, _ in m.named_children()])",
    "repr parameters count": "m = nn.Sequential(nn.Linear(10, 5), nn.Linear(5, 2))\n"
                             "print(sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.parameters() if p.requires_grad))",
    "repr buffers": "m = nn.BatchNorm1d(2)\nprint(list(m.state_dict().keys()), [n for n, _ in m.named_buffers()], m.running_mean)",
    "repr train and eval": "m = nn.Dropout()\nprint(m.training, m.eval(), m.training, m.train().training)",
    "repr module methods": "m = nn.Linear(2, 2)\nprint(m.to(torch.float64).weight.dtype, m.double().bias.dtype, m.float().weight.dtype,"
                           " m.requires_grad_(False).weight.requires_grad, m.zero_grad())",
    "repr load_state_dict result": "m = nn.Linear(2, 1)\nprint(m.load_state_dict(m.state_dict()))\n"
                                   "print(m.load_state_dict({'weight': torch.ones(1, 2)}, strict=False))",
    # ---- introspection --------------------------------------------------------------------------------
    "is_leaf and requires_grad": "x = torch.ones(2, requires_grad=True)\ny = x * 2\n"
                                 "print(x.is_leaf, y.is_leaf, y.requires_grad, x.grad, y.grad_fn is not None, x.grad_fn)",
    "next_functions": "x = torch.ones(2, requires_grad=True)\ny = (x * 2 + 1).sum()\n"
                      "print([(type(f).__name__, i) for f, i in y.grad_fn.next_functions])\n"
                      "print(y.grad_fn.next_functions[0][0].next_functions)",
    "backward and grad": "x = torch.tensor([1., 2.], requires_grad=True)\n(x ** 2).sum().backward()\nprint(x.grad, x.grad.grad_fn)",
    "grad accumulates": "x = torch.tensor([1.], requires_grad=True)\nfor _ in range(3):\n    (x * 3).sum().backward()\nprint(x.grad)",
    "no_grad result": "x = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    y = x * 2\n"
                      "print(y.requires_grad, y.grad_fn, torch.is_grad_enabled())",
    "autograd.grad": "x = torch.tensor(2., requires_grad=True)\nprint(torch.autograd.grad(x ** 3, x))",
    "retain_grad": "x = torch.ones(2, requires_grad=True)\ny = x * 3\ny.retain_grad()\ny.sum().backward()\nprint(y.grad, x.grad)",
    "tensor attributes": "x = torch.arange(6.).reshape(2, 3)\nprint(x.dtype, x.device, x.is_cuda, x.layout, x.stride(), "
                         "x.is_contiguous(), x.t().is_contiguous(), x.element_size(), x.itemsize, x.nbytes)",
    "dir membership": "x = torch.ones(1)\nnames = ['shape', 'dtype', 'grad', 'backward', 'numpy', 'item', 'view', 'reshape', "
                      "'to', 'cuda', 'requires_grad', 'is_leaf', 'grad_fn', 'detach', 'clone', 'T', 'mT', 'size', 'dim']\n"
                      "print([n for n in names if n not in dir(x)])",
    "dir module": "m = nn.Linear(1, 1)\nnames = ['forward', 'parameters', 'state_dict', 'load_state_dict', 'train', 'eval', "
                  "'register_forward_hook', 'weight', 'bias', 'in_features', 'zero_grad', 'named_parameters', 'to', 'apply']\n"
                  "print([n for n in names if n not in dir(m)])",
    "dir torch": "names = ['tensor', 'zeros', 'nn', 'optim', 'no_grad', 'manual_seed', 'cuda', 'float32', 'Tensor', 'save', "
                 "'load', 'cat', 'stack', 'randn', 'from_numpy', 'utils', 'autograd', 'device', '__version__']\n"
                 "print([n for n in names if n not in dir(torch)])",
    "version checks": "v = torch.__version__\nprint(type(v).__name__, v >= '2.0', v < '3', v.split('.')[0], "
                      "str(v)[:4], isinstance(v, str), torch.version.cuda)",
    "version tuple": "from packaging.version import Version\nprint(Version(torch.__version__.split('+')[0]) >= Version('2.1'))",
    "cuda and mps checks": "print(torch.cuda.is_available(), torch.backends.mps.is_available(), torch.cuda.device_count(), "
                           "torch.device('cuda' if torch.cuda.is_available() else 'cpu'))",
    "default dtype": "print(torch.get_default_dtype(), torch.tensor([1.]).dtype, torch.tensor([1]).dtype, "
                     "torch.tensor(1.5, dtype=torch.float64).dtype, torch.is_floating_point(torch.ones(1)))",
    "is_tensor and numel": "print(torch.is_tensor(torch.ones(1)), torch.is_tensor([1]), torch.numel(torch.ones(2, 3)))",
    "from_numpy roundtrip": "import numpy as np\na = np.arange(3.)\nt = torch.from_numpy(a)\nprint(t, t.dtype, "
                            "torch.as_tensor(a).dtype, torch.tensor(np.float32(2.5)))",
    "manual_seed reproducible": "torch.manual_seed(42)\na = torch.rand(2)\ntorch.manual_seed(42)\nprint(torch.equal(a, torch.rand(2)))",
    "tensor to list and python": "x = torch.tensor([[1, 2], [3, 4]])\nprint(x.tolist(), x[0, 1].item(), int(x[1, 0]), "
                                 "float(x[0, 0]), bool(x[0, 0]))",
    "iterate tensor": "for row in torch.arange(4).reshape(2, 2):\n    print(row)",
    "parameters of optimizer": "m = nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                               "print(len(o.param_groups), sorted(o.param_groups[0].keys()), o.defaults['lr'])",
    "train loop": "torch.manual_seed(0)\nm = nn.Linear(1, 1)\nwith torch.no_grad():\n    m.weight.fill_(0.)\n    m.bias.fill_(0.)\n"
                  "o = torch.optim.SGD(m.parameters(), lr=0.1)\nx = torch.tensor([[1.], [2.]])\ny = 2 * x\n"
                  "for _ in range(3):\n    o.zero_grad()\n    loss = F.mse_loss(m(x), y)\n    loss.backward()\n    o.step()\n"
                  "    print(round(loss.item(), 5))\nprint(m.weight.grad, m.bias)",
    "loss values": "print(F.cross_entropy(torch.tensor([[2., 1.]]), torch.tensor([0])), "
                   "nn.MSELoss()(torch.ones(2), torch.zeros(2)), F.nll_loss(torch.log(torch.tensor([[0.5, 0.5]])), torch.tensor([1])))",
    "hooks print": "m = nn.Linear(1, 1)\nh = m.register_forward_hook(lambda mod, i, o: print('hook', type(mod).__name__, type(i), len(i)))\n"
                   "m(torch.ones(1, 1))\nprint(type(h))\nh.remove()\nm(torch.ones(1, 1))",
    "state_dict types": "sd = nn.Linear(2, 1).state_dict()\nprint(type(sd), list(sd), type(sd['weight']), sd['weight'].requires_grad)",
    "save and load": "import io\nbuf = io.BytesIO()\ntorch.save({'w': torch.ones(2), 'n': 3}, buf)\nbuf.seek(0)\n"
                     "print(torch.load(buf))",
    "save and load a module": "import io\nbuf = io.BytesIO()\ntorch.save(nn.Linear(2, 1), buf)\nbuf.seek(0)\n"
                              "m = torch.load(buf, weights_only=False)\nprint(type(m), m)",
    "pickle roundtrip": "import pickle\nm = pickle.loads(pickle.dumps(nn.Sequential(nn.Linear(2, 1))))\n"
                        "t = pickle.loads(pickle.dumps(torch.ones(2, requires_grad=True)))\nprint(type(m), type(t), t, "
                        "pickle.loads(pickle.dumps(torch.float16)), pickle.loads(pickle.dumps(torch.Size([1, 2]))))",
    "deepcopy": "import copy\nm = copy.deepcopy(nn.Linear(2, 1))\nprint(type(m), type(copy.deepcopy(torch.ones(1))))",
    "dataclass holding a module": "import dataclasses\n@dataclasses.dataclass\nclass Cfg:\n    layer: nn.Module\n"
                                  "    lr: float = 0.1\nprint(Cfg(nn.Identity()), dataclasses.fields(Cfg)[0].type)",
    "typing hints": "import typing\ndef f(x: torch.Tensor, m: nn.Module) -> torch.Tensor:\n    return x\n"
                    "print(typing.get_type_hints(f))",
    "inspect": "import inspect\nprint(inspect.isclass(nn.Linear), inspect.getmodule(nn.Linear).__name__ in "
               "('torch.nn.modules.linear', 'hookgrad.nn.modules.linear'), inspect.signature(nn.Linear.__init__))",
    "isinstance checks": "x = torch.ones(1)\nprint(isinstance(x, torch.Tensor), isinstance(nn.Linear(1, 1), nn.Module), "
                         "isinstance(nn.Parameter(x), torch.Tensor), isinstance(torch.float32, torch.dtype), "
                         "issubclass(nn.Linear, nn.Module), isinstance(torch.Size([1]), tuple))",
    "module prefixes": "print(nn.Conv2d.__module__, torch.optim.Adam.__module__, torch.optim.lr_scheduler.StepLR.__module__, "
                       "torch.utils.data.DataLoader.__module__, torch.distributions.Normal.__module__, "
                       "torch.autograd.Function.__module__, torch.nn.functional.relu.__module__)",
    # ---- common mistakes --------------------------------------------------------------------------
    "matmul shape mismatch": "torch.ones(2, 3) @ torch.ones(2, 3)",
    "mm shape mismatch": "torch.mm(torch.ones(2, 3), torch.ones(4, 5))",
    "matmul 1-d mismatch": "torch.matmul(torch.ones(3), torch.ones(4))",
    "linear shape mismatch": "nn.Linear(4, 2)(torch.ones(3, 5))",
    "cat size mismatch": "torch.cat([torch.ones(2, 3), torch.ones(2, 4)])",
    "cat dims mismatch": "torch.cat([torch.ones(2, 3), torch.ones(3)])",
    "stack size mismatch": "torch.stack([torch.ones(2), torch.ones(3)])",
    "add size mismatch": "torch.ones(2, 3) + torch.ones(4)",
    "view incompatible": "torch.arange(6).view(4, 2)",
    "reshape incompatible": "torch.arange(6).reshape(5, -1)",
    "view non-contiguous": "torch.ones(2, 3).t().view(6)",
    "wrong dtype matmul": "torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64)",
    "linear on long": "nn.Linear(2, 2)(torch.ones(1, 2, dtype=torch.long))",
    "cross_entropy float target shape": "F.cross_entropy(torch.ones(2, 3), torch.tensor([[0.5], [0.5]]))",
    "cross_entropy target out of range": "F.cross_entropy(torch.ones(2, 3), torch.tensor([0, 5]))",
    "backward twice": "x = torch.ones(2, requires_grad=True)\ny = (x.exp() * 2).sum()\ny.backward()\ny.backward()",
    "backward on non-scalar": "x = torch.ones(2, requires_grad=True)\n(x * 2).backward()",
    "backward without grad": "torch.ones(2).sum().backward()",
    "in-place on leaf": "x = torch.ones(2, requires_grad=True)\nx.add_(1)",
    "in-place on leaf view": "x = torch.ones(2, requires_grad=True)\nx[0] = 5",
    "numpy on requires_grad": "torch.ones(2, requires_grad=True).numpy()",
    "item on many elements": "torch.ones(3).item()",
    "float of many elements": "float(torch.ones(3))",
    "bool of many elements": "bool(torch.ones(3))",
    "if on a tensor": "x = torch.tensor([1, 2])\nif x > 1:\n    pass",
    "index out of range": "torch.arange(3)[5]",
    "index 2-d out of range": "torch.ones(2, 2)[0, 3]",
    "too many indices": "torch.ones(2)[0, 0]",
    "dim out of range": "torch.ones(2, 3).sum(dim=2)",
    "softmax dim out of range": "torch.softmax(torch.ones(2), dim=1)",
    "len of 0-d": "len(torch.tensor(1.))",
    "iterate 0-d": "for v in torch.tensor(1.):\n    pass",
    "requires_grad on integer": "torch.tensor([1, 2], requires_grad=True)",
    "requires_grad_ on integer": "torch.ones(2, dtype=torch.long).requires_grad_()",
    "tensor from ragged list": "torch.tensor([[1, 2], [3]])",
    "tensor from string": "torch.tensor('abc')",
    "unknown dtype name": "torch.ones(2, dtype='float32')",
    "cuda unavailable": "torch.ones(1).cuda()",
    "to cuda device": "torch.ones(1).to('cuda')",
    "embedding index out of range": "nn.Embedding(3, 2)(torch.tensor([5]))",
    "embedding float input": "nn.Embedding(3, 2)(torch.tensor([1.0]))",
    "conv wrong rank": "nn.Conv2d(1, 1, 3)(torch.ones(3, 3))",
    "conv wrong channels": "nn.Conv2d(3, 1, 3)(torch.ones(1, 1, 5, 5))",
    "conv input too small": "nn.Conv2d(1, 1, 3)(torch.ones(1, 1, 2, 2))",
    "batchnorm single value": "nn.BatchNorm1d(2)(torch.ones(1, 2))",
    "optimizer empty params": "torch.optim.SGD([], lr=0.1)",
    "optimizer bad lr": "torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=-1)",
    "optimizer given a tensor": "torch.optim.Adam(torch.ones(2, requires_grad=True))",
    "load_state_dict missing keys": "nn.Linear(2, 1).load_state_dict({'weight': torch.ones(1, 2)})",
    "load_state_dict shape mismatch": "nn.Linear(2, 1).load_state_dict({'weight': torch.ones(3, 2), 'bias': torch.ones(1)})",
    "module not called with tensor": "nn.Linear(2, 1)([1., 2.])",
    "missing forward": "class M(nn.Module):\n    pass\nM()(torch.ones(1))",
    "module attribute missing": "nn.Linear(2, 1).weights",
    "assign non-parameter": "m = nn.Linear(1, 1)\nm.weight = torch.ones(1, 1)",
    "super init forgotten": "class M(nn.Module):\n    def __init__(self):\n        self.fc = nn.Linear(1, 1)\nM()",
    "mse_loss size warning": "warnings.simplefilter('always')\nwith warnings.catch_warnings(record=True) as w:\n"
                             "    F.mse_loss(torch.ones(2, 1), torch.ones(2))\nprint([str(x.message) for x in w])",
    "zero_grad set_to_none": "m = nn.Linear(1, 1)\nm(torch.ones(1, 1)).sum().backward()\nm.zero_grad()\nprint(m.weight.grad)",
    "grad of non-leaf warning": "warnings.simplefilter('always')\nwith warnings.catch_warnings(record=True) as w:\n"
                                "    x = torch.ones(1, requires_grad=True)\n    print((x * 2).grad)\n"
                                "print([str(x.message).split(' (Triggered')[0][:80] for x in w])",
    "modify saved tensor": "x = torch.ones(2, requires_grad=True)\ny = x.exp()\ny.add_(1)\ny.sum().backward()",
    "expand bad size": "torch.ones(2, 3).expand(4, 3)",
    "permute wrong dims": "torch.ones(2, 3).permute(0)",
    "squeeze unsqueeze dims": "print(torch.ones(1, 2).squeeze(0).shape, torch.ones(2).unsqueeze(3))",
    "argmax on empty": "torch.tensor([]).argmax()",
    "randint bad range": "torch.randint(5, 2, (3,))",
    "arange bad step": "torch.arange(0, 10, -1)",
    "dataloader bad batch size": "torch.utils.data.DataLoader([1, 2], batch_size=0)",
    "random_split bad lengths": "torch.utils.data.random_split(range(5), [2, 2])",
    "scheduler on non-optimizer": "torch.optim.lr_scheduler.StepLR(nn.Linear(1, 1), 2)",
    "distributions bad param": "torch.distributions.Normal(torch.tensor(0.), torch.tensor(-1.))",
    "chunk and split": "print(torch.arange(5).chunk(2), torch.arange(5).split(2))",
    "gather bad index": "torch.gather(torch.ones(2, 2), 1, torch.tensor([[2]]))",
    "index_select float index": "torch.ones(3).index_select(0, torch.tensor([0.]))",
    "mean of long": "torch.tensor([1, 2]).mean()",
    "clip_grad_norm result": "m = nn.Linear(2, 1)\nm(torch.ones(1, 2)).sum().backward()\n"
                             "print(nn.utils.clip_grad_norm_(m.parameters(), 0.5))",
    "clone require grad warning": "x = torch.ones(1, requires_grad=True)\nprint(torch.tensor(x))",
    # ---- more of the same, found by beginners every day -------------------------------------------
    "unsqueeze dim out of range": "torch.ones(2).unsqueeze(5)",
    "size dim out of range": "torch.ones(2, 3).size(2)",
    "transpose dim out of range": "torch.ones(2, 3).transpose(0, 2)",
    "cat dim out of range": "torch.cat([torch.ones(2), torch.ones(2)], dim=1)",
    "max dim out of range": "torch.max(torch.ones(2), 1)",
    "view two inferred dims": "torch.ones(4).view(2, -1, -1)",
    "view -1 impossible": "torch.zeros(2, 3).view(-1, 4)",
    "mask shape mismatch": "torch.ones(3, 3)[torch.tensor([True, False])]",
    "integer division by zero": "torch.tensor([1]) // 0",
    "float division by zero": "print(torch.tensor([1.]) / 0, torch.tensor([1]) / 0, torch.sqrt(torch.tensor(-1.)))",
    "softmax without dim": "torch.ones(2).softmax()",
    "flatten dim out of range": "torch.flatten(torch.ones(2, 2), 5)",
    "sequential index out of range": "nn.Sequential(nn.ReLU())[5]",
    "modulelist index out of range": "nn.ModuleList()[0]",
    "state_dict missing key": "nn.Linear(1, 1).state_dict()['missing']",
    "load missing file": "torch.load('no_such_checkpoint.pt')",
    "legacy constructor": "print(torch.Tensor([1, 2]), torch.Tensor(2, 3).shape, torch.Tensor().shape, "
                          "torch.LongTensor([1, 2]))",
    "manual_seed returns a generator": "print(type(torch.manual_seed(0)))",
    "conversions": "x = torch.tensor([1.7, -2.2])\nprint(x.int(), x.long(), x.half(), x.bool(), x.double(), "
                   "x.to(torch.int32), x.type(torch.int64), torch.tensor(3.7).int())",
    "device moves": "x = torch.ones(1)\nprint(x.cpu(), x.to('cpu'), x.to(torch.device('cpu')).device, x.is_cpu, "
                    "nn.Linear(1, 1).to('cpu').weight.device)",
    "sum over axis": "x = torch.arange(6.).reshape(2, 3)\nprint(x.sum(axis=0), x.sum(dim=1, keepdim=True), "
                     "x.mean(dim=(0, 1)), x.norm(), x.std(), x.var(unbiased=False))",
    "no_grad decorator": "@torch.no_grad()\ndef f(x):\n    return x * 2\nprint(f(torch.ones(1, requires_grad=True)))",
    "F.softmax implicit dim": "print(F.softmax(torch.tensor([[1., 2.]]), dim=-1), F.log_softmax(torch.tensor([1., 1.]), 0))",
    "collate dicts and strings": "dl = torch.utils.data.DataLoader([{'x': torch.ones(2), 'y': 1}, {'x': torch.zeros(2), "
                                 "'y': 0}], batch_size=2)\nprint(next(iter(dl)))\n"
                                 "print(next(iter(torch.utils.data.DataLoader([(1, 'a'), (2, 'b')], batch_size=2))))",
    "optimizer defaults": "o = torch.optim.Adam([nn.Parameter(torch.ones(1))])\nprint(o.param_groups[0]['betas'], "
                          "o.defaults['lr'], torch.optim.SGD([nn.Parameter(torch.ones(1))]).defaults['lr'])",
    "loss item type": "loss = F.mse_loss(torch.ones(2), torch.zeros(2))\nprint(type(loss.item()), loss.item(), loss.dtype, loss.shape)",
    "weight grad none": "m = nn.Linear(2, 2)\nprint(m.weight.grad, m.weight.is_leaf, m.weight.requires_grad, type(m.weight))",
    "shape comparisons": "x = torch.zeros(2, 3)\nprint(x.shape == (2, 3), x.shape == [2, 3], x.shape + (1,), type(x.shape + (1,)), "
                         "x.shape[1:], type(x.shape[1:]), tuple(x.shape), list(x.shape))",
    "dtype properties": "print(torch.float32.is_floating_point, torch.int64.is_signed, torch.float32.itemsize, "
                        "torch.complex64.is_complex, str(torch.float16), torch.tensor([1, 2]).dtype == torch.int64)",
    "clamp and rounding": "x = torch.tensor([-1.5, 0.5, 2.5])\nprint(x.clamp(0, 1), x.round(), x.floor(), x.ceil(), x.abs(), x.sign())",
    "comparison helpers": "a = torch.tensor([1., 2.])\nprint(torch.allclose(a, a + 1e-9), torch.equal(a, a), (a == a).all(), "
                          "torch.isclose(a, a), a.eq(1), a.ne(1))",
    "zeros_like and friends": "x = torch.ones(2, 2, dtype=torch.int32)\nprint(torch.zeros_like(x), torch.ones_like(x, dtype=torch.float32),"
                              " torch.full_like(x, 7), torch.empty_like(x).shape, torch.rand_like(x.float()).shape)",
    "argmax keepdim": "x = torch.tensor([[1., 3.], [4., 2.]])\nprint(x.argmax(dim=1), x.argmax(dim=1, keepdim=True), x.argmax())",
    "where and masked_fill": "x = torch.tensor([1., -1., 2.])\nprint(x.masked_fill(x < 0, 0.), torch.where(x > 0, x, torch.zeros(3)))",
    "topk sort argsort": "x = torch.tensor([3., 1., 2.])\nprint(x.topk(2), x.argsort(), x.sort(descending=True))",
    "einsum and bmm": "a = torch.ones(2, 2, 3)\nb = torch.ones(2, 3, 4)\nprint(torch.bmm(a, b).shape, torch.einsum('bij,bjk->bik', a, b).shape)",
    "bmm shape mismatch": "torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 4, 4))",
    "scatter and gather": "x = torch.arange(6.).reshape(2, 3)\nprint(x.gather(1, torch.tensor([[0], [2]])), "
                          "torch.zeros(3).scatter(0, torch.tensor([2]), torch.tensor([5.])))",
    "exception types": "for f in (lambda: torch.linalg.inv(torch.zeros(2, 2)), lambda: torch.ones(2) @ torch.ones(3), "
                       "lambda: torch.ones(1).cuda()):\n    try:\n        f()\n    except Exception as e:\n"
                       "        print(type(e), type(e).__mro__[1])",
    "init functions": "w = torch.empty(2, 3)\nprint(type(nn.init.xavier_uniform_(w)), nn.init.zeros_(w), nn.init.constant_(w, 0.5), "
                      "nn.init.calculate_gain('relu'))",
    "parameters_to_vector": "m = nn.Linear(2, 1)\nnn.init.ones_(m.weight)\nnn.init.zeros_(m.bias)\n"
                            "print(nn.utils.parameters_to_vector(m.parameters()))",
    "distribution samples and log_prob": "D = torch.distributions\nn = D.Normal(torch.tensor([0.]), torch.tensor([1.]))\n"
                                          "print(n.log_prob(torch.tensor([0.])), n.mean, n.stddev, n.sample().shape, "
                                          "D.Categorical(logits=torch.zeros(3)).probs, n.batch_shape, n.event_shape)",
    "scheduler stepping": "o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.)\n"
                          "s = torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)\nfor _ in range(3):\n"
                          "    o.step()\n    s.step()\n    print(s.get_last_lr(), o.param_groups[0]['lr'])",
    "grad_fn metadata": "x = torch.ones(2, requires_grad=True)\ny = x * 3\nprint(y.grad_fn.name(), y.grad_fn.metadata, "
                        "y.grad_fn._saved_other, y.grad_fn.next_functions[0][0].variable is x)",
    "tensor __repr__ of a view": "x = torch.arange(6.).reshape(2, 3)\nprint(x[:, 1], x[0], x.t(), x[None].shape, x[..., None].shape)",
    "register_buffer and parameter": "m = nn.Module()\nm.register_buffer('b', torch.zeros(1))\n"
                                     "m.register_parameter('p', nn.Parameter(torch.ones(1)))\nprint(m.state_dict(), list(m.buffers()), m)",
    "module __repr__ with extra_repr": "class Scale(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                       "        self.s = 2\n    def extra_repr(self):\n        return f's={self.s}'\n"
                                       "print(nn.Sequential(Scale(), nn.Sequential(nn.ReLU())))",
    "apply and children": "m = nn.Sequential(nn.Linear(1, 1), nn.ReLU())\nm.apply(lambda mod: print(type(mod).__name__))\n"
                          "print(list(m.children())[1], len(list(m.modules())))",
    "reshape with wrong numel": "torch.arange(6).reshape(4, 2)",
    "matmul with 0-d": "torch.matmul(torch.tensor(2.), torch.ones(2))",
    "linear with 3-d input": "print(nn.Linear(2, 1, bias=False)(torch.ones(2, 3, 2)).shape)",
    "mse_loss dtype mismatch": "F.mse_loss(torch.ones(2), torch.ones(2, dtype=torch.float64))",
    "cross_entropy with float targets": "print(F.cross_entropy(torch.zeros(2, 3), torch.tensor([[1., 0., 0.], [0., 1., 0.]])))",
    "nll_loss wrong target dtype": "F.nll_loss(torch.zeros(2, 3), torch.tensor([0., 1.]))",
    "bce out of range": "F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.]))",
    "embedding padding repr": "print(nn.Embedding(5, 2, padding_idx=0), nn.EmbeddingBag(5, 2, mode='sum'))",
    "dropout in eval": "m = nn.Dropout(0.5).eval()\nprint(m(torch.ones(3)))",
    "view as numpy shares": "x = torch.zeros(2)\na = x.numpy()\na[0] = 5\nprint(x)",
    "clone vs detach grad": "x = torch.ones(1, requires_grad=True)\nprint(x.clone(), x.detach().requires_grad, x.clone().grad_fn.name())",
    "set requires_grad on non-leaf": "x = torch.ones(1, requires_grad=True)\n(x * 2).requires_grad_(False)",
    "grad on tensor without grad": "x = torch.ones(1)\ny = torch.ones(1, requires_grad=True)\ntorch.autograd.grad((x * y).sum(), x)",
    "numel of empty and zero-size print": "print(torch.zeros(0).numel(), torch.zeros(3, 0).shape, torch.zeros(0).sum(), torch.zeros(0).mean())",
    "int tensor ops promote": "a = torch.tensor([1, 2])\nprint(a * 1.5, a + True, (a / a).dtype, a.float().mean(), torch.tensor([1, 2], dtype=torch.uint8) - 3)",
    "stack many": "print(torch.stack([torch.tensor(i) for i in range(3)]), torch.stack([torch.ones(2)] * 2, dim=1))",
    "split sizes error": "torch.arange(5).split([2, 2])",
    "repeat and expand print": "x = torch.tensor([1, 2])\nprint(x.repeat(2), x.expand(2, 2), x.repeat_interleave(2), x.tile((2,)))",
    "optimizer zero_grad default": "p = nn.Parameter(torch.ones(1))\np.grad = torch.ones(1)\no = torch.optim.SGD([p], lr=1.)\no.zero_grad()\nprint(p.grad)",
    "optimizer add_param_group": "o = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\n"
                                 "o.add_param_group({'params': [nn.Parameter(torch.ones(2))], 'lr': 0.5})\nprint(o)",
}

# preludes later sweeps put before their snippets: a file to save into, and warnings printed one a line
SAVE_PRELUDE = "import tempfile, os, io\nd = tempfile.mkdtemp()\npath = os.path.join(d, 'f.pt')\n"
WARN_PRELUDE = ("def show_warnings(fn):\n    with warnings.catch_warnings(record=True) as caught:\n"
                "        warnings.simplefilter('always')\n        fn()\n"
                "    for w in caught:\n        print(w.category.__name__, str(w.message).splitlines()[0][:300])\n")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def run(source: str):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    out = io.StringIO()
    error = None
    namespace = {"torch": torch, "nn": nn, "F": F, "warnings": warnings, "__name__": "__main__"}
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(source, "<snippet>", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - the snippet's error is what is compared
            error = [type(exc).__name__, _ADDRESS.sub("0x...", str(exc))]
    return {"out": _ADDRESS.sub("0x...", out.getvalue()), "error": error}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
