"""PyTorch Lightning: Trainer.fit/validate/test/predict of a float64 model with EarlyStopping,
ModelCheckpoint (reloaded), LearningRateMonitor, gradient clipping, gradient accumulation, a
scheduler and self.log; the model summary table with its FLOPs column."""
import csv
import os
import tempfile
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities.model_summary import ModelSummary

from _common import data, emit, fill

warnings.filterwarnings("ignore")


class Classifier(L.LightningModule):
    def __init__(self, hidden=8, lr=0.2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 3))
        self.example_input_array = torch.zeros(2, 4, dtype=torch.float64)

    def forward(self, x):
        return self.net(x)

    def _loss(self, batch):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch), prog_bar=True)

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", self._loss(batch))
        self.log("test_acc", (self(x).argmax(-1) == y).double().mean())

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).softmax(-1)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.5)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}


def loader(seed, n=48):
    x = data(n, 4, seed=seed)
    y = ((x[:, 0] > 0).long() + (x[:, 1] > 0.5).long())
    return DataLoader(TensorDataset(x, y), batch_size=8)


def params(model):
    return [p.detach().clone() for p in model.parameters()]


def metrics(values):
    return {k: float(v) for k, v in sorted(values.items())}


results = {}
root = tempfile.mkdtemp()
model = fill(Classifier().double(), seed=3)
train, val = loader(1), loader(2, 24)
checkpoint = ModelCheckpoint(dirpath=os.path.join(root, "ckpt"), monitor="val_loss", save_top_k=2, save_last=True,
                             filename="m-{epoch}-{val_loss:.4f}")
stopping = EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05)
trainer = L.Trainer(max_epochs=6, accelerator="cpu", devices=1, precision="64-true",
                    logger=CSVLogger(root, name="logs", version=0),
                    callbacks=[checkpoint, stopping, LearningRateMonitor(logging_interval="step")],
                    gradient_clip_val=0.3, gradient_clip_algorithm="norm", accumulate_grad_batches=2,
                    enable_progress_bar=False, log_every_n_steps=1, deterministic=False)
trainer.fit(model, train, val)
results["params"] = params(model)
results["epochs_run"] = trainer.current_epoch
results["global_step"] = trainer.global_step
results["stopped_epoch"] = stopping.stopped_epoch
results["callback_metrics"] = metrics(trainer.callback_metrics)
results["best_score"] = float(checkpoint.best_model_score)
results["checkpoints"] = sorted(os.listdir(os.path.join(root, "ckpt")))
results["best_k"] = sorted(os.path.basename(k) for k in checkpoint.best_k_models)

with open(os.path.join(root, "logs", "version_0", "metrics.csv")) as f:
    rows = list(csv.DictReader(f))
results["csv_columns"] = sorted(rows[0])
results["csv_lr"] = [float(r["lr-SGD"]) for r in rows if r.get("lr-SGD")]
results["csv_train_loss_step"] = [float(r["train_loss_step"]) for r in rows if r.get("train_loss_step")]

results["validate"] = [metrics(d) for d in trainer.validate(model, val, verbose=False)]
results["test"] = [metrics(d) for d in trainer.test(model, val, verbose=False)]
results["predict"] = trainer.predict(model, loader(4, 10))

best = Classifier.load_from_checkpoint(checkpoint.best_model_path)
results["reloaded_hparams"] = dict(best.hparams)
results["reloaded_params"] = params(best)
saved = torch.load(checkpoint.best_model_path, weights_only=False)
results["checkpoint_keys"] = sorted(saved)
results["checkpoint_state"] = sorted(saved["state_dict"])
results["checkpoint_optimizer"] = saved["optimizer_states"][0]["state"][0]["momentum_buffer"]
results["checkpoint_epoch_step"] = [saved["epoch"], saved["global_step"]]

# resuming from the last checkpoint continues the same run
resumed = fill(Classifier().double(), seed=9)
more = L.Trainer(max_epochs=results["epochs_run"] + 1, accelerator="cpu", devices=1, precision="64-true",
                 logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                 gradient_clip_val=0.3, accumulate_grad_batches=2)
more.fit(resumed, train, val, ckpt_path=os.path.join(root, "ckpt", "last.ckpt"))
results["resumed_params"] = params(resumed)
results["resumed_step"] = more.global_step

results["summary"] = str(ModelSummary(model, max_depth=2))
results["summary_depth1"] = str(ModelSummary(model, max_depth=1))
emit(results)
