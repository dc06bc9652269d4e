"""The sixth sweep of day-one snippets: what a newcomer types in the first days after the tutorials, as
StackOverflow questions ask it (printing with options and in containers, promotion and casting rules,
indexing idioms, the wording of broadcast/reshape/in-place errors, seeded random numbers past the
vectorised sizes, module registries and printing, optimizer and scheduler state, data loading, saving,
gradient accumulation, device strings naming CUDA).
Run by ``tests/test_day_one_identity.py`` like ``_day_one_snippets.py``: once under real torch
(``python THIS``) and once under ``hookgrad run THIS``; printed text and final exception must match."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _day_one_snippets import SAVE_PRELUDE as _SAVE, WARN_PRELUDE as _WARN, run  # noqa: E402

_NET = ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(1, 4, 3)\n        self.bn = nn.BatchNorm2d(4)\n"
        "        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 10))\n"
        "    def forward(self, x):\n        return self.head(torch.relu(self.bn(self.conv(x))))\n")

SNIPPETS = {
    # ---- printing ---------------------------------------------------------------------------------------
    "show a float32 sum that is not exact": "a = torch.tensor(0.1) + torch.tensor(0.2)\nprint(a, a.item(), a == 0.3, torch.tensor(0.1, dtype=torch.float64) + 0.2)",
    "show a float64 tensor at precision 8": "torch.set_printoptions(precision=8)\nprint(torch.tensor([1 / 3, 2 / 3], dtype=torch.float64), torch.tensor([1 / 3]))\ntorch.set_printoptions(profile='default')",
    "show integers under sci_mode True": "torch.set_printoptions(sci_mode=True)\nprint(torch.tensor([1, 1000000]), torch.tensor([True]), torch.tensor([0.5, 2.]))\ntorch.set_printoptions(profile='default', sci_mode=None)",
    "show half numbers needing scientific": "print(torch.tensor([1e-4, 1e4], dtype=torch.float16), torch.tensor([6e-5, 1.], dtype=torch.half), torch.tensor([1e-3, 1.], dtype=torch.bfloat16))",
    "show complex numbers needing scientific": "print(torch.tensor([1e-6 + 1e6j, 1 + 1j]), torch.tensor([0.5 - 2j], dtype=torch.complex128))",
    "show the repr of Size and empty Size": "print(torch.Size([]), torch.Size([2, 3]), torch.ones(()).shape, torch.zeros(2, 3).size(), repr(torch.ones(1).shape), str(torch.Size((4,))))",
    "show a random matrix in sci notation": "torch.manual_seed(0)\nprint(torch.randn(3, 3) * 1e5, torch.rand(2, 2) / 1e5)",
    "show a Parameter list repr": "pl = nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(1, 3))])\nprint(pl, len(pl), pl[0])",
    # ---- dtype promotion and casting ---------------------------------------------------------------------
    "promote_types and result_type table": "pairs = [(torch.uint8, torch.int8), (torch.int32, torch.int64), (torch.float16, torch.bfloat16), (torch.bool, torch.uint8), (torch.int64, torch.float16), (torch.float32, torch.complex64), (torch.float64, torch.complex64)]\nprint([torch.promote_types(a, b) for a, b in pairs])\n"
                                            "print(torch.result_type(torch.tensor([1]), 1.5), torch.result_type(torch.tensor([1], dtype=torch.int8), 1000), torch.result_type(2, 3.), torch.result_type(torch.tensor(1.), torch.tensor([1], dtype=torch.int8)))",
    "can_cast rules": "print(torch.can_cast(torch.float32, torch.int32), torch.can_cast(torch.int32, torch.float32), torch.can_cast(torch.int64, torch.uint8), torch.can_cast(torch.complex64, torch.float64), torch.can_cast(torch.bool, torch.int8), torch.can_cast(torch.float16, torch.float64))",
    "mixed integer widths": "a = torch.tensor([100], dtype=torch.uint8)\nb = torch.tensor([-100], dtype=torch.int8)\nprint(a + b, (a + b).dtype, a * torch.tensor([3], dtype=torch.int32), (a > b), torch.tensor([1], dtype=torch.int16) + torch.tensor([1], dtype=torch.int32))",
    "int tensor with float tensor on the right": "i = torch.tensor([1, 2, 3])\nf = torch.tensor([0.5, 0.5, 0.5])\nprint(i + f, i * f.double(), i / i, i ** 0.5, i.float() == i, torch.tensor([1, 2]) == torch.tensor([1., 2.5]))",
    "to with a bad positional": "torch.ones(2).to('float32')",
    "tensor of huge python numbers": "print(torch.tensor(2 ** 40), torch.tensor(2. ** 200), torch.tensor([1e39]), torch.tensor(1e39, dtype=torch.float64), torch.tensor([2 ** 31]).dtype)",
    "in-place add of int64 into uint8 and int8": "u = torch.tensor([250, 3], dtype=torch.uint8)\nu += torch.tensor([10, -5])\ni = torch.tensor([100], dtype=torch.int8)\ni.add_(torch.tensor([100]))\nb = torch.zeros(2, dtype=torch.uint8)\nb[:] = torch.tensor([300, -1])\nprint(u, i, b, torch.tensor([1], dtype=torch.uint8).copy_(torch.tensor([2 ** 40 + 7])))",
    "copy_ of complex values into a float tensor warns once": "x = torch.zeros(2)\nwith warnings.catch_warnings(record=True) as caught:\n    warnings.simplefilter('always')\n    x.copy_(torch.tensor([1 + 2j, 3j]))\n    i = torch.tensor([2.5 + 1j]).to(torch.int64)\nprint(x, i, [(w.category.__name__, str(w.message).split(' (Triggered')[0]) for w in caught])",
    "new_tensor of a tensor warns": _WARN + "x = torch.ones(2, requires_grad=True)\nshow_warnings(lambda: print(x.new_tensor(x), x.new_tensor([1, 2]), torch.tensor(x)))",
    "in-place multiply int by a float tensor": "x = torch.tensor([1, 2])\nx *= torch.tensor([1.5, 1.5])",
    # ---- indexing and assignment -------------------------------------------------------------------------
    "chained indexing assignment": "x = torch.zeros(2, 3)\nx[1][2] = 5\nx[0][[0, 2]] = 7\nx[:, 1][0] = 3\nprint(x)",
    "index with True and False": "x = torch.arange(3)\nprint(x[True], x[False], x[True].shape, x[None, True].shape, x[False].shape)",
    "index with a 0-d long tensor and int()": "x = torch.arange(10, 20)\ni = torch.tensor(3)\nprint(x[i], x[i.item()], x[int(i)], x[i:i + 2], x[[i]])",
    "index with a float slice bound": "torch.arange(5)[0:2.0]",
    "argmax of a matrix then unravel_index": "x = torch.tensor([[1, 9, 3], [4, 2, 8]])\ni = x.argmax()\nprint(i, torch.unravel_index(i, x.shape), x.view(-1)[i], divmod(i.item(), x.shape[1]))",
    "flattened argmax used on rows": "x = torch.tensor([[1, 9, 3], [4, 2, 8]])\nx[x.argmax()]",
    "argmax of a bool mask": "m = torch.tensor([False, True, True])\nprint(m.int().argmax(), m.max(0), m.nonzero()[0])\nm.argmax()",
    "argwhere and nonzero of a mask": "x = torch.tensor([[0, 3], [5, 0]])\nprint(torch.argwhere(x), torch.nonzero(x > 2), x.nonzero(as_tuple=True), (x > 0).nonzero().squeeze())",
    "select rows with a mask on one column": "data = torch.tensor([[1., 0.], [2., 1.], [3., 1.]])\nprint(data[data[:, 1] == 1], data[data[:, 1] == 1, 0], data[:, data.sum(0) > 3])",
    "assign a row from a list and a scalar tensor": "x = torch.zeros(2, 3)\nx[0] = torch.tensor([1, 2, 3])\nx[1] = torch.tensor(9.)\nx[:, -1] = torch.tensor([[4.], [5.]]).squeeze()\nprint(x)",
    "assign into a column with wrong length": "x = torch.zeros(3, 2)\nx[:, 0] = torch.tensor([1., 2.])",
    "index_fill_ and masked_scatter_": "x = torch.zeros(2, 4)\nx.index_fill_(1, torch.tensor([0, 3]), -1)\ny = torch.zeros(5).masked_scatter_(torch.tensor([True, False, True, False, True]), torch.tensor([1., 2., 3.]))\nprint(x, y)",
    "gather the chosen class per row": "scores = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]])\ny = torch.tensor([1, 2])\nprint(scores.gather(1, y.unsqueeze(1)), scores[torch.arange(2), y], scores.gather(1, y.view(-1, 1)).squeeze(1))",
    "gather with a 1-d index on a matrix": "torch.tensor([[0.1, 0.7], [0.5, 0.3]]).gather(1, torch.tensor([1, 0]))",
    # ---- broadcasting, reshape and view errors ---------------------------------------------------------------
    "broadcast_tensors mismatch": "torch.broadcast_tensors(torch.ones(2, 3), torch.ones(3, 2))",
    "cosine_similarity size mismatch": "F.cosine_similarity(torch.ones(2, 3), torch.ones(2, 4))",
    "cdist feature mismatch": "torch.cdist(torch.ones(2, 3), torch.ones(4, 5))",
    "reshape an empty tensor with -1": "print(torch.zeros(0, 3).reshape(-1).shape, torch.zeros(0, 3).reshape(-1, 3).shape)\ntorch.zeros(0).reshape(-1, 0)",
    "view after permute then contiguous": "x = torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1)\nprint(x.is_contiguous(), x.contiguous().view(4, 6), x.reshape(4, -1).shape)\nx.view(4, 6)",
    "flatten with start after end": "torch.ones(2, 3, 4).flatten(2, 1)",
    "unflatten with wrong sizes": "torch.ones(2, 12).unflatten(1, (5, -1))",
    "squeeze with a tuple of dims and movedim": "x = torch.ones(1, 3, 1, 2)\nprint(x.squeeze((0, 2)).shape, x.squeeze(1).shape, x.movedim(1, -1).shape, x.swapaxes(0, 3).shape, x.squeeze(-2).shape)",
    "resize_ on a leaf with grad": "torch.ones(2, requires_grad=True).resize_(4)",
    # ---- in-place on leaves -----------------------------------------------------------------------------
    "zero_ on a leaf that requires grad": "w = torch.ones(2, requires_grad=True)\nw.zero_()",
    "copy_ into a parameter outside no_grad": "m = nn.Linear(2, 1)\nm.weight.copy_(torch.zeros(1, 2))",
    "copy_ into a parameter under no_grad": "m = nn.Linear(2, 1)\nwith torch.no_grad():\n    m.weight.copy_(torch.ones(1, 2))\n    m.bias.fill_(0.5)\nprint(m.weight, m.bias, m(torch.ones(1, 2)))",
    "manual weight update idiom": "w = torch.tensor([1., -1.], requires_grad=True)\nfor _ in range(3):\n    loss = ((w * torch.tensor([2., 3.])).sum() - 1) ** 2\n    loss.backward()\n    with torch.no_grad():\n        w -= 0.05 * w.grad\n    w.grad.zero_()\nprint(w, loss)",
    # ---- item, tolist, numpy --------------------------------------------------------------------------------
    "numpy of a tensor that had requires_grad_ added": "import numpy as np\na = np.ones(2)\nt = torch.from_numpy(a).requires_grad_()\nprint(t, t.dtype)\nt.numpy()",
    "np.asarray of a tensor with grad": "import numpy as np\nnp.asarray(torch.ones(2, requires_grad=True) * 2)",
    "numpy dtype of every torch dtype": "for dt in (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64):\n    print(dt, torch.zeros(1, dtype=dt).numpy().dtype)",
    "from_numpy then modify the array in place": "import numpy as np\na = np.zeros(3, dtype=np.float32)\nt = torch.from_numpy(a)\nnp.add(a, 1, out=a)\na += 1\nt.mul_(3)\nprint(t, a, t.data_ptr() == a.__array_interface__['data'][0])",
    # ---- seeded random numbers -----------------------------------------------------------------------------
    "seeded rand of many sizes": "torch.manual_seed(21)\nfor n in (15, 16, 17, 33):\n    print(torch.rand(n)[-2:])",
    "seeded randn of many sizes": "torch.manual_seed(22)\nfor n in (15, 16, 17, 40):\n    print(torch.randn(n)[-2:])",
    "seeded normal_ of a large matrix": "torch.manual_seed(23)\nw = torch.empty(8, 8).normal_(0, 0.02)\nprint(w[0], w.mean(), w.std())",
    "seeded randint of a large size": "torch.manual_seed(24)\nprint(torch.randint(0, 100, (40,)), torch.randint(-3, 3, (3, 7)))",
    "seeded randperm to shuffle rows": "torch.manual_seed(25)\nx = torch.arange(10).view(5, 2)\nprint(x[torch.randperm(5)], torch.randperm(100)[:8])",
    "seeded dropout of a large tensor": "torch.manual_seed(26)\nprint(F.dropout(torch.ones(4, 8), 0.25), nn.Dropout(0.1)(torch.ones(20)))",
    "seeded multinomial of many draws": "torch.manual_seed(27)\nw = torch.tensor([1., 2., 3., 4.])\nprint(torch.multinomial(w, 30, replacement=True), torch.multinomial(torch.ones(20), 10))",
    "seeded bernoulli of a probability matrix": "torch.manual_seed(29)\np = torch.full((3, 6), 0.7)\nprint(torch.bernoulli(p), torch.bernoulli(torch.rand(20)))",
    "seeded normal with tensor means of many sizes": "torch.manual_seed(30)\nprint(torch.normal(torch.arange(20.), 0.5)[-3:], torch.normal(2., 3., size=(17,))[-2:], torch.randn(4, 5).normal_(mean=5)[0])",
    "rand with a float size": "torch.manual_seed(0)\nprint(torch.rand((2, 2)).shape, torch.rand([3]).shape, torch.randn(2, torch.tensor(3)).shape)\ntorch.rand(2, 3.)",
    "randint with only high": "torch.randint(10)",
    "seeded results repeat after a reseed": "def draw():\n    torch.manual_seed(31)\n    return torch.randn(20), torch.randint(10, (20,)), torch.randperm(9), F.dropout(torch.ones(20), 0.5)\na, b = draw(), draw()\nprint(all(torch.equal(x, y) for x, y in zip(a, b)), a[2])",
    "seeded random_ on an int tensor": "torch.manual_seed(32)\nprint(torch.empty(5, dtype=torch.int64).random_(0, 10), torch.empty(3, dtype=torch.uint8).random_(), torch.zeros(4).random_(5))",
    # ---- modules: printing, registries, eval --------------------------------------------------------------
    "print a small CNN and its parameters": _NET + "net = Net()\nprint(net)\nprint([(n, tuple(p.shape)) for n, p in net.named_parameters()])\nprint(sum(p.numel() for p in net.parameters()))",
    "state_dict keys of a small CNN": _NET + "print(list(Net().state_dict().keys()))\nprint({k: v.dtype for k, v in Net().state_dict().items() if 'bn' in k})",
    "eval then forward a small CNN": _NET + "torch.manual_seed(0)\nnet = Net()\nx = torch.randn(2, 1, 6, 6)\nnet(x)\nprint(net.bn.running_mean, net.bn.num_batches_tracked)\nnet.eval()\nprint(net(x).argmax(1), net.training, net.bn.training)",
    "forward a small CNN with the wrong input size": _NET + "Net()(torch.ones(2, 1, 8, 8))",
    "forward a small CNN without the batch dim": _NET + "Net()(torch.ones(1, 6, 6))",
    "module list kept in a python list": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = [nn.Linear(2, 2), nn.Linear(2, 1)]\n        self.out = nn.Linear(1, 1)\nnet = Net()\nprint(len(list(net.parameters())), list(net.state_dict()), net)",
    "state_dict with a non-persistent buffer": "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.register_buffer('mask', torch.ones(2), persistent=False)\n        self.register_buffer('count', torch.zeros(()))\n        self.p = nn.Parameter(torch.ones(1))\nm = M()\nprint(list(m.state_dict()), [n for n, _ in m.named_buffers()], m)",
    "forward hook printing output shapes": "m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))\nfor name, layer in m.named_children():\n    layer.register_forward_hook(lambda mod, inp, out, name=name: print(name, type(mod).__name__, tuple(inp[0].shape), tuple(out.shape)))\nm(torch.ones(5, 4))",
    "eval and no_grad at inference": "torch.manual_seed(0)\nm = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm1d(2))\nm.eval()\nwith torch.no_grad():\n    out = m(torch.ones(3, 2))\nprint(out, out.requires_grad, m[2].running_mean)",
    "parameters count by trainable flag": "m = nn.Sequential(nn.Embedding(10, 4), nn.LSTM(4, 8), )\nm[0].weight.requires_grad = False\nprint(sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.parameters() if p.requires_grad), [n for n, p in m.named_parameters() if not p.requires_grad])",
    # ---- optimizers and schedulers ------------------------------------------------------------------------
    "SGD with weight_decay and momentum steps": "p = nn.Parameter(torch.tensor([1., -2.]))\nopt = torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)\nfor _ in range(3):\n    opt.zero_grad()\n    (p ** 2).sum().backward()\n    opt.step()\nprint(p, opt.state[p]['momentum_buffer'])\nprint(opt)",
    "Adam state after steps with weight_decay": "p = nn.Parameter(torch.tensor([1., -2.]))\nopt = torch.optim.Adam([p], lr=0.01, weight_decay=0.1)\nfor _ in range(3):\n    opt.zero_grad()\n    (p ** 3).sum().backward()\n    opt.step()\nprint(p, sorted(opt.state[p]), opt.state[p]['step'], opt.state[p]['exp_avg_sq'])",
    "per-layer learning rates": "m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))\nopt = torch.optim.SGD([{'params': m[0].parameters()}, {'params': m[1].parameters(), 'lr': 1e-3}], lr=0.1, momentum=0.5)\nprint([g['lr'] for g in opt.param_groups], [g['momentum'] for g in opt.param_groups], opt)",
    "StepLR over ten epochs": "opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)\ns = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.1)\nlrs = []\nfor epoch in range(10):\n    opt.step()\n    s.step()\n    lrs.append(s.get_last_lr()[0])\nprint(lrs, s.last_epoch)",
    "CosineAnnealingLR with eta_min": "opt = torch.optim.Adam([nn.Parameter(torch.ones(1))], lr=1.0)\ns = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)\nout = []\nfor _ in range(6):\n    opt.step()\n    s.step()\n    out.append(round(opt.param_groups[0]['lr'], 6))\nprint(out)",
    "custom scheduler from LRScheduler": "class Halve(torch.optim.lr_scheduler.LRScheduler):\n    def get_lr(self):\n        return [base / 2 ** self.last_epoch for base in self.base_lrs]\nopt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0)\ns = Halve(opt)\nfor _ in range(3):\n    opt.step()\n    s.step()\nprint(s.get_last_lr(), s.state_dict())",
    "optimizer step without backward": "p = nn.Parameter(torch.ones(2))\nopt = torch.optim.Adam([p])\nopt.step()\nprint(p, opt.state_dict()['state'])",
    "optimizer with a parameter that does not require grad": "torch.optim.SGD([torch.ones(2)], lr=0.1)",
    # ---- data loading -------------------------------------------------------------------------------------
    "DataLoader batch larger than the dataset": "ds = torch.utils.data.TensorDataset(torch.arange(3.), torch.tensor([0, 1, 0]))\ndl = torch.utils.data.DataLoader(ds, batch_size=8)\nprint(len(dl), list(dl), len(torch.utils.data.DataLoader(ds, batch_size=8, drop_last=True)))",
    "DataLoader of (x, label) tuples": "data = [(torch.tensor([1., 2.]), 0), (torch.tensor([3., 4.]), 1), (torch.tensor([5., 6.]), 1)]\nfor xb, yb in torch.utils.data.DataLoader(data, batch_size=2):\n    print(xb, yb, yb.dtype)",
    "DataLoader two epochs seeded shuffle": "torch.manual_seed(40)\ndl = torch.utils.data.DataLoader(torch.arange(6), batch_size=3, shuffle=True)\nprint([b.tolist() for b in dl], [b.tolist() for b in dl])",
    "DataLoader with a sequential sampler and batch sampler": "S = torch.utils.data\nbs = S.BatchSampler(S.SequentialSampler(range(7)), batch_size=3, drop_last=False)\nprint(list(bs), len(bs), [b.tolist() for b in S.DataLoader(torch.arange(10, 17), batch_sampler=bs)])",
    "Dataset returning a dict with strings": "class DS(torch.utils.data.Dataset):\n    def __len__(self):\n        return 3\n    def __getitem__(self, i):\n        return {'x': torch.full((2,), float(i)), 'name': f'item{i}', 'y': i % 2}\nprint(next(iter(torch.utils.data.DataLoader(DS(), batch_size=3))))",
    "Dataset __getitem__ raising IndexError": "class DS(torch.utils.data.Dataset):\n    def __len__(self):\n        return 5\n    def __getitem__(self, i):\n        return [10, 20, 30][i]\nlist(torch.utils.data.DataLoader(DS(), batch_size=2))",
    "TensorDataset indexed by a slice": "ds = torch.utils.data.TensorDataset(torch.arange(6.).view(3, 2), torch.tensor([0, 1, 2]))\nprint(ds[1:], ds[0], ds.tensors[1], len(ds))",
    # ---- saving and loading -------------------------------------------------------------------------------
    "load a directory path": "torch.load('/')",
    "save to a text-mode file": _SAVE + "with open(path, 'w') as f:\n    torch.save(torch.ones(1), f)",
    "save a lambda": _SAVE + "torch.save({'fn': lambda x: x}, path)",
    "load with map_location cuda": _SAVE + "torch.save(torch.ones(1), path)\ntorch.load(path, map_location='cuda')",
    "load with map_location a device and a function": _SAVE + "torch.save(torch.ones(2), path)\nprint(torch.load(path, map_location=torch.device('cpu')), torch.load(path, map_location=lambda s, loc: s), torch.load(path, map_location={'cpu': 'cpu'}))",
    "load a state_dict onto the meta device": _SAVE + "torch.save(nn.Linear(3, 2).state_dict(), path)\nsd = torch.load(path, map_location='meta')\nprint(sd['weight'].device, sd['weight'].shape, sd['bias'].is_meta, sd['bias'])\nm = nn.Linear(3, 2, device='meta')\nprint(m.load_state_dict(sd, assign=True), m.weight.device)",
    "load with map_location dicts": _SAVE + "torch.save(torch.ones(1), path)\nprint(torch.load(path, map_location={'cuda:0': 'cpu'}), torch.load(path, map_location={'cpu': 'cpu'}))\ntorch.load(path, map_location={'cpu': torch.device('cpu')})",
    "save and load a model then resume training": _SAVE + "torch.manual_seed(0)\nm = nn.Linear(2, 1)\nopt = torch.optim.Adam(m.parameters(), lr=0.1)\nm(torch.ones(1, 2)).sum().backward()\nopt.step()\n"
                                                   "torch.save({'epoch': 1, 'model': m.state_dict(), 'opt': opt.state_dict()}, path)\nck = torch.load(path)\nm2 = nn.Linear(2, 1)\nopt2 = torch.optim.Adam(m2.parameters())\nm2.load_state_dict(ck['model'])\nopt2.load_state_dict(ck['opt'])\n"
                                                   "print(ck['epoch'], opt2.param_groups[0]['lr'], opt2.state[m2.weight]['step'], torch.equal(m2.bias, m.bias))",
    # ---- grad accumulation and no_grad ---------------------------------------------------------------------
    "gradient accumulation over micro-batches": "torch.manual_seed(0)\nm = nn.Linear(3, 1)\nx, y = torch.randn(4, 3), torch.randn(4, 1)\nfor i in range(2):\n    (F.mse_loss(m(x[2 * i:2 * i + 2]), y[2 * i:2 * i + 2]) / 2).backward()\nacc = m.weight.grad.clone()\nm.zero_grad()\nF.mse_loss(m(x), y).backward()\nprint(torch.allclose(acc, m.weight.grad), m.weight.grad)",
    "no_grad output used in a loss": "w = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    y = w * 2\nprint(y.requires_grad, y.grad_fn, y.is_leaf)\n(y ** 2).sum().backward()",
    "detach in the middle of a graph": "w = torch.tensor([2.], requires_grad=True)\nh = w * 3\nout = h.detach() * w + h\nout.backward()\nprint(w.grad, out.grad_fn.name(), h.detach().requires_grad)",
    "backward twice through a small model": "m = nn.Linear(2, 1)\nloss = torch.sigmoid(m(torch.ones(1, 2))).sum()\nloss.backward()\nloss.backward()",
    "backward of a non-scalar loss by mistake": "m = nn.Linear(2, 3)\nloss = F.mse_loss(m(torch.ones(4, 2)), torch.zeros(4, 3), reduction='none')\nloss.backward()",
    # ---- common exceptions --------------------------------------------------------------------------------
    "Linear on a batch of images not flattened": "nn.Linear(784, 10)(torch.ones(8, 1, 28, 28))",
    "cross_entropy with int32 labels from numpy": "import numpy as np\nlabels = torch.from_numpy(np.array([0, 1], dtype=np.int32))\nF.cross_entropy(torch.zeros(2, 3), labels)",
    "cross_entropy with float labels of the same shape": "F.cross_entropy(torch.zeros(2), torch.tensor([0., 1.]))",
    "cross_entropy with a 2-d target for class indices": "F.cross_entropy(torch.zeros(4, 3), torch.tensor([[0], [1], [2], [0]]))",
    "nll_loss on probabilities instead of logs": "print(F.nll_loss(torch.tensor([[0.2, 0.8]]), torch.tensor([1])), F.cross_entropy(torch.tensor([[0.2, 0.8]]), torch.tensor([1])))",
    "BCELoss on logits out of range": "nn.BCELoss()(torch.tensor([2.5, -1.]), torch.tensor([1., 0.]))",
    "BCEWithLogits target of shape (N,) vs (N, 1)": "nn.BCEWithLogitsLoss()(torch.zeros(4, 1), torch.ones(4))",
    "MSELoss with a target of shape (N,)": _WARN + "show_warnings(lambda: print(F.mse_loss(torch.ones(3, 1), torch.zeros(3))))",
    "device cuda:0 attributes": "d = torch.device('cuda:0')\nprint(d, repr(d), d.type, d.index, d == torch.device('cuda', 0), torch.device('cuda').index, torch.device('cpu', 0), str(torch.device('mps')))",
    "device with a bad ordinal or type": "print(torch.device('cuda', 1))\ntorch.device('CUDA:0')",
    "device with a negative index": "torch.device('cuda:-1')",
    "randn on a cuda device": "torch.randn(2, device='cuda')",
    "zeros on a cuda device object": "torch.zeros(2, device=torch.device('cuda', 0))",
    "module moved to cuda:1": "nn.Linear(2, 2).to('cuda:1')",
    "tensor cuda with an index": "torch.ones(1).cuda(0)",
    "device given as a bare index": "print(torch.ones(1).to('cpu').device)\ntorch.zeros(2, device=0)",
    "to with a bare index": "torch.ones(2).to(1)",
    "set_default_device meta then cuda": "torch.set_default_device('meta')\nprint(torch.get_default_device(), torch.ones(2), nn.Linear(2, 1).weight.is_meta)\ntorch.set_default_device('cuda')\ntry:\n    torch.zeros(1)\nfinally:\n    torch.set_default_device(None)",
    "device idiom with an is_available fallback": "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nm = nn.Linear(2, 1).to(device)\nx = torch.ones(1, 2, device=device)\nprint(device, m(x).device, x.is_cuda, next(m.parameters()).device, x.get_device())",
    "tensors on a meta device mixed with cpu": "print(torch.ones(2, device='meta'), torch.empty(3, device='meta').shape)\ntorch.ones(2, device='meta').item()",
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
