"""torchinfo's summary table of a small CNN and of a recurrent model."""
import torch
from torch import nn
from torchinfo import summary

from _common import emit


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 10), nn.Dropout(0.1), nn.Linear(10, 3))

    def forward(self, x):
        return self.head(self.features(x))


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 5, batch_first=True)
        self.out = nn.Linear(5, 2)

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embed(tokens))
        return self.out(hidden[:, -1])


cnn = summary(Net().double(), input_data=[torch.zeros(2, 1, 8, 8, dtype=torch.float64)], verbose=0,
              col_names=("input_size", "output_size", "num_params", "kernel_size", "trainable"))
rnn = summary(Recurrent(), input_data=[torch.zeros(3, 7, dtype=torch.long)], verbose=0, depth=2)
emit({"cnn": str(cnn), "rnn": str(rnn), "cnn_total": cnn.total_params, "rnn_total": rnn.total_params,
      "cnn_mult_adds": cnn.total_mult_adds})
