"""The seventh sweep of day-one snippets: what people write in their first weeks about layers in everyday use
(convolution, pooling, normalisation, dropout, embeddings, recurrent and transformer layers: shapes, printing
and the errors of wrong input ranks and dtypes), losses with reductions, weights, ignore_index and
label_smoothing, optimizers' parameter groups and state dicts, schedulers, ``torch.nn.utils``, everyday
linear algebra, einsum, ``where`` and masks, sorting and ties, ``unique``, statistics, tensors in f-strings
and ``if``, integer division and rounding, overflow and NaN, and seeded draws.
Run by ``tests/test_day_one_identity.py`` like ``_day_one_snippets.py``: once under real torch
(``python THIS``) and once under ``hookgrad run THIS``; printed text and final exception must match."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _day_one_snippets import run  # noqa: E402

# warnings as caught, without the C++ source location torch's own kernels append ("Triggered internally at ...")
_WARN = ("def show_warnings(fn):\n    with warnings.catch_warnings(record=True) as caught:\n"
         "        warnings.simplefilter('always')\n        fn()\n    for w in caught:\n"
         "        print(w.category.__name__, str(w.message).split(' (Triggered internally')[0].splitlines()[0][:300])\n")

_LOGITS = ("logits = torch.tensor([[2., 0.5, -1.], [0., 1., 0.], [0.3, 0.2, 2.]])\n"
           "y = torch.tensor([0, 1, 2])\n")
_OPT = "p = nn.Parameter(torch.tensor([1., -2.]))\nopt = torch.optim.SGD([p], lr=0.1)\n"
_SCHED = "sched = torch.optim.lr_scheduler\n" + _OPT
_A = "A = torch.tensor([[4., 1.], [2., 3.]])\n"

SNIPPETS = {
    # ---- convolution and pooling ---------------------------------------------------------------------------
    "Conv2d output shape with stride and padding": "c = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)\nprint(c, c(torch.ones(2, 3, 32, 32)).shape, c.weight.shape, c.bias.shape)",
    "Conv2d padding same with stride": "nn.Conv2d(1, 2, 3, stride=2, padding='same')",
    "Conv2d with the wrong number of channels": "nn.Conv2d(3, 8, 3)(torch.ones(1, 1, 8, 8))",
    "MaxPool2d with indices then unpool": "x = torch.arange(16.).reshape(1, 1, 4, 4)\nout, idx = nn.MaxPool2d(2, return_indices=True)(x)\nprint(out, idx, nn.MaxUnpool2d(2)(out, idx))",
    "MaxPool2d padding larger than half the kernel": "nn.MaxPool2d(2, padding=2)(torch.ones(1, 1, 4, 4))",
    "adaptive pools to odd sizes": "x = torch.arange(30.).reshape(1, 1, 5, 6)\nprint(nn.AdaptiveAvgPool2d(1)(x), nn.AdaptiveAvgPool2d((2, 3))(x), nn.AdaptiveMaxPool2d((2, 2))(x), nn.AdaptiveAvgPool2d((None, 2))(x).shape)",
    # ---- normalisation and dropout ---------------------------------------------------------------------------
    "BatchNorm2d running statistics after one batch": "bn = nn.BatchNorm2d(3)\nx = torch.randn(4, 3, 2, 2)\ny = bn(x)\nprint(bn, bn.running_mean, bn.running_var, y.mean((0, 2, 3)).abs() < 1e-5, bn.num_batches_tracked)",
    "BatchNorm1d on a 4-d input": "nn.BatchNorm1d(3)(torch.ones(2, 3, 2, 2))",
    "BatchNorm with cumulative momentum and no affine": "bn = nn.BatchNorm1d(2, momentum=None, affine=False)\nfor i in range(3):\n    bn(torch.tensor([[1., 2.], [3., 6.]]) * (i + 1))\nprint(bn, bn.running_mean, bn.running_var, list(bn.state_dict()))",
    "GroupNorm groups not dividing channels": "nn.GroupNorm(3, 4)",
    "Dropout2d on a 2-d input warns": _WARN + "show_warnings(lambda: print(nn.Dropout2d(0.5)(torch.ones(2, 3)).shape))",
    # ---- embeddings ------------------------------------------------------------------------------------------
    "Embedding lookup with padding_idx": "e = nn.Embedding(5, 3, padding_idx=0)\nout = e(torch.tensor([[0, 2], [4, 0]]))\nprint(e, out.shape, e.weight[0], out[0, 0])\nout.sum().backward()\nprint(e.weight.grad)",
    "Embedding index out of range": "nn.Embedding(5, 3)(torch.tensor([5]))",
    "Embedding with max_norm renormalises rows": "e = nn.Embedding(3, 2, max_norm=1.0)\nwith torch.no_grad():\n    e.weight.copy_(torch.tensor([[3., 4.], [0.3, 0.4], [1., 0.]]))\nprint(e(torch.tensor([0, 1])), e.weight, e)",
    # ---- recurrent and transformer layers ------------------------------------------------------------------
    "LSTM shapes with batch_first and two layers": "lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)\nout, (h, c) = lstm(torch.randn(3, 5, 4))\nprint(lstm, out.shape, h.shape, c.shape, [n for n, _ in lstm.named_parameters()][:4])",
    "bidirectional LSTM ends meet the hidden state": "lstm = nn.LSTM(4, 6, bidirectional=True)\nout, (h, c) = lstm(torch.randn(5, 2, 4))\nprint(out.shape, h.shape, torch.allclose(out[-1, :, :6], h[0]), torch.allclose(out[0, :, 6:], h[1]))",
    "LSTM with the wrong feature size": "nn.LSTM(4, 6)(torch.ones(5, 2, 3))",
    "LSTM with a hidden state of the wrong batch": "nn.LSTM(4, 6)(torch.ones(5, 2, 4), (torch.zeros(1, 3, 6), torch.zeros(1, 3, 6)))",
    "LSTM dropout with one layer warns": _WARN + "show_warnings(lambda: print(nn.LSTM(2, 2, dropout=0.5)))",
    "GRU seeded output": "g = nn.GRU(3, 2)\nout, h = g(torch.randn(4, 1, 3))\nprint(g, out, h)",
    "print recurrent layers with options": "print(nn.RNN(3, 4, nonlinearity='relu'), nn.RNN(3, 4, 2, bias=False), nn.GRU(2, 3, batch_first=True, bidirectional=True), nn.LSTM(2, 3, proj_size=1))",
    "RNN with an unknown nonlinearity": "nn.RNN(3, 4, nonlinearity='sigmoid')",
    "TransformerEncoder output shape": "layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)\nenc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)\nprint(enc(torch.randn(3, 5, 8)).shape, len(enc.layers), sum(p.numel() for p in enc.parameters()))",
    "TransformerEncoderLayer d_model not divisible by nhead": "nn.TransformerEncoderLayer(10, 3)",
    "MultiheadAttention shapes and weights": "mha = nn.MultiheadAttention(8, 2, batch_first=True)\nx = torch.randn(2, 4, 8)\nout, w = mha(x, x, x)\nprint(mha, out.shape, w.shape, w.sum(-1), mha(x, x, x, average_attn_weights=False)[1].shape, mha(x, x, x, need_weights=False)[1])",
    "causal mask from generate_square_subsequent_mask": "mask = nn.Transformer.generate_square_subsequent_mask(3)\nmha = nn.MultiheadAttention(4, 1)\nx = torch.randn(3, 1, 4)\nprint(mask, mha(x, x, x, attn_mask=mask)[1])",
    "Linear on an int64 input": "nn.Linear(2, 2)(torch.tensor([[1, 2]]))",
    "bilinear interpolate of a 3-d input": "F.interpolate(torch.ones(1, 2, 4), scale_factor=2, mode='bilinear')",
    # ---- losses ------------------------------------------------------------------------------------------------
    "cross_entropy with class weights per reduction": _LOGITS + "w = torch.tensor([1., 2., 0.5])\nfor r in ('mean', 'sum', 'none'):\n    print(r, F.cross_entropy(logits, y, weight=w, reduction=r))",
    "cross_entropy with ignore_index": _LOGITS + "print(F.cross_entropy(logits, torch.tensor([0, -100, 2])), nn.CrossEntropyLoss(ignore_index=2)(logits, y), nn.CrossEntropyLoss(ignore_index=2, reduction='none')(logits, y))",
    "cross_entropy when every target is ignored": "print(F.cross_entropy(torch.zeros(2, 3), torch.tensor([-100, -100])), F.cross_entropy(torch.zeros(2, 3), torch.tensor([-100, -100]), reduction='sum'))",
    "cross_entropy with label_smoothing": _LOGITS + "print(F.cross_entropy(logits, y, label_smoothing=0.1), nn.CrossEntropyLoss(label_smoothing=0.2, reduction='none')(logits, y), nn.CrossEntropyLoss(label_smoothing=0.1), F.cross_entropy(logits, y, weight=torch.tensor([1., 2., 3.]), label_smoothing=0.3))",
    "cross_entropy label_smoothing out of range": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), label_smoothing=1.5)",
    "cross_entropy with soft probability targets and smoothing": _LOGITS + "target = torch.tensor([[0.7, 0.2, 0.1], [0., 1., 0.]])\nprint(F.cross_entropy(logits[:2], target), F.cross_entropy(logits[:2], target, label_smoothing=0.1), F.cross_entropy(logits[:2], target, reduction='none'))",
    "cross_entropy weight of the wrong length": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), weight=torch.ones(2))",
    "nll_loss with weights and ignore_index": "lp = torch.log_softmax(torch.tensor([[1., 2., 3.], [1., 1., 1.], [3., 0., 0.]]), 1)\nprint(F.nll_loss(lp, torch.tensor([2, 0, 1]), weight=torch.tensor([0.2, 0.3, 0.5])), F.nll_loss(lp, torch.tensor([2, 1, 1]), ignore_index=1), nn.NLLLoss(reduction='sum'))",
    "BCELoss at exactly zero and one": "print(F.binary_cross_entropy(torch.tensor([0., 1.]), torch.tensor([1., 0.])), F.binary_cross_entropy(torch.tensor([0., 1.]), torch.tensor([0., 1.])), nn.BCELoss(reduction='none')(torch.tensor([0.5, 0.]), torch.tensor([1., 1.])))",
    "binary_cross_entropy with an int64 target": "F.binary_cross_entropy(torch.tensor([0.5]), torch.tensor([1]))",
    "kl_div with reduction mean warns": _WARN + "p = torch.log_softmax(torch.tensor([[1., 2.], [0., 0.]]), 1)\nq = torch.tensor([[0.5, 0.5], [0.9, 0.1]])\nshow_warnings(lambda: print(F.kl_div(p, q, reduction='mean'), F.kl_div(p, q, reduction='batchmean'), nn.KLDivLoss(reduction='sum', log_target=False)(p, q)))",
    "loss with legacy size_average warns": _WARN + "show_warnings(lambda: print(nn.MSELoss(size_average=False)(torch.ones(2), torch.zeros(2)), nn.L1Loss(reduce=False)))",
    # ---- optimizers ----------------------------------------------------------------------------------------------
    "add_param_group with its own lr": "a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(1))\nopt = torch.optim.SGD([a], lr=0.1, momentum=0.9)\nopt.add_param_group({'params': [b], 'lr': 0.01})\nprint([g['lr'] for g in opt.param_groups], [g['momentum'] for g in opt.param_groups], len(opt.param_groups[1]['params']), opt)",
    "add_param_group with a parameter already there": "a = nn.Parameter(torch.ones(2))\nopt = torch.optim.SGD([a], lr=0.1)\nopt.add_param_group({'params': a})",
    "optimizer given a used-up parameters generator": "m = nn.Linear(2, 1)\nparams = m.parameters()\nopt = torch.optim.SGD(params, lr=0.1)\nprint(len(opt.param_groups[0]['params']))\ntorch.optim.SGD(params, lr=0.1)",
    "Adam given a bare Parameter": "torch.optim.Adam(nn.Parameter(torch.ones(1)))",
    "Adam with a negative lr or bad betas": "for kw in ({'lr': -0.1}, {'betas': (1.0, 0.999)}, {'eps': -1.}, {'weight_decay': -1}):\n    try:\n        torch.optim.Adam([nn.Parameter(torch.ones(1))], **kw)\n    except ValueError as e:\n        print(e)",
    "SGD momentum state_dict round trip": "m = nn.Linear(2, 1)\nopt = torch.optim.SGD([{'params': [m.weight]}, {'params': [m.bias], 'lr': 0.5}], lr=0.1, momentum=0.9)\nm(torch.ones(3, 2)).sum().backward()\nopt.step()\nsd = opt.state_dict()\nprint(sd)\nopt2 = torch.optim.SGD([{'params': [m.weight]}, {'params': [m.bias]}], lr=1.0, momentum=0.9)\nopt2.load_state_dict(sd)\nprint([g['lr'] for g in opt2.param_groups], opt2.state[m.bias])",
    "load_state_dict with a different number of groups": "a, b = nn.Parameter(torch.ones(1)), nn.Parameter(torch.ones(1))\nsd = torch.optim.SGD([{'params': [a]}, {'params': [b]}], lr=0.1).state_dict()\ntorch.optim.SGD([a, b], lr=0.1).load_state_dict(sd)",
    "AdamW three steps": "p = nn.Parameter(torch.tensor([1., -2., 0.5]))\nopt = torch.optim.AdamW([p], lr=0.1, weight_decay=0.1)\nfor _ in range(3):\n    opt.zero_grad()\n    (p ** 2).sum().backward()\n    opt.step()\nprint(p, sorted(opt.state[p]), opt.state[p]['step'], opt.state[p]['exp_avg_sq'])",
    "RMSprop and Adagrad one step": "for cls in (torch.optim.RMSprop, torch.optim.Adagrad, torch.optim.Adamax, torch.optim.NAdam):\n    p = nn.Parameter(torch.tensor([1., -2.]))\n    opt = cls([p], lr=0.1)\n    p.grad = torch.tensor([0.5, 3.])\n    opt.step()\n    print(cls.__name__, p.data, sorted(opt.state[p]))",
    # ---- schedulers ------------------------------------------------------------------------------------------
    "scheduler step before optimizer step warns": _WARN + _SCHED + "s = sched.StepLR(opt, 1, gamma=0.5)\nshow_warnings(lambda: s.step())\nprint(s.get_last_lr())",
    "get_lr called directly warns": _WARN + _SCHED + "s = sched.StepLR(opt, 1, gamma=0.5)\nshow_warnings(lambda: print(s.get_lr()))",
    "scheduler step with an epoch warns": _WARN + _SCHED + "s = sched.ExponentialLR(opt, gamma=0.5)\nopt.step()\nshow_warnings(lambda: s.step(3))\nprint(s.get_last_lr(), s.last_epoch)",
    "ReduceLROnPlateau steps on a loss": _SCHED + "s = sched.ReduceLROnPlateau(opt, mode='min', factor=0.5, patience=1)\nfor loss in (1.0, 0.9, 0.95, 0.95, 0.95, 0.8):\n    opt.step()\n    s.step(loss)\n    print(opt.param_groups[0]['lr'], s.num_bad_epochs, s.get_last_lr())",
    "OneCycleLR first steps": _SCHED + "s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=6)\nfor _ in range(5):\n    opt.step()\n    s.step()\n    print(round(s.get_last_lr()[0], 6), round(opt.param_groups[0]['momentum'], 6))",
    "scheduler state_dict round trip": _SCHED + "s = sched.StepLR(opt, 2, gamma=0.5)\nfor _ in range(3):\n    opt.step()\n    s.step()\nsd = s.state_dict()\ns2 = sched.StepLR(opt, 5)\ns2.load_state_dict(sd)\nprint(sd, s2.step_size, s2.last_epoch, s2.get_last_lr())",
    "StepLR resumed without initial_lr": _SCHED + "sched.StepLR(opt, 2, last_epoch=3)",
    # ---- torch.nn.utils -------------------------------------------------------------------------------------------
    "clip_grad_norm_ with an infinity norm": "m = nn.Linear(2, 2)\nm.weight.grad = torch.tensor([[3., -4.], [1., 0.]])\nm.bias.grad = torch.tensor([0.5, -6.])\nprint(nn.utils.clip_grad_norm_(m.parameters(), 3.0, norm_type='inf'), m.weight.grad, m.bias.grad)",
    "parameters_to_vector and back": "m = nn.Linear(2, 2)\nv = nn.utils.parameters_to_vector(m.parameters())\nprint(v.shape, v.requires_grad, v.grad_fn.name())\nnn.utils.vector_to_parameters(torch.arange(6.), m.parameters())\nprint(m.weight, m.bias)",
    "vector_to_parameters with a matrix": "nn.utils.vector_to_parameters(torch.ones(2, 3), nn.Linear(2, 2).parameters())",
    "pad_sequence with batch_first and a padding value": "seqs = [torch.tensor([1, 2, 3]), torch.tensor([4]), torch.tensor([5, 6])]\nrnn = nn.utils.rnn\nprint(rnn.pad_sequence(seqs), rnn.pad_sequence(seqs, batch_first=True, padding_value=-1), rnn.pad_sequence(seqs, batch_first=True, padding_side='left'))",
    "pack then LSTM then pad_packed": "rnn = nn.utils.rnn\nx = rnn.pad_sequence([torch.ones(4, 2), torch.ones(2, 2), torch.ones(3, 2)], batch_first=True)\npacked = rnn.pack_padded_sequence(x, torch.tensor([4, 2, 3]), batch_first=True, enforce_sorted=False)\nprint(packed.batch_sizes, packed.sorted_indices, packed.data.shape)\nout, (h, c) = nn.LSTM(2, 3, batch_first=True)(packed)\npadded, lengths = rnn.pad_packed_sequence(out, batch_first=True)\nprint(padded.shape, lengths, padded[1, 2:], h.shape)",
    # ---- linear algebra ---------------------------------------------------------------------------------------------
    "inv det and solve of a 2x2": _A + "b = torch.tensor([1., 2.])\nprint(torch.linalg.inv(A), torch.linalg.det(A), torch.det(A), torch.linalg.solve(A, b), torch.inverse(A) @ b, A.inverse().dtype)",
    "inv of a singular matrix": "torch.linalg.inv(torch.tensor([[1., 2.], [2., 4.]]))",
    "solve with mismatched shapes": "torch.linalg.solve(torch.eye(2), torch.ones(3))",
    "norm variants of one matrix": "A = torch.tensor([[1., -2.], [3., 4.]])\nprint(torch.linalg.norm(A), torch.linalg.norm(A, 'fro'), torch.linalg.norm(A, 2), torch.linalg.norm(A, ord=1), torch.linalg.norm(A, float('inf')), torch.linalg.vector_norm(A, 1), torch.linalg.matrix_norm(A, 'nuc'), A.norm(dim=1), A.norm(p=1))",
    "eig of a small matrix": _A + "vals, vecs = torch.linalg.eig(A)\nprint(vals, vecs.dtype, torch.linalg.eigvals(torch.tensor([[0., -1.], [1., 0.]])), torch.linalg.eigh(torch.tensor([[2., 1.], [1., 2.]])))",
    # ---- einsum, where and masks ----------------------------------------------------------------------------------
    "einsum everyday forms": "a = torch.arange(6.).reshape(2, 3)\nb = torch.arange(12.).reshape(3, 4)\nprint(torch.einsum('ij,jk->ik', a, b), torch.einsum('ii', torch.eye(3)), torch.einsum('ij->j', a), torch.einsum('i,j->ij', a[0], a[1]), torch.einsum('bij,bjk->bik', a[None], b[None]).shape, torch.einsum('...j,j', a, a[0]))",
    "masked_fill and masked_select broadcasting": "x = torch.arange(6.).reshape(2, 3)\nm = torch.tensor([True, False, True])\nprint(x.masked_fill(m, -1), x.masked_select(m), x[:, m], x.masked_fill(x > 2, float('-inf')).softmax(1))",
    # ---- sorting, topk, unique ----------------------------------------------------------------------------------
    "sort stable with ties and descending": "x = torch.tensor([2, 1, 2, 1, 3, 2])\nprint(x.sort(stable=True), torch.sort(x, descending=True, stable=True), x.argsort(stable=True), torch.tensor([3., float('nan'), 1.]).sort())",
    "topk with ties and largest False": "x = torch.tensor([1., 3., 3., 2., 3.])\nprint(x.topk(2), x.topk(3, largest=False), torch.topk(torch.tensor([[1, 5], [7, 2]]), 1, dim=0), x.topk(2, sorted=True).indices)",
    "topk with k larger than the size": "torch.tensor([1., 2.]).topk(3)",
    "unique variants": "x = torch.tensor([3, 1, 2, 3, 1, 1])\nprint(torch.unique(x), torch.unique(x, return_inverse=True), torch.unique(x, return_counts=True), x.unique(sorted=True, return_inverse=True, return_counts=True))",
    "unique of floats with nan": "print(torch.unique(torch.tensor([1., float('nan'), 1., float('nan')])), torch.tensor([2.5, -0., 0.]).unique(), torch.unique(torch.tensor([True, False, True])))",
    # ---- statistics -------------------------------------------------------------------------------------------------
    "std and var unbiased and corrections": "x = torch.tensor([[1., 2., 4.], [3., 5., 9.]])\nprint(x.std(), x.std(unbiased=False), x.var(1), x.var(1, correction=0), torch.std(x, dim=0, keepdim=True), torch.var_mean(x, 1), torch.std_mean(x))",
    "std of a single value warns": _WARN + "show_warnings(lambda: print(torch.tensor([1.]).std(), torch.tensor([[1., 2.]]).var(0)))",
    "median of an even length and along a dim": "x = torch.tensor([[1., 4., 2., 3.], [5., 5., 0., 1.]])\nprint(x.median(), x.median(1), torch.nanmedian(torch.tensor([1., float('nan'), 3.])), torch.tensor([1., float('nan'), 3.]).median())",
    "quantile interpolation modes": "x = torch.tensor([1., 2., 3., 4.])\nprint(torch.quantile(x, 0.5), x.quantile(torch.tensor([0.25, 0.75])), [x.quantile(0.4, interpolation=m).item() for m in ('linear', 'lower', 'higher', 'midpoint', 'nearest')], torch.quantile(torch.arange(6.).reshape(2, 3), 0.5, dim=1, keepdim=True))",
    "quantile with q out of range": "torch.quantile(torch.tensor([1., 2.]), 1.5)",
    "mode and its ties": "print(torch.tensor([1, 2, 2, 3, 3]).mode(), torch.mode(torch.tensor([[1, 1, 2], [0, 2, 2]]), 1), torch.tensor([4.]).mode())",
    # ---- formatting and truth values ---------------------------------------------------------------------------------
    "format specs on 0-d tensors": "t = torch.tensor(3.14159)\nprint(f'{t:.3f}', f'{t}', f'{t!r}', '{:.2e}'.format(t), format(torch.tensor(5), 'd'), f'{torch.tensor(2.5, requires_grad=True):.1f}', f'{torch.tensor(7):>4}', f'{torch.tensor(True)}')",
    "format spec on a 1-d tensor": "print(f'{torch.tensor([1., 2.]):.2f}')",
    "tensors inside f-strings and percent formats": "print(f'loss={torch.tensor(0.5)}', f'{[torch.tensor(1)]}', f'{ {\"a\": torch.ones(2)} }', '%s' % torch.tensor(2.), '%.2f' % torch.tensor(2.), '%d' % torch.tensor(3), str(torch.tensor([1.5])))",
    "if on a comparison of many values": "x = torch.tensor([1, 2])\nif x > 0:\n    print('positive')",
    "truth of one element and of an empty tensor": "print(bool(torch.tensor([0.])), bool(torch.tensor([2])), 'y' if torch.tensor(3) > 2 else 'n', not torch.tensor(0))\nbool(torch.tensor([]))",
    "in on tensors": "print(2 in torch.tensor([1, 2]), 5 in torch.tensor([[1, 2]]), torch.tensor(1) in torch.tensor([1, 3]), 1.5 in torch.tensor([1.5]))\n'a' in torch.tensor([1])",
    # ---- division, rounding, overflow and NaN ----------------------------------------------------------------------
    "floor division and remainder of negatives": "a = torch.tensor([7, -7, 7, -7])\nb = torch.tensor([2, 2, -2, -2])\nprint(a // b, torch.div(a, b, rounding_mode='trunc'), torch.div(a, b, rounding_mode='floor'), a / b, a % b, torch.fmod(a, b), torch.remainder(a, b), -7 // torch.tensor(2))",
    "round half to even and decimals": "print(torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5])), torch.round(torch.tensor([1.2345, 2.675]), decimals=2), torch.tensor([1.5]).round().dtype, torch.floor(torch.tensor([-1.5])), torch.trunc(torch.tensor([-1.7])), torch.ceil(torch.tensor([-0.2])), torch.tensor([7]).round(), torch.round(torch.tensor([1234.]), decimals=-2))",
    "round an int64 tensor with decimals": "torch.round(torch.tensor([15]), decimals=-1)",
    "int64 int8 and uint8 arithmetic wraps": "print(torch.tensor([2 ** 62]) * 4, torch.tensor([2 ** 63 - 1]) + 1, torch.tensor([127], dtype=torch.int8) + 1, torch.tensor([200], dtype=torch.uint8) * 2, torch.iinfo(torch.int8), torch.tensor([-128], dtype=torch.int8).abs())",
    "float16 overflow and exp overflow": "print(torch.tensor([60000.], dtype=torch.float16) * 2, torch.tensor([70000.]).half(), torch.finfo(torch.float16).max, torch.exp(torch.tensor([100.])), torch.exp(torch.tensor([100.], dtype=torch.float64)), torch.finfo(torch.bfloat16))",
    "nan in reductions": "x = torch.tensor([1., float('nan'), 3.])\nprint(x.sum(), x.max(), x.min(), x.argmax(), torch.nansum(x), torch.nanmean(x), x.mean(), torch.nan_to_num(x), torch.isnan(x).any(), x.cumsum(0), x.clamp(0, 2))",
    "fill an int tensor with nan": "torch.zeros(2, dtype=torch.int64).fill_(float('nan'))",
    "gradient of sqrt at zero": "x = torch.tensor([0., 4.], requires_grad=True)\ntorch.sqrt(x).sum().backward()\ny = torch.tensor([0.], requires_grad=True)\n(y * torch.log(y)).sum().backward()\nprint(x.grad, y.grad)",
    # ---- seeded draws ---------------------------------------------------------------------------------------------
    "seeded draws from a Generator object": "g = torch.Generator().manual_seed(42)\nprint(torch.randn(3, generator=g), torch.rand(2, generator=g), torch.randperm(5, generator=g), torch.randint(0, 10, (4,), generator=g), g.initial_seed())",
    "seeded draws in float64 and half": "torch.manual_seed(7)\nprint(torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64), torch.randn(2, dtype=torch.float16), torch.rand(2, dtype=torch.bfloat16))",
    "seeded xavier trunc_normal and kaiming draws": "torch.manual_seed(10)\nw = torch.empty(2, 3)\nprint(nn.init.xavier_normal_(w), nn.init.trunc_normal_(torch.empty(4), std=0.5), nn.init.kaiming_normal_(torch.empty(2, 2), nonlinearity='relu'), nn.init.normal_(torch.empty(3), 1., 0.1), nn.init.uniform_(torch.empty(2), -2, 2))",
    "seeded random_split and shuffled loader": "torch.manual_seed(12)\nds = torch.utils.data.TensorDataset(torch.arange(10))\na, b = torch.utils.data.random_split(ds, [0.7, 0.3])\nprint(a.indices, b.indices, [x.tolist() for x, in torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)])",
    # ---- more linear algebra, norms, formatting, truth values, optimizers and seeded draws ------------------------
    "linalg.solve left False": "A = torch.tensor([[2., 1.], [0., 3.]])\nB = torch.tensor([[1., 2.], [3., 4.]])\nprint(torch.linalg.solve(A, B, left=False), torch.linalg.solve(A, B))",
    "qr shapes": "Q, R = torch.linalg.qr(torch.tensor([[1., 2.], [3., 4.], [5., 6.]]))\nprint(Q.shape, R.shape, torch.linalg.qr(torch.ones(3, 2), mode='complete').Q.shape, torch.linalg.qr(torch.ones(3, 2), mode='r'))",
    "det of batch and slogdet": "A = torch.tensor([[[2., 0.], [0., 3.]], [[1., 2.], [2., 4.]]])\nprint(torch.linalg.det(A), torch.linalg.slogdet(A), torch.logdet(A))",
    "norm with dim and keepdim": "x = torch.tensor([[3., 4.], [6., 8.]])\nprint(x.norm(dim=1, keepdim=True), torch.norm(x, p='fro'), torch.norm(x, p='nuc'), torch.linalg.vector_norm(x, ord=0), torch.linalg.vector_norm(x, float('-inf')), F.normalize(x, dim=1))",
    "norm of an int tensor": "torch.linalg.norm(torch.tensor([3, 4]))",
    "einsum bilinear and trace forms": "a = torch.arange(4.).reshape(2, 2)\nprint(torch.einsum('ij,ij->', a, a), torch.einsum('ij->ji', a), torch.einsum('bi,bj->bij', a, a).shape, torch.einsum('i,i', a[0], a[1]), torch.einsum(a, [0, 1], [1]))",
    "where with a mixed dtype": "print(torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), torch.tensor([1.5, 2.5])), torch.where(torch.tensor([True]), torch.tensor([1], dtype=torch.int8), 300))",
    "var with correction 2 and dims": "x = torch.arange(12.).reshape(3, 4)\nprint(x.var(dim=(0, 1)), x.var(dim=1, correction=2), torch.var(x, 0, keepdim=True), x.std(dim=-1, unbiased=True))",
    "numpy bool of a tensor compare": "import numpy as np\nprint(np.all(torch.tensor([1, 2]) > 0), bool((torch.tensor([1, 2]) > 0).all()), torch.tensor([1, 2]).eq(torch.tensor([1, 2])).all().item())",
    "optimizer with duplicate params warns": _WARN + "p = nn.Parameter(torch.ones(1))\nshow_warnings(lambda: print(len(torch.optim.SGD([p, p], lr=0.1).param_groups[0]['params'])))",
    "pad_sequence of mismatched trailing dims": "nn.utils.rnn.pad_sequence([torch.ones(3, 2), torch.ones(2, 3)])",
    "format 0-d with width and sign": "t = torch.tensor(-0.5)\nprint(f'{t:+.2f}|{t:>10.3f}|{t:<8}|{t:e}|{t:%}|{t:g}', format(torch.tensor(1234567.), ','), f'{torch.tensor(2, dtype=torch.uint8):03d}')",
    "format of a one element 1-d": "print(f'{torch.tensor([1.5]):.1f}')",
    "assert on a tensor": "x = torch.ones(3)\nassert x.sum() == 3\nassert (x == 1).all()\nprint('ok')\nassert x == 1",
    "seeded sampler draws": "torch.manual_seed(36)\nprint(list(torch.utils.data.RandomSampler(range(6))), list(torch.utils.data.WeightedRandomSampler([0.1, 0.9, 0.5], 5)), list(torch.utils.data.SubsetRandomSampler([4, 5, 6])))",
    "ReduceLROnPlateau bad mode": "torch.optim.lr_scheduler.ReduceLROnPlateau(torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0), mode='avg')",
    "matrix_norm with a bad ord": "torch.linalg.matrix_norm(torch.ones(2, 2), ord=3)",
    "einsum with a bad subscript": "torch.einsum('ij,jk->il', torch.ones(2, 2), torch.ones(2, 2))",
    "topk with a negative k": "torch.tensor([1., 2.]).topk(-1)",
    "median of an empty tensor": "torch.tensor([]).median()",
    "int modulo by zero": "torch.tensor([5]) % 0",
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(SNIPPETS)
    json.dump({name: run(SNIPPETS[name]) for name in names}, sys.stdout)
