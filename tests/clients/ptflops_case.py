"""ptflops (pytorch backend): MACs and parameter counts from module hooks plus its temporary patches of
torch.nn.functional and of torch/Tensor matmul, mm, bmm, addmm, mul and add, on a CNN with functional
calls, a transformer-like model (MultiheadAttention, LayerNorm, GELU), recurrent models, and with
ignore_modules, custom hooks and an input constructor; the per-layer tables it prints are compared too."""
import io
import sys

sys.modules["torchvision"] = None  # as where torchvision is not installed: the torchvision here does not import

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from ptflops import get_model_complexity_info  # noqa: E402
from torch import nn  # noqa: E402

from _common import emit, fill  # noqa: E402


class FunctionalCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.deconv = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 6)
        self.prelu = nn.PReLU()

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = torch.add(x, self.conv2(x)) * 0.5
        x = F.interpolate(self.deconv(x), size=(6, 6))
        x = F.avg_pool2d(self.up(x), 2)
        x = self.pool(F.gelu(x)).flatten(1)
        return F.softmax(self.prelu(self.fc(x)), dim=-1)


class Transformerish(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.proj = nn.Parameter(torch.zeros(8, 3))

    def forward(self, tokens):
        x = self.embed(tokens)
        attended, _ = self.attention(x, x, x)
        x = self.norm(x + attended)
        x = x + self.mlp(x)
        scores = torch.bmm(x, x.transpose(1, 2)).softmax(-1)
        return torch.matmul(scores @ x, self.proj).mean(1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.gru_cell = nn.GRUCell(12, 4)
        self.rnn = nn.RNN(4, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        h = self.gru_cell(out[:, -1])
        return self.rnn(h.unsqueeze(0))[0]


def complexity(model, shape, **kwargs):
    table = io.StringIO()
    macs, params = get_model_complexity_info(model, shape, as_strings=False, ost=table, **kwargs)
    strings = get_model_complexity_info(model, shape, as_strings=True, print_per_layer_stat=False, **kwargs)
    return {"macs": macs, "params": params, "strings": list(strings), "table": table.getvalue()}


def tokens(shape):
    return {"tokens": torch.arange(2 * shape[0]).reshape(2, shape[0]) % 30}


def scale_count(module, input, output):
    module.__flops__ += 7 * output.numel()


results = {
    "cnn": complexity(fill(FunctionalCNN()), (3, 8, 8)),
    "cnn_units": complexity(fill(FunctionalCNN()), (3, 8, 8), flops_units="MMac", param_units="K",
                            output_precision=4),
    "cnn_ignored": complexity(fill(FunctionalCNN()), (3, 8, 8), ignore_modules=[nn.Conv2d, nn.BatchNorm2d]),
    "cnn_no_functional": complexity(fill(FunctionalCNN()), (3, 8, 8),
                                    backend_specific_config={"count_functional": False}),
    "cnn_custom_hook": complexity(fill(FunctionalCNN()), (3, 8, 8), custom_modules_hooks={nn.PReLU: scale_count}),
    "transformer": complexity(fill(Transformerish()), (5,), input_constructor=tokens),
    "recurrent": complexity(fill(Recurrent()), (4, 5)),
}
# ptflops puts its patches back: the functions are torch's own again
results["unpatched"] = [F.relu.__name__, torch.matmul.__name__, torch.Tensor.add.__name__]
emit(results)
