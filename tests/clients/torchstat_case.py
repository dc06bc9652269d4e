"""torchstat: per-layer shapes, parameters, memory, MAdd, FLOPs and memory traffic of CNNs, gathered by
replacing every leaf module class's __call__ and writing the figures into registered buffers, collected
from its stat tree at several granularities (its memory sums over inner nodes and its report table fail on
either framework with today's Python and pandas; its durations are wall-clock times)."""
import torch
from torch import nn
from torchstat import ModelStat

from _common import emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.ReLU(),
                                   nn.MaxPool2d(2), nn.ConvTranspose2d(8, 4, 2, stride=2), nn.ELU(),
                                   nn.AvgPool2d(2), nn.LeakyReLU(0.1), nn.Upsample(scale_factor=2))
        self.head = nn.Linear(4 * 16 * 16, 10)
        self.prob = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.block(self.stem(x))
        return self.prob(self.head(x.view(x.size(0), -1)))


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 5, padding=2, dilation=1)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        x = self.bn(self.pool(torch.relu(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def node_figures(node):
    figures = {"name": node.name, "input_shape": node.input_shape, "output_shape": node.output_shape,
               "parameters": int(node.parameter_quantity), "memory": float(node.inference_memory),
               "madd": int(node.MAdd), "flops": int(node.Flops), "depth": node.depth,
               "granularity": node.granularity}
    if not node.children:   # (an inner node's Memory sum writes into a tuple)
        figures["mem_rw"] = [int(m) for m in node.Memory]
    return figures


def analysed(model, input_size, granularity):
    torch.manual_seed(0)   # the probe input is torch.rand
    nodes = ModelStat(model, input_size, query_granularity=granularity)._analyze_model()
    return [node_figures(n) for n in nodes]


results = {}
for granularity in (1, 2, 3):
    results[f"net_{granularity}"] = analysed(fill(Net()), (3, 32, 32), granularity)
small = fill(Small(), seed=3)
results["small"] = analysed(small, (1, 12, 12), 1)
results["buffers"] = sorted(name for name, _ in small.named_buffers())
results["patched_call"] = nn.Conv2d.__call__ is not nn.Module.__call__
results["small_2"] = analysed(fill(Small(), seed=4), (1, 12, 12), 2)
results["buffer_values"] = {name: b.tolist() for name, b in small.named_buffers() if name != "bn.num_batches_tracked"
                            and not name.endswith("duration")}
emit(results)
