"""torchinfo summaries where users go next: depths 0-4 of nested containers (ModuleList, ModuleDict,
repeated and shared modules), every column incl. params_percent and mult_adds, row settings, input_size
with dtypes, a bidirectional stacked GRU/LSTM, a transformer encoder, frozen parameters, train/eval
modes, cache_forward_pass and dict inputs."""
import torch
from torch import nn
from torchinfo import summary

from _common import emit

ALL_COLUMNS = ("input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds", "trainable")


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(channels)
        self.act = nn.ReLU()

    def forward(self, x):
        return x + self.act(self.norm(self.conv(x)))


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.GELU())
        self.stages = nn.ModuleList([nn.Sequential(Block(4), Block(4)), nn.Sequential(Block(4))])
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 5), "reg": nn.Sequential(nn.Linear(4, 3), nn.Tanh())})
        self.shared = nn.Linear(5, 5)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        x = self.pool(x).flatten(1)
        cls = self.shared(self.shared(self.heads["cls"](x)))  # one module called twice
        return cls, self.heads["reg"](x)


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 8, padding_idx=0)
        self.gru = nn.GRU(8, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm = nn.LSTM(12, 4, proj_size=2, batch_first=True)
        self.out = nn.Linear(2, 3)

    def forward(self, tokens):
        hidden, _ = self.gru(self.embed(tokens))
        hidden, (h, c) = self.lstm(hidden)
        return self.out(hidden[:, -1])


class DictInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 4)
        self.b = nn.Linear(2, 4)

    def forward(self, batch):
        return self.a(batch["x"]) * self.b(batch["y"])


torch.manual_seed(0)
nested = Nested().double()
nested.heads["reg"][0].weight.requires_grad_(False)  # a partly frozen layer
results = {}
for depth in range(5):
    results[f"nested_depth{depth}"] = str(summary(nested, input_size=(2, 3, 8, 8), dtypes=[torch.float64],
                                                  depth=depth, col_names=ALL_COLUMNS, verbose=0))
stats = summary(nested, input_data=torch.zeros(2, 3, 8, 8, dtype=torch.float64), verbose=0, mode="train",
                row_settings=("depth", "var_names", "ascii_only"), col_names=("output_size", "num_params"),
                col_width=18)
results["nested_rows"] = str(stats)
results["nested_totals"] = [stats.total_params, stats.trainable_params, stats.total_mult_adds,
                            stats.total_input, stats.total_output_bytes, stats.total_param_bytes]
results["nested_still_eval"] = [m.training for m in nested.modules()][:4]

sequence = Sequence()
for depth in (1, 3):
    results[f"sequence_depth{depth}"] = str(summary(sequence, input_data=[torch.ones(4, 9, dtype=torch.long)],
                                                    depth=depth, col_names=ALL_COLUMNS, verbose=0,
                                                    row_settings=("var_names",)))
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
                                num_layers=2, enable_nested_tensor=False)
results["transformer"] = str(summary(encoder, input_size=(2, 5, 8), depth=4, verbose=0,
                                     col_names=("input_size", "output_size", "num_params", "mult_adds")))
results["dict_input"] = str(summary(DictInput(), input_data=[{"x": torch.zeros(2, 3), "y": torch.zeros(2, 2)}],
                                    verbose=0, cache_forward_pass=True))
emit(results)
