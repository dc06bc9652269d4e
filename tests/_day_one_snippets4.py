"""The fourth sweep of day-one snippets: the official tutorials read line by line (Learn the Basics with
FashionMNIST-shaped fake data, the 60-minute blitz, autograd mechanics, "What is torch.nn really?", saving
and loading, data loading), the most asked first-week questions, the common error messages, Tensor
operators with non-tensor operands, in-place writes to expanded tensors, scheduler and grad-mode
corners, and where the common warnings point (the file and line a user sees).
Run by ``tests/test_day_one_identity.py`` like ``_day_one_snippets.py``: once under real torch
(``python THIS``) and once under ``hookgrad run THIS``; printed text and final exception must match."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _day_one_snippets import SAVE_PRELUDE as _SAVE, WARN_PRELUDE as _WARN, run  # noqa: E402
# where a warning points: the snippet's own line ('<snippet>' and its number), as torch's stacklevel gives
# it, or the library's code (a line of torch's own files, which hookgrad cannot name)
_WHERE = ("def show_where(fn):\n    with warnings.catch_warnings(record=True) as caught:\n"
          "        warnings.simplefilter('always')\n        fn()\n"
          "    for w in caught:\n        where = (w.filename, w.lineno) if w.filename == '<snippet>' else 'the library'\n"
          "        print(w.category.__name__, where, str(w.message)[:60])\n")
# FashionMNIST-shaped fake data: 1x28x28 images, ten classes
_FASHION = ("labels_map = {0: 'T-Shirt', 1: 'Trouser', 2: 'Pullover', 3: 'Dress', 4: 'Coat', 5: 'Sandal', 6: 'Shirt', "
            "7: 'Sneaker', 8: 'Bag', 9: 'Ankle Boot'}\n"
            "class FakeFashion(torch.utils.data.Dataset):\n"
            "    def __init__(self, n, transform=None, target_transform=None):\n"
            "        g = torch.Generator().manual_seed(n)\n"
            "        self.images = (torch.rand(n, 28, 28, generator=g) * 255).to(torch.uint8)\n"
            "        self.targets = torch.randint(0, 10, (n,), generator=g)\n"
            "        self.transform, self.target_transform = transform, target_transform\n"
            "    def __len__(self):\n        return len(self.targets)\n"
            "    def __getitem__(self, idx):\n"
            "        image, label = self.images[idx].unsqueeze(0).float() / 255, int(self.targets[idx])\n"
            "        if self.transform:\n            image = self.transform(image)\n"
            "        if self.target_transform:\n            label = self.target_transform(label)\n"
            "        return image, label\n")
_NET = ("class NeuralNetwork(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.flatten = nn.Flatten()\n        self.linear_relu_stack = nn.Sequential(nn.Linear(28*28, 64), nn.ReLU(), "
        "nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))\n"
        "    def forward(self, x):\n        x = self.flatten(x)\n        logits = self.linear_relu_stack(x)\n        return logits\n")

SNIPPETS = {
    # ---- operators with a non-tensor operand ----------------------------------------------------------
    "numpy scalar on the left": "import numpy as np\nt = torch.tensor([1., 2.])\nprint(np.float64(2) * t, np.float32(3) + t, np.int64(5) - t, np.float64(1) / t, "
                                "type(np.float64(2) * t).__name__, (np.int64(2) * torch.tensor([1, 2])).dtype)",
    "numpy scalar on the right": "import numpy as np\nt = torch.tensor([1, 2])\nprint(t * np.int32(3), t + np.float64(0.5), t ** np.int64(2), t // np.int64(2), t & np.int64(3), "
                                 "(t * np.float16(2)).dtype)",
    "numpy array on the left of a tensor": "import numpy as np\nt = torch.tensor([1., 2.])\nprint(t + np.array([1., 1.]), np.array([1., 3.]) == t, t == np.array([1., 3.]))\nnp.array([1., 1.]) + t",
    "numpy array times a tensor": "import numpy as np\nnp.ones(2) * torch.ones(2)",
    "numpy function of a tensor": "import numpy as np\nx = np.sin(torch.tensor([0., 1.]))\nprint(type(x).__name__, x, np.exp(torch.zeros(2)), np.greater(torch.tensor([1., 3.]), 2))",
    "list plus tensor": "[1] + torch.tensor([1, 2])",
    "tensor plus list": "torch.tensor([1, 2]) + [1, 2]",
    "list times integer tensor repeats": "print([1, 2] * torch.tensor(2), torch.tensor(3) * [0], (1, 2) * torch.tensor(2))",
    "list times float tensor": "[1, 2] * torch.tensor(2.)",
    "tensor compared with None": "t = torch.tensor([1., 2.])\nprint(t == None, t != None, t is None, None == t, t == 'a', t == [1., 2.], t != (1, 2))",
    "tensor ordered with None": "torch.ones(2) < None",
    "tensor in a list": "a, b = torch.tensor([1.]), torch.tensor([2.])\nprint(a in [a, b], torch.tensor([2.]) in [a, b], 2. in torch.tensor([1., 2.]), 3 in torch.arange(3), "
                        "torch.tensor(1) in torch.arange(3))",
    "tensor in list of multi-element tensors": "a = torch.ones(2)\nprint(a in [a])\ntorch.zeros(2) in [a]",
    "list in tensor": "[1, 2] in torch.arange(3)",
    "string in tensor": "'a' in torch.arange(3)",
    "tensor plus None": "torch.ones(2) + None",
    "None times tensor": "None * torch.ones(2)",
    "tensor plus string": "torch.ones(2) + 'a'",
    "tensor matmul number": "torch.ones(2, 2) @ 2",
    "tensor matmul list": "torch.ones(2) @ [1., 2.]",
    "tensor in-place plus list": "t = torch.ones(2)\nt += [1, 2]",
    "tensor in-place plus numpy array rebinds": "import numpy as np\nt = torch.ones(2)\nu = t\nt += np.ones(2)\nprint(t, t is u, u)",
    "matmul in place rebinds": "a = torch.ones(2, 2)\nb = a\na @= torch.ones(2, 2) * 2\nprint(a, b, a is b)",
    "float operand in place on int": "x = torch.tensor([1, 2])\nx |= 1\nprint(x)\nx &= 1.5",
    "invert of a float tensor": "~torch.tensor([1., 0.])",
    "bitwise of a float tensor": "torch.tensor([1., 0.]) & 1",
    "complex scalar ordering": "torch.ones(2) < 1j",
    "complex scalar remainder": "torch.ones(2) % 1j",
    "bool tensor with numpy bool": "import numpy as np\nprint(torch.tensor([True, False]) & True, torch.tensor([1, 2]) * True, torch.tensor([True]) | np.bool_(False))",
    "Fraction and Decimal operands": "from fractions import Fraction\nprint(torch.tensor([1., 2.]) * float(Fraction(1, 2)))\ntorch.tensor([1., 2.]) * Fraction(1, 2)",
    "Size plus tensor": "torch.Size([2]) + torch.ones(1)",
    # ---- in-place writes to expanded and overlapping tensors --------------------------------------------
    "fill_ on expanded": "x = torch.zeros(1, 3).expand(2, 3)\nx.fill_(7)\nprint(x, x.stride())",
    "zero_ on expanded": "base = torch.ones(3)\nx = base.expand(2, 3)\nx.zero_()\nprint(x, base)",
    "copy_ into expanded": "x = torch.zeros(3).expand(2, 3)\nx.copy_(torch.ones(2, 3))",
    "mul_ on expanded": "torch.ones(1).expand(3).mul_(2)",
    "normal_ on expanded": "torch.zeros(1).expand(3).normal_()",
    "setitem slice of expanded": "x = torch.zeros(3).expand(2, 3)\nx[:, 0] = 1",
    "fill_ of expanded with grad": "a = torch.zeros(1, requires_grad=True)\nx = a.expand(3)\nx.fill_(1)",
    "masked_fill_ on expanded": "torch.zeros(1, 3).expand(2, 3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 1.)",
    "in-place on a self-overlapping as_strided": "x = torch.zeros(4).as_strided((3, 2), (1, 1))\nx.add_(1)",
    "copy_ between overlapping views": "x = torch.arange(6.)\nx[1:].copy_(x[:-1])\nprint(x)",
    "expand then clone then in-place": "x = torch.zeros(3).expand(2, 3).clone()\nx.add_(1)\nx[0, 0] = 5\nprint(x)",
    # ---- error messages a newcomer meets -------------------------------------------------------------
    "linear mat1 mat2 mismatch": "nn.Linear(784, 10)(torch.ones(4, 28, 28))",
    "linear mismatch after flatten forgotten": "m = nn.Sequential(nn.Linear(28 * 28, 10))\nm(torch.ones(8, 1, 28, 28))",
    "cross_entropy with float class targets": "F.cross_entropy(torch.randn(3, 5), torch.tensor([1., 0., 4.]))",
    "cross_entropy with int32 targets": "F.cross_entropy(torch.randn(3, 5), torch.tensor([1, 0, 4], dtype=torch.int32))",
    "cross_entropy with one-hot long targets": "F.cross_entropy(torch.randn(3, 5), F.one_hot(torch.tensor([1, 0, 4]), 5))",
    "nll_loss with 1-d input": "F.nll_loss(torch.randn(5), torch.tensor(1))",
    "mse with long target": "F.mse_loss(torch.ones(3), torch.tensor([1, 2, 3]))",
    "mse with double target": "F.mse_loss(torch.ones(3), torch.ones(3, dtype=torch.float64))",
    "mse with long input and target": "F.mse_loss(torch.tensor([1, 2]), torch.tensor([1, 3]))",
    "bce with long target": "F.binary_cross_entropy(torch.sigmoid(torch.zeros(2)), torch.tensor([0, 1]))",
    "bce_with_logits int target": "F.binary_cross_entropy_with_logits(torch.zeros(2), torch.tensor([0, 1]))",
    "element 0 does not require grad": "x = torch.ones(2)\nloss = (x * 2).sum()\nloss.backward()",
    "element 0 after detach": "w = torch.ones(2, requires_grad=True)\nloss = (w * 2).detach().sum()\nloss.backward()",
    "element 0 after item rebuilt": "w = torch.ones(2, requires_grad=True)\nloss = torch.tensor((w * 2).sum().item())\nloss.backward()",
    "backward through the graph a second time sigmoid": "x = torch.ones(3, requires_grad=True)\ny = torch.sigmoid(x).sum()\ny.backward()\ny.backward()",
    "backward second time through shared hidden": "w = torch.ones(2, requires_grad=True)\nh = w.exp()\n(h * 2).sum().backward()\n(h * 3).sum().backward()",
    "leaf in-place add_": "w = torch.ones(2, requires_grad=True)\nw.add_(1)",
    "leaf in-place via index": "w = torch.ones(2, requires_grad=True)\nw[0] = 0",
    "leaf update without no_grad": "w = torch.ones(2, requires_grad=True)\n(w * 2).sum().backward()\nw -= 0.1 * w.grad",
    "modified by inplace exp": "x = torch.ones(3, requires_grad=True)\ny = x.exp()\ny.add_(1)\ny.sum().backward()",
    "modified by inplace relu_ version numbers": "x = torch.randn(3, requires_grad=True)\ny = torch.sigmoid(x)\nz = y * 2\ny.relu_()\ny.mul_(2)\nz.sum().backward()\nprint(x.grad)\n"
                                                 "w = torch.randn(3, requires_grad=True)\na = w.tanh()\nb = a.sum()\na.mul_(3)\nb.backward()",
    "modified by inplace of a saved input": "x = torch.ones(3, requires_grad=True)\ny = x * 1\nz = y * y\ny[0] = 5\nz.sum().backward()",
    "modified by inplace of a weight": "m = nn.Linear(2, 2)\nout = m(torch.ones(1, 2) * 2).pow(2).sum()\nwith torch.no_grad():\n    m.weight.mul_(2)\nout.backward()",
    "retain_graph then inplace error": "x = torch.ones(2, requires_grad=True)\ny = x.sin()\nl = y.sum()\nl.backward(retain_graph=True)\ny.add_(1)\nl.backward()",
    "can't call numpy on requires_grad": "(torch.ones(2, requires_grad=True) * 2).cpu().numpy()",
    "grad can be implicitly created only for scalar": "(torch.ones(2, requires_grad=True) * 2).backward()",
    "expected scalar type mm": "torch.mm(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.float64))",
    "conv2d input type double weight float": "nn.Conv2d(1, 1, 3)(torch.ones(1, 1, 5, 5, dtype=torch.float64))",
    "embedding with float indices": "nn.Embedding(10, 3)(torch.tensor([1., 2.]))",
    "view size not compatible wording": "torch.ones(4, 3).t().view(12)",
    "stack expects equal size": "torch.stack([torch.ones(2, 3), torch.ones(3, 2)], dim=1)",
    "index out of bounds wording": "torch.ones(3)[5]",
    "batchnorm expected more than 1 value": "nn.BatchNorm1d(3)(torch.ones(1, 3))",
    "LSTM input must have 3 dimensions": "nn.LSTM(4, 8)(torch.ones(4, 4, 4, 4))",
    "RNN input size mismatch": "nn.GRU(4, 8)(torch.ones(5, 3, 6))",
    "target size vs input size in bce": "nn.BCELoss()(torch.sigmoid(torch.zeros(3, 1)), torch.ones(3))",
    # ---- torch.Tensor vs torch.tensor --------------------------------------------------------------------
    "Tensor vs tensor of a list": "print(torch.Tensor([1, 2]), torch.tensor([1, 2]), torch.Tensor([1, 2]).dtype, torch.tensor([1, 2]).dtype)",
    "Tensor with sizes": "print(torch.Tensor(2, 3).shape, torch.Tensor().shape, torch.Tensor(0).shape, torch.Tensor(torch.Size([2])).shape)",
    "Tensor of a scalar": "print(torch.Tensor(3).shape, torch.tensor(3).shape, torch.Tensor([3]).shape)",
    "Tensor of a float": "torch.Tensor(2.5)",
    "Tensor with dtype keyword": "torch.Tensor([1, 2], dtype=torch.int64)",
    "tensor of a tensor warns": _WARN + "x = torch.ones(2)\nshow_warnings(lambda: print(torch.tensor(x)))",
    "Tensor of a tensor shares": "x = torch.ones(2)\ny = torch.Tensor(x)\ny[0] = 5\nprint(x, y is x)",
    "Tensor of a long tensor": "torch.Tensor(torch.tensor([1, 2]))",
    "FloatTensor and LongTensor": "print(torch.FloatTensor([1, 2]), torch.LongTensor([1.7, 2]), torch.LongTensor(2).shape, torch.BoolTensor([1, 0]))",
    # ---- schedulers --------------------------------------------------------------------------------------------
    "scheduler step before optimizer step warning": _WARN + "p = nn.Parameter(torch.ones(1))\nopt = torch.optim.SGD([p], lr=0.1)\ns = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
                                                    "show_warnings(s.step)\nprint(s.get_last_lr())",
    "scheduler right order no warning": _WARN + "p = nn.Parameter(torch.ones(1))\nopt = torch.optim.SGD([p], lr=0.1)\ns = torch.optim.lr_scheduler.ExponentialLR(opt, 0.5)\n"
                                        "def step():\n    p.grad = torch.ones(1)\n    opt.step()\n    s.step()\nshow_warnings(step)\nshow_warnings(step)\nprint(s.get_last_lr(), opt.param_groups[0]['lr'])",
    "scheduler epoch argument deprecated": _WARN + "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ns = torch.optim.lr_scheduler.StepLR(opt, 2)\n"
                                           "opt.step()\nshow_warnings(lambda: s.step(3))\nprint(s.get_last_lr())",
    "get_lr outside step warning": _WARN + "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ns = torch.optim.lr_scheduler.StepLR(opt, 2)\nshow_warnings(lambda: print(s.get_lr()))",
    "scheduler of two groups": "p, q = nn.Parameter(torch.ones(1)), nn.Parameter(torch.ones(1))\nopt = torch.optim.SGD([{'params': [p]}, {'params': [q], 'lr': 1.0}], lr=0.1)\n"
                               "s = torch.optim.lr_scheduler.MultiStepLR(opt, [1, 3], gamma=0.5)\nfor _ in range(4):\n    opt.step()\n    s.step()\n    print(s.get_last_lr())",
    "ReduceLROnPlateau without metric": "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ns = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\ns.step()",
    "scheduler last_epoch without initial_lr": "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ntorch.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)",
    # ---- eval, no_grad, inference_mode ----------------------------------------------------------------------
    "eval changes dropout and batchnorm": "torch.manual_seed(0)\nm = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Dropout(0.5))\nx = torch.randn(4, 3)\n"
                                          "a = m(x)\nm.eval()\nb = m(x)\nprint(a.requires_grad, b.requires_grad, m.training, m[1].training, m[1].num_batches_tracked, torch.equal(b, m(x)))",
    "eval does not turn off grad": "m = nn.Linear(2, 1).eval()\ny = m(torch.ones(1, 2))\nprint(y.requires_grad, y.grad_fn.name(), m.training)",
    "train(False) and returned module": "m = nn.Sequential(nn.Dropout())\nprint(m.train(False) is m, m.training, m[0].training, m.eval().train().training)",
    "train with non-bool": "nn.Linear(1, 1).train('yes')",
    "no_grad as decorator on a method": "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(2, 2)\n"
                                        "    @torch.no_grad()\n    def predict(self, x):\n        return self.l(x)\nm = M()\nprint(m.predict(torch.ones(1, 2)).requires_grad, m.l(torch.ones(1, 2)).requires_grad)",
    "no_grad decorator without parentheses": "@torch.no_grad\ndef f(x):\n    return x * 2\nprint(f(torch.ones(1, requires_grad=True)).requires_grad, f.__name__)",
    "no_grad decorator on a generator": "@torch.no_grad()\ndef gen(x):\n    for i in range(2):\n        yield x * i\nprint([y.requires_grad for y in gen(torch.ones(1, requires_grad=True))], torch.is_grad_enabled())",
    "enable_grad decorator inside no_grad": "@torch.enable_grad()\ndef f(x):\n    return x * 2\nwith torch.no_grad():\n    y = f(torch.ones(1, requires_grad=True))\nprint(y.requires_grad, torch.is_grad_enabled())",
    "set_grad_enabled as decorator and function": "@torch.set_grad_enabled(False)\ndef f(x):\n    return x * 2\nprint(f(torch.ones(1, requires_grad=True)).requires_grad)\n"
                                                  "torch.set_grad_enabled(False)\nprint(torch.is_grad_enabled())\ntorch.set_grad_enabled(True)\nprint(torch.is_grad_enabled())",
    "inference_mode decorator": "@torch.inference_mode()\ndef f(x):\n    return x * 2\ny = f(torch.ones(2))\nprint(y.is_inference(), y.requires_grad, torch.is_inference_mode_enabled())",
    "inference tensor saved for backward": "with torch.inference_mode():\n    x = torch.ones(2)\nw = torch.ones(2, requires_grad=True)\n(w * x).sum().backward()\nprint(w.grad)\n"
                                           "y = torch.ones(2, requires_grad=True)\n(x * y).exp().sum().backward()\nprint(y.grad)\nz = x.clone()\nprint(z.is_inference())",
    "inference tensor requires_grad_ error": "with torch.inference_mode():\n    x = torch.ones(2)\nx.requires_grad_(True)",
    "inference tensor saved by mul backward": "with torch.inference_mode():\n    x = torch.ones(2)\nw = torch.ones(2, requires_grad=True)\ny = x.mul(w)\nprint(y.requires_grad)\nx2 = torch.ones(2, requires_grad=True)\nz = x2.mul(x)\nz.sum().backward()\nprint(x2.grad)",
    "inference tensor view outside": "with torch.inference_mode():\n    x = torch.ones(2, 2)\nv = x[0]\nprint(v.is_inference())\nv.add_(1)",
    "inference_mode False inside": "with torch.inference_mode():\n    with torch.inference_mode(False):\n        y = torch.ones(1, requires_grad=True) * 2\n    z = torch.ones(1)\nprint(y.requires_grad, y.is_inference(), z.is_inference())",
    # ---- Parameter, buffers, default dtype, finfo ----------------------------------------------------------
    "Parameter arithmetic results": "p = nn.Parameter(torch.tensor([1., 2.]))\nq = p * 2\nprint(type(q).__name__, q, type(p + p).__name__, type(p.data).__name__, type(p.detach()).__name__, "
                                    "type(-p).__name__, type(p[0]).__name__)",
    "Parameter of a Parameter and clone": "p = nn.Parameter(torch.ones(2))\nprint(type(nn.Parameter(p)).__name__, type(p.clone()).__name__, p.clone().is_leaf, type(torch.cat([p, p])).__name__)",
    "Parameter requires_grad false arithmetic": "p = nn.Parameter(torch.ones(2), requires_grad=False)\nprint(p, (p * 2).requires_grad, type(p * 2).__name__)",
    "Parameter in-place under no_grad": "p = nn.Parameter(torch.ones(2))\nwith torch.no_grad():\n    p.mul_(3)\n    p += 1\nprint(p, type(p).__name__, p.is_leaf, p.grad_fn)",
    "Parameter assign plain tensor": "m = nn.Conv2d(1, 1, 1)\nm.bias = torch.zeros(1)",
    "Parameter assign data": "m = nn.Linear(1, 1)\nm.weight.data = torch.ones(1, 1) * 3\nprint(m.weight, type(m.weight).__name__, [n for n, _ in m.named_parameters()])",
    "register_buffer persistence in state_dict": "m = nn.Module()\nm.register_buffer('a', torch.ones(1))\nm.register_buffer('b', torch.zeros(1), persistent=False)\nm.register_buffer('c', None)\n"
                                                 "print(list(m.state_dict()), [n for n, _ in m.named_buffers()], m.c)",
    "register_buffer load_state_dict non-persistent": "m = nn.Module()\nm.register_buffer('a', torch.ones(1))\nm.register_buffer('b', torch.zeros(1), persistent=False)\n"
                                                      "print(m.load_state_dict({'a': torch.full((1,), 5.)}), m.a, m.b)\nm.load_state_dict({'a': torch.ones(1), 'b': torch.ones(1)})",
    "register_buffer moves with to": "m = nn.Module()\nm.register_buffer('a', torch.ones(1))\nm.to(torch.float64)\nm.register_buffer('i', torch.ones(1, dtype=torch.int64))\nm.double()\nprint(m.a.dtype, m.i.dtype)",
    "register_buffer bad name": "m = nn.Module()\nm.register_buffer('a.b', torch.ones(1))",
    "register_buffer existing attribute": "m = nn.Linear(1, 1)\nm.register_buffer('weight', torch.ones(1))",
    "register_buffer non-tensor": "nn.Module().register_buffer('a', [1, 2])",
    "assign tensor to buffer name": "m = nn.Module()\nm.register_buffer('a', torch.ones(1))\nm.a = torch.zeros(2)\nprint(list(m.state_dict().items()))\nm.a = 3",
    "set_default_dtype effects": "torch.set_default_dtype(torch.float64)\nprint(torch.tensor([1.5]).dtype, torch.ones(1).dtype, torch.arange(3.).dtype, torch.tensor([1]).dtype, "
                                 "torch.tensor([1j]).dtype, nn.Linear(1, 1).weight.dtype, torch.get_default_dtype())\ntorch.set_default_dtype(torch.float32)",
    "set_default_dtype integer refused": "torch.set_default_dtype(torch.int32)",
    "set_default_dtype half": "torch.set_default_dtype(torch.float16)\nprint(torch.tensor([1.5]).dtype, torch.randn(1).dtype, (torch.ones(1, dtype=torch.int32) * 1.5).dtype)\ntorch.set_default_dtype(torch.float32)",
    "finfo fields": "for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):\n    f = torch.finfo(dt)\n    print(f.bits, f.eps, f.max, f.min, f.tiny, f.resolution, f.dtype)",
    "finfo repr and default": "print(torch.finfo(), torch.finfo(torch.float16))",
    "finfo of int error": "torch.finfo(torch.int32)",
    "iinfo fields": "for dt in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):\n    i = torch.iinfo(dt)\n    print(i.bits, i.min, i.max, i.dtype)\nprint(torch.iinfo(torch.int32))",
    "iinfo of float error": "torch.iinfo(torch.float32)",
    "is_tensor and friends": "import numpy as np\nprint(torch.is_tensor(torch.ones(1)), torch.is_tensor(nn.Parameter(torch.ones(1))), torch.is_tensor(np.ones(1)), torch.is_tensor([1]), "
                             "torch.is_floating_point(torch.ones(1)), torch.is_complex(torch.ones(1)), torch.is_nonzero(torch.tensor([1])), torch.is_storage(torch.ones(1)))",
    "is_nonzero of many": "torch.is_nonzero(torch.ones(2))",
    "numel dim size forms": "x = torch.ones(2, 3, 4)\nprint(x.size(-1), x.size(0), x.size()[-2:], x.shape[-1], x.dim(), x.ndimension(), torch.numel(x), x[0].numel(), torch.ones(()).dim(), torch.ones(()).numel())",
    "size dim out of range negative": "torch.ones(2, 3).size(-3)",
    "size with keyword and Size methods": "s = torch.ones(2, 3).size()\nprint(torch.ones(2, 3).size(dim=1), s.numel(), s.count(3), s.index(3), list(s), tuple(s), s == (2, 3), s[::-1])",
    # ---- Learn the Basics: tensors ------------------------------------------------------------------------
    "basics tensors attributes": "tensor = torch.rand(3, 4)\nprint(f'Shape of tensor: {tensor.shape}')\nprint(f'Datatype of tensor: {tensor.dtype}')\nprint(f'Device tensor is stored on: {tensor.device}')",
    "basics tensors from another": "x_data = torch.tensor([[1, 2], [3, 4]])\nx_ones = torch.ones_like(x_data)\nprint(f'Ones Tensor: \\n {x_ones} \\n')\n"
                                   "x_rand = torch.rand_like(x_data, dtype=torch.float)\nprint(f'Random Tensor: \\n {x_rand} \\n')",
    "basics tensors shape tuple": "shape = (2, 3,)\nprint(f'Random Tensor: \\n {torch.rand(shape)} \\n', f'Ones Tensor: \\n {torch.ones(shape)} \\n', f'Zeros Tensor: \\n {torch.zeros(shape)}')",
    "basics tensors indexing and joining": "tensor = torch.ones(4, 4)\nprint(f'First row: {tensor[0]}')\nprint(f'First column: {tensor[:, 0]}')\nprint(f'Last column: {tensor[..., -1]}')\n"
                                           "tensor[:, 1] = 0\nprint(tensor)\nt1 = torch.cat([tensor, tensor, tensor], dim=1)\nprint(t1)",
    "basics tensors arithmetic": "tensor = torch.ones(4, 4)\ntensor[:, 1] = 0\ny1 = tensor @ tensor.T\ny2 = tensor.matmul(tensor.T)\ny3 = torch.rand_like(y1)\ntorch.matmul(tensor, tensor.T, out=y3)\n"
                                 "z1 = tensor * tensor\nz2 = tensor.mul(tensor)\nz3 = torch.rand_like(tensor)\ntorch.mul(tensor, tensor, out=z3)\nprint(y1, y3, z3, torch.equal(y1, y2), torch.equal(z1, z2))",
    "basics tensors single element and in-place": "tensor = torch.ones(4, 4)\ntensor[:, 1] = 0\nagg = tensor.sum()\nagg_item = agg.item()\nprint(agg_item, type(agg_item))\n"
                                                  "print(f'{tensor} \\n')\ntensor.add_(5)\nprint(tensor)",
    "basics tensors numpy bridge": "t = torch.ones(5)\nprint(f't: {t}')\nn = t.numpy()\nprint(f'n: {n}')\nt.add_(1)\nprint(f't: {t}')\nprint(f'n: {n}')\n"
                                   "import numpy as np\nn = np.ones(5)\nt = torch.from_numpy(n)\nnp.add(n, 1, out=n)\nprint(f't: {t}')\nprint(f'n: {n}', t.dtype)",
    # ---- Learn the Basics: datasets, dataloaders, transforms -------------------------------------------------
    "basics dataset iterate like figure": _FASHION + "training_data = FakeFashion(60)\ntorch.manual_seed(1)\nfor i in range(1, 4):\n"
                                          "    sample_idx = torch.randint(len(training_data), size=(1,)).item()\n    img, label = training_data[sample_idx]\n"
                                          "    print(sample_idx, labels_map[label], img.squeeze().shape, round(img.mean().item(), 4))",
    "basics dataloader batches": _FASHION + "train_dataloader = torch.utils.data.DataLoader(FakeFashion(64), batch_size=16, shuffle=True)\n"
                                 "train_features, train_labels = next(iter(train_dataloader))\nprint(f'Feature batch shape: {train_features.size()}')\n"
                                 "print(f'Labels batch shape: {train_labels.size()}')\nimg = train_features[0].squeeze()\nlabel = train_labels[0]\nprint(img.shape, f'Label: {label}')",
    "basics transforms one-hot target": _FASHION + "ds = FakeFashion(4, target_transform=lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))\n"
                                        "img, target = ds[0]\nprint(target, target.dtype, img.dtype, img.max() <= 1)",
    "basics transforms scatter_ index must be tensor": "torch.zeros(10).scatter_(0, 3, value=1)",
    "basics custom image dataset csv": "import io, csv\nclass CustomImageDataset(torch.utils.data.Dataset):\n    def __init__(self, rows, transform=None):\n"
                                       "        self.img_labels = list(csv.reader(io.StringIO(rows)))\n        self.transform = transform\n    def __len__(self):\n"
                                       "        return len(self.img_labels)\n    def __getitem__(self, idx):\n        name, label = self.img_labels[idx]\n"
                                       "        image = torch.full((1, 2, 2), float(len(name)))\n        if self.transform:\n            image = self.transform(image)\n"
                                       "        return image, int(label)\nds = CustomImageDataset('tshirt1.jpg,0\\nankleboot999.jpg,9\\n', transform=lambda x: x / 10)\n"
                                       "print(len(ds), ds[1])\nprint(next(iter(torch.utils.data.DataLoader(ds, batch_size=2))))",
    # ---- Learn the Basics: model, autograd, optimization loop, save ---------------------------------------
    "basics build model": _NET + "torch.manual_seed(0)\nmodel = NeuralNetwork()\nprint(model)\nX = torch.rand(1, 28, 28)\nlogits = model(X)\n"
                          "pred_probab = nn.Softmax(dim=1)(logits)\ny_pred = pred_probab.argmax(1)\nprint(f'Predicted class: {y_pred}', pred_probab.shape)",
    "basics model layers walkthrough": "torch.manual_seed(0)\ninput_image = torch.rand(3, 28, 28)\nprint(input_image.size())\nflatten = nn.Flatten()\nflat_image = flatten(input_image)\n"
                                      "print(flat_image.size())\nlayer1 = nn.Linear(in_features=28*28, out_features=20)\nhidden1 = layer1(flat_image)\nprint(hidden1.size())\n"
                                      "print(f'Before ReLU: {hidden1[:, :3]}\\n\\n')\nhidden1 = nn.ReLU()(hidden1)\nprint(f'After ReLU: {hidden1[:, :3]}')\n"
                                      "seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))\nlogits = seq_modules(input_image)\n"
                                      "print(nn.Softmax(dim=1)(logits).sum(1))",
    "basics model parameters listing": _NET + "torch.manual_seed(0)\nmodel = NeuralNetwork()\nprint(f'Model structure: {model}\\n\\n')\n"
                                      "for name, param in model.named_parameters():\n    print(f'Layer: {name} | Size: {param.size()} | Values : {param[:2, :2] if param.dim() > 1 else param[:2]} \\n')",
    "basics autograd tutorial": "torch.manual_seed(0)\nx = torch.ones(5)\ny = torch.zeros(3)\nw = torch.randn(5, 3, requires_grad=True)\nb = torch.randn(3, requires_grad=True)\n"
                                "z = torch.matmul(x, w) + b\nloss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)\n"
                                "print(f'Gradient function for z = {z.grad_fn}'.split(' at ')[0])\nprint(f'Gradient function for loss = {loss.grad_fn}'.split(' at ')[0])\n"
                                "loss.backward()\nprint(w.grad)\nprint(b.grad)\nz = torch.matmul(x, w) + b\nprint(z.requires_grad)\nwith torch.no_grad():\n"
                                "    z = torch.matmul(x, w) + b\nprint(z.requires_grad)\nz_det = (torch.matmul(x, w) + b).detach()\nprint(z_det.requires_grad)",
    "basics autograd jacobian product": "inp = torch.eye(4, 5, requires_grad=True)\nout = (inp + 1).pow(2).t()\nout.backward(torch.ones_like(out), retain_graph=True)\n"
                                        "print(f'First call\\n{inp.grad}')\nout.backward(torch.ones_like(out), retain_graph=True)\nprint(f'\\nSecond call\\n{inp.grad}')\n"
                                        "inp.grad.zero_()\nout.backward(torch.ones_like(out), retain_graph=True)\nprint(f'\\nCall after zeroing gradients\\n{inp.grad}')",
    "basics optimization loop": _FASHION + _NET + "torch.manual_seed(0)\nmodel = NeuralNetwork()\nlearning_rate, batch_size, epochs = 1e-3, 8, 2\nloss_fn = nn.CrossEntropyLoss()\n"
                                "optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)\n"
                                "def train_loop(dataloader, model, loss_fn, optimizer):\n    size = len(dataloader.dataset)\n    model.train()\n"
                                "    for batch, (X, y) in enumerate(dataloader):\n        pred = model(X)\n        loss = loss_fn(pred, y)\n        loss.backward()\n"
                                "        optimizer.step()\n        optimizer.zero_grad()\n        if batch % 2 == 0:\n            loss, current = loss.item(), batch * batch_size + len(X)\n"
                                "            print(f'loss: {loss:>7f}  [{current:>5d}/{size:>5d}]')\n"
                                "def test_loop(dataloader, model, loss_fn):\n    model.eval()\n    size = len(dataloader.dataset)\n    num_batches = len(dataloader)\n"
                                "    test_loss, correct = 0, 0\n    with torch.no_grad():\n        for X, y in dataloader:\n            pred = model(X)\n"
                                "            test_loss += loss_fn(pred, y).item()\n            correct += (pred.argmax(1) == y).type(torch.float).sum().item()\n"
                                "    test_loss /= num_batches\n    correct /= size\n    print(f'Test Error: \\n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \\n')\n"
                                "train_dl = torch.utils.data.DataLoader(FakeFashion(32), batch_size=batch_size, shuffle=True)\n"
                                "test_dl = torch.utils.data.DataLoader(FakeFashion(16), batch_size=batch_size)\nfor t in range(epochs):\n"
                                "    print(f'Epoch {t+1}\\n-------------------------------')\n    train_loop(train_dl, model, loss_fn, optimizer)\n    test_loop(test_dl, model, loss_fn)\nprint('Done!')",
    "basics save and load weights": _SAVE + _NET + "torch.manual_seed(0)\nmodel = NeuralNetwork()\ntorch.save(model.state_dict(), path)\nmodel2 = NeuralNetwork()\n"
                                    "print(model2.load_state_dict(torch.load(path, weights_only=True)))\nmodel2.eval()\nprint(torch.equal(model2(torch.ones(1, 28, 28)), model(torch.ones(1, 28, 28))))",
    "basics save whole model weights_only True fails": _SAVE + "torch.save(nn.Sequential(nn.Linear(1, 1)), path)\ntorch.load(path, weights_only=True)",
    # ---- the 60-minute blitz ---------------------------------------------------------------------------------
    "blitz cifar net": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv1 = nn.Conv2d(3, 6, 5)\n        self.pool = nn.MaxPool2d(2, 2)\n"
                       "        self.conv2 = nn.Conv2d(6, 16, 5)\n        self.fc1 = nn.Linear(16 * 5 * 5, 120)\n        self.fc2 = nn.Linear(120, 84)\n        self.fc3 = nn.Linear(84, 10)\n"
                       "    def forward(self, x):\n        x = self.pool(F.relu(self.conv1(x)))\n        x = self.pool(F.relu(self.conv2(x)))\n        x = torch.flatten(x, 1)\n"
                       "        x = F.relu(self.fc1(x))\n        x = F.relu(self.fc2(x))\n        x = self.fc3(x)\n        return x\ntorch.manual_seed(0)\nnet = Net()\n"
                       "criterion = nn.CrossEntropyLoss()\noptimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)\nfor i in range(3):\n"
                       "    inputs, labels = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))\n    optimizer.zero_grad()\n    outputs = net(inputs)\n"
                       "    loss = criterion(outputs, labels)\n    loss.backward()\n    optimizer.step()\n    print(f'[1, {i + 1:5d}] loss: {loss.item():.3f}')\n"
                       "_, predicted = torch.max(outputs, 1)\nprint(predicted, sum(p.numel() for p in net.parameters()))",
    "blitz lenet params and zero_grad": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv1 = nn.Conv2d(1, 6, 5)\n        self.conv2 = nn.Conv2d(6, 16, 5)\n"
                                        "        self.fc1 = nn.Linear(16 * 5 * 5, 120)\n    def forward(self, input):\n        c1 = F.relu(self.conv1(input))\n        s2 = F.max_pool2d(c1, (2, 2))\n"
                                        "        c3 = F.relu(self.conv2(s2))\n        s4 = F.max_pool2d(c3, 2)\n        return self.fc1(torch.flatten(s4, 1))\ntorch.manual_seed(0)\nnet = Net()\n"
                                        "params = list(net.parameters())\nprint(len(params), params[0].size())\nout = net(torch.randn(1, 1, 32, 32))\nnet.zero_grad()\n"
                                        "out.backward(torch.randn(1, 120))\nprint(net.conv1.bias.grad is not None, out.grad_fn.name(), out.grad_fn.next_functions[0][0].name())",
    "blitz loss grad_fn chain": "torch.manual_seed(0)\noutput = nn.Linear(4, 10)(torch.randn(1, 4))\ntarget = torch.randn(10).view(1, -1)\nloss = nn.MSELoss()(output, target)\n"
                                "print(loss.grad_fn.name())\nprint(loss.grad_fn.next_functions[0][0].name())\nprint(loss.grad_fn.next_functions[0][0].next_functions[0][0].name())",
    "blitz manual sgd update": "torch.manual_seed(0)\nnet = nn.Linear(3, 1)\nloss = net(torch.ones(1, 3)).sum()\nloss.backward()\nlearning_rate = 0.01\nfor f in net.parameters():\n"
                               "    f.data.sub_(f.grad.data * learning_rate)\nprint(net.weight, net.bias)",
    "blitz autograd Q and external_grad": "a = torch.tensor([2., 3.], requires_grad=True)\nb = torch.tensor([6., 4.], requires_grad=True)\nQ = 3*a**3 - b**2\n"
                                          "external_grad = torch.tensor([1., 1.])\nQ.backward(gradient=external_grad)\nprint(9*a**2 == a.grad)\nprint(-2*b == b.grad)",
    "blitz finetune freeze": "torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\nmodel.fc = nn.Linear(4, 2)\nfor param in model.parameters():\n"
                             "    param.requires_grad = False\nmodel.fc = nn.Linear(4, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)\n"
                             "print([p.requires_grad for p in model.parameters()], len(optimizer.param_groups[0]['params']))",
    # ---- autograd mechanics --------------------------------------------------------------------------------------
    "mechanics requires_grad subgraph": "x = torch.randn(5, 5)\ny = torch.randn(5, 5)\nz = torch.randn((5, 5), requires_grad=True)\na = x + y\nprint(a.requires_grad)\nb = a + z\nprint(b.requires_grad)",
    "mechanics grad modes table": "x = torch.ones(1, requires_grad=True)\nwith torch.no_grad():\n    a = x * 2\nwith torch.inference_mode():\n    b = x * 2\nwith torch.enable_grad():\n    c = x * 2\n"
                                  "print(a.requires_grad, b.requires_grad, c.requires_grad, b.is_inference(), a.is_inference())",
    "mechanics saved tensors of exp and pow": "x = torch.randn(5, requires_grad=True)\ny = x.pow(2)\nprint(x.equal(y.grad_fn._saved_self), x is y.grad_fn._saved_self)\n"
                                              "y = x.exp()\nprint(y.equal(y.grad_fn._saved_result), y is y.grad_fn._saved_result)",
    "mechanics complex gradient": "z = torch.tensor(1 + 2j, requires_grad=True)\nl = (z * z.conj()).real\nl.backward()\nprint(z.grad)",
    "mechanics saved tensor hooks": "def pack_hook(x):\n    print('Packing', x)\n    return x\ndef unpack_hook(x):\n    print('Unpacking', x)\n    return x\n"
                                    "a = torch.ones(5, requires_grad=True)\nb = torch.ones(5, requires_grad=True) * 2\nwith torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):\n"
                                    "    y = a * b\ny.sum().backward()",
    "mechanics version counter": "x = torch.ones(2, requires_grad=True)\ny = x * 1\nprint(y._version)\ny.add_(1)\ny[0] = 3\nprint(y._version, y[0]._version, y.detach()._version)",
    # ---- What is torch.nn really? -----------------------------------------------------------------------------
    "nn really manual model": "import math\ntorch.manual_seed(0)\nx_train, y_train = torch.rand(64, 784), torch.randint(0, 10, (64,))\n"
                              "weights = torch.randn(784, 10) / math.sqrt(784)\nweights.requires_grad_()\nbias = torch.zeros(10, requires_grad=True)\n"
                              "def log_softmax(x):\n    return x - x.exp().sum(-1).log().unsqueeze(-1)\ndef model(xb):\n    return log_softmax(xb @ weights + bias)\n"
                              "bs = 16\nxb = x_train[0:bs]\npreds = model(xb)\nprint(preds[0], preds.shape)\n"
                              "def nll(input, target):\n    return -input[range(target.shape[0]), target].mean()\nloss_func = nll\nyb = y_train[0:bs]\nprint(loss_func(preds, yb))\n"
                              "def accuracy(out, yb):\n    preds = torch.argmax(out, dim=1)\n    return (preds == yb).float().mean()\nprint(accuracy(preds, yb))",
    "nn really manual training loop": "import math\ntorch.manual_seed(0)\nx_train, y_train = torch.rand(64, 784), torch.randint(0, 10, (64,))\n"
                                      "weights = torch.randn(784, 10) / math.sqrt(784)\nweights.requires_grad_()\nbias = torch.zeros(10, requires_grad=True)\n"
                                      "def model(xb):\n    return F.log_softmax(xb @ weights + bias, dim=-1)\nlr, epochs, bs, n = 0.05, 2, 16, 64\nfor epoch in range(epochs):\n"
                                      "    for i in range((n - 1) // bs + 1):\n        start_i = i * bs\n        end_i = start_i + bs\n        xb = x_train[start_i:end_i]\n"
                                      "        yb = y_train[start_i:end_i]\n        pred = model(xb)\n        loss = F.nll_loss(pred, yb)\n        loss.backward()\n"
                                      "        with torch.no_grad():\n            weights -= weights.grad * lr\n            bias -= bias.grad * lr\n            weights.grad.zero_()\n"
                                      "            bias.grad.zero_()\nprint(F.cross_entropy(x_train @ weights + bias, y_train), bias[:3])",
    "nn really Mnist_Logistic with Parameter": "import math\nclass Mnist_Logistic(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                                "        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))\n        self.bias = nn.Parameter(torch.zeros(10))\n"
                                                "    def forward(self, xb):\n        return xb @ self.weights + self.bias\ntorch.manual_seed(0)\nmodel = Mnist_Logistic()\n"
                                                "xb, yb = torch.rand(16, 784), torch.randint(0, 10, (16,))\nloss = F.cross_entropy(model(xb), yb)\nloss.backward()\n"
                                                "with torch.no_grad():\n    for p in model.parameters():\n        p -= p.grad * 0.5\n    model.zero_grad()\n"
                                                "print(F.cross_entropy(model(xb), yb), model.bias.grad)",
    "nn really fit with validation": "torch.manual_seed(0)\ntrain_ds = torch.utils.data.TensorDataset(torch.rand(48, 784), torch.randint(0, 10, (48,)))\n"
                                     "valid_ds = torch.utils.data.TensorDataset(torch.rand(16, 784), torch.randint(0, 10, (16,)))\n"
                                     "def get_data(train_ds, valid_ds, bs):\n    return (torch.utils.data.DataLoader(train_ds, batch_size=bs, shuffle=True), "
                                     "torch.utils.data.DataLoader(valid_ds, batch_size=bs * 2))\n"
                                     "def loss_batch(model, loss_func, xb, yb, opt=None):\n    loss = loss_func(model(xb), yb)\n    if opt is not None:\n"
                                     "        loss.backward()\n        opt.step()\n        opt.zero_grad()\n    return loss.item(), len(xb)\n"
                                     "import numpy as np\ndef fit(epochs, model, loss_func, opt, train_dl, valid_dl):\n    for epoch in range(epochs):\n        model.train()\n"
                                     "        for xb, yb in train_dl:\n            loss_batch(model, loss_func, xb, yb, opt)\n        model.eval()\n        with torch.no_grad():\n"
                                     "            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])\n"
                                     "        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)\n        print(epoch, round(float(val_loss), 5))\n"
                                     "train_dl, valid_dl = get_data(train_ds, valid_ds, 8)\nmodel = nn.Linear(784, 10)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
                                     "fit(2, model, F.cross_entropy, opt, train_dl, valid_dl)",
    "nn really Lambda view cnn": "class Lambda(nn.Module):\n    def __init__(self, func):\n        super().__init__()\n        self.func = func\n    def forward(self, x):\n"
                                 "        return self.func(x)\ndef preprocess(x):\n    return x.view(-1, 1, 28, 28)\ntorch.manual_seed(0)\n"
                                 "model = nn.Sequential(Lambda(preprocess), nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(), "
                                 "nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(), "
                                 "nn.AdaptiveAvgPool2d(1), Lambda(lambda x: x.view(x.size(0), -1)))\nprint(model)\nout = model(torch.rand(4, 784))\n"
                                 "print(out.shape, out[0])\nopt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\nloss = F.cross_entropy(out, torch.tensor([1, 2, 3, 4]))\n"
                                 "loss.backward()\nopt.step()\nprint(loss)",
    "nn really WrappedDataLoader": "class WrappedDataLoader:\n    def __init__(self, dl, func):\n        self.dl = dl\n        self.func = func\n    def __len__(self):\n"
                                   "        return len(self.dl)\n    def __iter__(self):\n        for b in self.dl:\n            yield (self.func(*b))\n"
                                   "ds = torch.utils.data.TensorDataset(torch.arange(8.).view(4, 2), torch.arange(4))\n"
                                   "dl = WrappedDataLoader(torch.utils.data.DataLoader(ds, batch_size=3), lambda x, y: (x.view(-1, 1, 2), y))\nprint(len(dl), [(x.shape, y) for x, y in dl])",
    # ---- saving and loading ------------------------------------------------------------------------------------
    "saving checkpoint dict round trip": _SAVE + "torch.manual_seed(0)\nmodel = nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)\n"
                                         "model(torch.ones(1, 2)).sum().backward()\noptimizer.step()\nEPOCH, LOSS = 5, 0.4\n"
                                         "torch.save({'epoch': EPOCH, 'model_state_dict': model.state_dict(), 'optimizer_state_dict': optimizer.state_dict(), 'loss': LOSS}, path)\n"
                                         "model2 = nn.Linear(2, 1)\noptimizer2 = torch.optim.SGD(model2.parameters(), lr=0.1)\ncheckpoint = torch.load(path, weights_only=True)\n"
                                         "model2.load_state_dict(checkpoint['model_state_dict'])\noptimizer2.load_state_dict(checkpoint['optimizer_state_dict'])\n"
                                         "print(checkpoint['epoch'], checkpoint['loss'], optimizer2.state_dict()['param_groups'], optimizer2.state_dict()['state'])",
    "saving multiple models in one file": _SAVE + "torch.manual_seed(0)\nmodelA, modelB = nn.Linear(2, 2), nn.Linear(2, 1)\n"
                                          "torch.save({'modelA_state_dict': modelA.state_dict(), 'modelB_state_dict': modelB.state_dict()}, path)\n"
                                          "c = torch.load(path, weights_only=True)\nprint(sorted(c), list(c['modelB_state_dict'].items()))",
    "saving warmstart strict False": "torch.manual_seed(0)\nnetA = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))\nnetB = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2))\n"
                                     "netB.load_state_dict(netA.state_dict(), strict=False)",
    "saving warmstart filtered keys": "torch.manual_seed(0)\nnetA = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))\nnetB = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2), nn.Linear(2, 2))\n"
                                      "sd = {k: v for k, v in netA.state_dict().items() if k.startswith('0.')}\nr = netB.load_state_dict(sd, strict=False)\n"
                                      "print(r.missing_keys, r.unexpected_keys, torch.equal(netB[0].weight, netA[0].weight))",
    "saving map_location forms": _SAVE + "torch.save({'w': torch.ones(2)}, path)\nprint(torch.load(path, map_location='cpu'), torch.load(path, map_location=torch.device('cpu')), "
                                 "torch.load(path, map_location=lambda storage, loc: storage), torch.load(path, map_location={'cpu': 'cpu'}))",
    "saving to BytesIO and back": "import io\nbuf = io.BytesIO()\ntorch.save(nn.Linear(1, 1).state_dict(), buf)\nbuf.seek(0)\nsd = torch.load(buf)\nprint(list(sd), buf.tell() > 0)",
    "saving tensor list and nested": _SAVE + "x = torch.arange(4.)\ntorch.save([x, x[:2], {'a': (x, 1)}], path)\na, b, c = torch.load(path)\nb[0] = 9\nprint(a, c['a'][0] is a, c['a'][1])",
    "loading missing key error text": "m = nn.Linear(2, 1)\nsd = m.state_dict()\ndel sd['bias']\nsd['extra'] = torch.ones(1)\nm.load_state_dict(sd)",
    # ---- data loading tutorial ------------------------------------------------------------------------------
    "data loading transform classes": "import numpy as np\nclass Rescale:\n    def __init__(self, output_size):\n        assert isinstance(output_size, (int, tuple))\n"
                                      "        self.output_size = output_size\n    def __call__(self, sample):\n        image, landmarks = sample['image'], sample['landmarks']\n"
                                      "        return {'image': image[:self.output_size, :self.output_size], 'landmarks': landmarks * 0.5}\nclass ToTensor:\n"
                                      "    def __call__(self, sample):\n        image, landmarks = sample['image'], sample['landmarks']\n        image = image.transpose((2, 0, 1))\n"
                                      "        return {'image': torch.from_numpy(image), 'landmarks': torch.from_numpy(landmarks)}\n"
                                      "sample = {'image': np.arange(48, dtype=np.float64).reshape(4, 4, 3), 'landmarks': np.array([[2., 4.]])}\n"
                                      "for t in (Rescale(2), ToTensor()):\n    sample = t(sample)\nprint({k: (v.dtype, tuple(v.shape)) for k, v in sample.items()}, sample['image'][0])",
    "data loading dict samples batched": "class DS(torch.utils.data.Dataset):\n    def __len__(self):\n        return 5\n    def __getitem__(self, i):\n"
                                         "        return {'image': torch.full((2, 2), float(i)), 'landmarks': torch.tensor([[i, i + 1]]), 'name': f'img{i}.jpg'}\n"
                                         "for i_batch, sample_batched in enumerate(torch.utils.data.DataLoader(DS(), batch_size=2)):\n"
                                         "    print(i_batch, sample_batched['image'].size(), sample_batched['landmarks'].size(), sample_batched['name'])",
    "data loading numpy samples collated": "import numpy as np\nprint(next(iter(torch.utils.data.DataLoader([np.array([1., 2.]), np.array([3., 4.])], batch_size=2))), "
                                           "next(iter(torch.utils.data.DataLoader([(np.float32(1), 2), (np.float32(3), 4)], batch_size=2))))",
    "data loading sampler and batch_sampler": "bs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(7)), batch_size=3, drop_last=False)\n"
                                              "print(list(bs), len(bs))\nprint([b.tolist() for b in torch.utils.data.DataLoader(torch.arange(7) * 10, batch_sampler=bs)])",
    "data loading batch_sampler with batch_size error": "bs = torch.utils.data.BatchSampler(range(4), 2, False)\ntorch.utils.data.DataLoader(range(4), batch_size=2, batch_sampler=bs)",
    "data loading workers zero timeout error": "torch.utils.data.DataLoader(range(4), timeout=1)",
    "data loading prefetch without workers": "torch.utils.data.DataLoader(range(4), prefetch_factor=2)",
    # ---- first-week questions -----------------------------------------------------------------------------
    "count trainable parameters": "m = nn.Sequential(nn.Linear(10, 5), nn.BatchNorm1d(5), nn.Linear(5, 1))\nm[0].weight.requires_grad_(False)\n"
                                  "print(sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.parameters() if p.requires_grad), sum(b.numel() for b in m.buffers()))",
    "data vs detach difference": "a = torch.tensor([1., 2.], requires_grad=True)\nout = a.sigmoid()\nc = out.data\nc.zero_()\nprint(out, out.requires_grad, c.requires_grad)\n"
                                 "out.sum().backward()\nprint(a.grad)",
    "ModuleList vs python list registration": "class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = [nn.Linear(2, 2)]\n"
                                              "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = nn.ModuleList([nn.Linear(2, 2)])\n"
                                              "print(len(list(A().parameters())), len(list(B().parameters())), list(B().state_dict()), A())",
    "torch.max forms": "x = torch.tensor([[1, 5], [7, 3]])\nv, i = torch.max(x, 1)\nprint(v, i, torch.max(x), torch.max(x, 0, keepdim=True), torch.max(x, torch.tensor(4)), x.max(dim=1).values)",
    "accuracy with argmax and eq": "torch.manual_seed(0)\nout = torch.randn(6, 3)\ny = torch.tensor([0, 1, 2, 0, 1, 2])\ncorrect = (out.argmax(dim=1) == y).sum().item()\n"
                                   "print(correct, type(correct).__name__, correct / len(y), (out.argmax(1) == y).float().mean(), torch.sum(torch.argmax(out, 1) == y))",
    "weights init with apply xavier": "torch.manual_seed(0)\ndef init_weights(m):\n    if isinstance(m, nn.Linear):\n        torch.nn.init.xavier_uniform_(m.weight)\n        m.bias.data.fill_(0.01)\n"
                                      "net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))\nnet.apply(init_weights)\nprint(net[0].weight, net[1].bias)",
    "model to device idiom": "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nm = nn.Linear(2, 1).to(device)\nx = torch.ones(1, 2).to(device)\n"
                             "print(device, m(x).device, next(m.parameters()).device, x.is_cuda, x.device.type, x.get_device(), m(x).cpu().detach().numpy())",
    "accelerator idiom": "device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else 'cpu'\nprint(f'Using {device} device', torch.accelerator.is_available())",
    "softmax module vs function": "x = torch.tensor([[1., 2., 3.]])\nprint(nn.Softmax(dim=1)(x), F.softmax(x, dim=1), torch.softmax(x, 1), x.softmax(-1), nn.Softmax(dim=1))",
    "squeeze for single sample": "m = nn.Linear(3, 2)\nx = torch.ones(3)\nprint(m(x).shape, m(x.unsqueeze(0)).shape, m(x[None, :]).squeeze(0).shape)",
    "clone detach vs detach clone": "a = torch.ones(2, requires_grad=True)\nb = a.clone().detach()\nc = a.detach().clone()\nprint(b, c, b.requires_grad, b.is_leaf, b.data_ptr() != a.data_ptr())",
    "torch.tensor of list of tensors": "print(torch.tensor([torch.tensor(1.), torch.tensor(2.)]), torch.stack([torch.tensor(1.), torch.tensor(2.)]))\ntorch.tensor([torch.ones(2), torch.ones(2)])",
    "sum over dimension keepdim normalization": "x = torch.tensor([[1., 3.], [2., 2.]])\nprint(x / x.sum(dim=1, keepdim=True), x / x.sum(dim=1))\nx / x.sum(dim=1)[None]",
    "concatenate along new batch": "xs = [torch.ones(3) * i for i in range(3)]\nprint(torch.stack(xs).shape, torch.cat(xs).shape, torch.cat([x.unsqueeze(0) for x in xs]).shape, torch.vstack(xs).shape)",
    "repeat vs expand memory": "x = torch.tensor([[1], [2]])\ne = x.expand(2, 3)\nr = x.repeat(1, 3)\nprint(e.stride(), r.stride(), e.data_ptr() == x.data_ptr(), e.is_contiguous(), r.is_contiguous())",
    "permute then view error and fix": "x = torch.arange(24).view(2, 3, 4).permute(0, 2, 1)\nprint(x.contiguous().view(2, -1).shape, x.reshape(2, -1).shape)\nx.view(2, -1)",
    "gradient of a scalar function": "x = torch.tensor(3.0, requires_grad=True)\ny = x ** 2 + 2 * x\ny.backward()\nprint(x.grad, x.grad.item(), y.item())",
    "zero_grad forgotten accumulates": "torch.manual_seed(0)\nw = torch.ones(1, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\nfor _ in range(3):\n"
                                       "    loss = (w * 2).sum()\n    loss.backward()\n    print(w.grad)\n    opt.step()\nprint(w)",
    "requires_grad False vs no_grad output": "m = nn.Linear(2, 1)\nfor p in m.parameters():\n    p.requires_grad = False\nx = torch.ones(1, 2, requires_grad=True)\n"
                                             "print(m(x).requires_grad, m(torch.ones(1, 2)).requires_grad)",
    "set requires_grad on non-leaf error": "x = torch.ones(2, requires_grad=True)\ny = x * 2\ny.requires_grad = False",
    "one_hot encoding then argmax back": "y = torch.tensor([2, 0, 1])\noh = F.one_hot(y, num_classes=4)\nprint(oh, oh.dtype, oh.argmax(dim=1), oh.float().sum(0))",
    "random_split reproducible with generator": "ds = torch.utils.data.TensorDataset(torch.arange(10))\ntrain, val = torch.utils.data.random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(42))\n"
                                                "print(len(train), len(val), train.indices, val.indices)",
    "topk accuracy": "torch.manual_seed(0)\nout = torch.randn(4, 5)\ntarget = torch.tensor([1, 0, 3, 2])\n_, pred = out.topk(2, 1, True, True)\npred = pred.t()\n"
                     "correct = pred.eq(target.view(1, -1).expand_as(pred))\nprint(pred, correct, correct[:1].reshape(-1).float().sum(0, keepdim=True))",
    "early stopping state copy": "import copy\ntorch.manual_seed(0)\nm = nn.Linear(1, 1)\nbest = copy.deepcopy(m.state_dict())\nwith torch.no_grad():\n    m.weight.add_(1)\n"
                                 "m.load_state_dict(best)\nshallow = m.state_dict()\nwith torch.no_grad():\n    m.bias.add_(1)\nprint(torch.equal(shallow['bias'], m.bias), m.weight)",
    "lr of optimizer changed by hand": "opt = torch.optim.Adam([nn.Parameter(torch.ones(1))], lr=0.1)\nfor g in opt.param_groups:\n    g['lr'] = 0.01\nprint(opt.param_groups[0]['lr'], opt.defaults['lr'], opt)",
    "module buffers and parameters to half": "m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).half()\nprint(m[0].weight.dtype, m[1].running_mean.dtype, m[1].num_batches_tracked.dtype)",
    "fft of a real impulse": "print(torch.fft.fft(torch.tensor([1., 0., 0., 0.])), torch.fft.rfft(torch.tensor([1., 2., 3., 4.])))",
    # ---- where the common warnings point -------------------------------------------------------------------
    "warning place non-leaf grad": _WHERE + "a = torch.ones(2, requires_grad=True)\nb = a * 2\nshow_where(lambda: b.grad)",
    "warning place tensor of tensor": _WHERE + "x = torch.ones(2)\nshow_where(lambda: torch.tensor(x))",
    "warning place scheduler order": _WHERE + "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ns = torch.optim.lr_scheduler.StepLR(opt, 1)\nshow_where(lambda: s.step())",
    "warning place full backward hook": _WHERE + "m = nn.Linear(2, 2)\nm.register_full_backward_hook(lambda *a: None)\nshow_where(lambda: m(torch.ones(1, 2)).sum().backward())",
    "warning place deprecated size_average": _WHERE + "show_where(lambda: nn.MSELoss(size_average=False))",
    "warning place deprecated reduce": _WHERE + "show_where(lambda: F.mse_loss(torch.ones(1), torch.ones(1), reduce=False))",
    "warning place mse size mismatch": _WHERE + "show_where(lambda: F.mse_loss(torch.ones(2, 1), torch.ones(2)))",
    "warning place softmax implicit dim": _WHERE + "show_where(lambda: F.softmax(torch.ones(2, 2)))",
    "warning place clip_grad_norm deprecated": _WHERE + "p = nn.Parameter(torch.ones(1))\np.grad = torch.ones(1)\nshow_where(lambda: nn.utils.clip_grad_norm(p, 1.0))",
    "warning place init deprecated": _WHERE + "show_where(lambda: nn.init.normal(torch.empty(2)))",
    "warning place sigmoid deprecated": _WHERE + "show_where(lambda: F.sigmoid(torch.ones(1)))",
    "warning place float of grad tensor": _WHERE + "show_where(lambda: torch.ones(1, requires_grad=True).item())",
    "warning place upsample align_corners": _WHERE + "show_where(lambda: F.interpolate(torch.ones(1, 1, 2, 2), scale_factor=2, mode='bilinear'))",
    "warning place dropout2d on 3-d": _WHERE + "show_where(lambda: nn.Dropout2d()(torch.ones(2, 3, 4)))",
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
