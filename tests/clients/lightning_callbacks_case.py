"""PyTorch Lightning beyond the basic loop, each on a float64 model: a LightningDataModule, torchmetrics
objects and grad_norm logged from the module, the progress bar, the simple, advanced and PyTorch
profilers, StochasticWeightAveraging, WeightAveraging, ModelPruning, BackboneFinetuning,
GradientAccumulationScheduler, manual optimization with two optimizers and clipping, TensorBoardLogger,
batch limits and val_check_interval, fast_dev_run, overfit_batches, deterministic mode, weights-only
checkpoints, Timer, ThroughputMonitor, freeze/unfreeze, the learning-rate and batch-size finders."""
import os
import tempfile
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
import torchmetrics
from lightning.pytorch import callbacks
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.tuner import Tuner
from lightning.pytorch.utilities import grad_norm

from _common import data, emit, fill

warnings.filterwarnings("ignore")


class Data(L.LightningDataModule):
    def __init__(self, batch_size=8):
        super().__init__()
        self.batch_size = batch_size

    def setup(self, stage=None):
        x = data(64, 4, seed=1)
        self.dataset = TensorDataset(x, (x[:, 0] > 0).long())

    def train_dataloader(self):
        return DataLoader(self.dataset, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.dataset, batch_size=16)


class Classifier(L.LightningModule):
    def __init__(self, lr=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        self.backbone = self.net[0]  # what BackboneFinetuning freezes
        self.accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=2)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        out = self(x)
        loss = nn.functional.cross_entropy(out, y)
        self.accuracy(out, y)
        self.log("train_acc", self.accuracy, on_epoch=True)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def on_before_optimizer_step(self, optimizer):
        self.log_dict(grad_norm(self, norm_type=2))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class TwoOptimizers(L.LightningModule):
    """A generator/critic pair trained by hand (automatic_optimization off)."""

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Linear(3, 4)
        self.critic = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        generator_opt, critic_opt = self.optimizers()
        x = batch[0]
        self.toggle_optimizer(critic_opt)
        critic_loss = self.critic(self.generator(x[:, :3]).detach()).mean() - self.critic(x).mean()
        critic_opt.zero_grad()
        self.manual_backward(critic_loss)
        self.clip_gradients(critic_opt, gradient_clip_val=0.5, gradient_clip_algorithm="norm")
        critic_opt.step()
        self.untoggle_optimizer(critic_opt)
        self.toggle_optimizer(generator_opt)
        generator_loss = -self.critic(self.generator(x[:, :3])).mean()
        generator_opt.zero_grad()
        self.manual_backward(generator_loss)
        generator_opt.step()
        self.untoggle_optimizer(generator_opt)
        self.log_dict({"critic_loss": critic_loss, "generator_loss": generator_loss}, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.generator.parameters(), lr=0.01), torch.optim.RMSprop(self.critic.parameters(),
                                                                                            lr=0.01)


root = tempfile.mkdtemp()


def trainer(**options):
    settings = dict(max_epochs=2, accelerator="cpu", devices=1, precision="64-true", logger=False,
                    enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=False,
                    default_root_dir=root)
    settings.update(options)
    return L.Trainer(**settings)


def fit(model, **options):
    run = trainer(**options)
    run.fit(model, datamodule=Data())
    return ([p.detach().clone() for p in model.parameters()],
            {k: float(v) for k, v in sorted(run.callback_metrics.items())}, run.global_step)


def classifier():
    return fill(Classifier().double())


results = {
    "progress_bar": fit(classifier(), enable_progress_bar=True),
    "profiler_simple": fit(classifier(), profiler="simple"),
    "profiler_advanced": fit(classifier(), profiler="advanced"),
    # the trace files differ (hookgrad's profiler is not Kineto, so Lightning takes its other branch)
    "profiler_pytorch": fit(classifier(), profiler="pytorch", max_epochs=1),
    "swa": fit(classifier(), max_epochs=3,
               callbacks=[callbacks.StochasticWeightAveraging(swa_lrs=0.05, swa_epoch_start=1)]),
    "weight_averaging": fit(classifier(), callbacks=[callbacks.WeightAveraging()]),
    "pruning": fit(classifier(), callbacks=[callbacks.ModelPruning("l1_unstructured", amount=0.3)]),
    "finetune": fit(classifier(), callbacks=[callbacks.BackboneFinetuning(unfreeze_backbone_at_epoch=1)]),
    "accumulation_schedule": fit(classifier(), callbacks=[callbacks.GradientAccumulationScheduler({0: 2, 1: 1})]),
    "manual": fit(fill(TwoOptimizers().double())),
    "tensorboard": fit(classifier(), logger=TensorBoardLogger(root)),
    "limits": fit(classifier(), limit_train_batches=3, limit_val_batches=2, val_check_interval=2,
                  num_sanity_val_steps=1),
    "deterministic": fit(classifier(), deterministic=True),
    "fast_dev_run": fit(classifier(), fast_dev_run=2),
    "overfit": fit(classifier(), overfit_batches=2),
    "timer": fit(classifier(), callbacks=[callbacks.Timer(duration="00:00:10:00")]),
    "throughput": fit(classifier(), logger=CSVLogger(root),
                      callbacks=[callbacks.ThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0])]),
}

weights_dir = os.path.join(root, "weights")
results["weights_only"] = fit(classifier(), enable_checkpointing=True, callbacks=[
    callbacks.ModelCheckpoint(dirpath=weights_dir, save_weights_only=True, every_n_train_steps=3)])
saved = torch.load(os.path.join(weights_dir, sorted(os.listdir(weights_dir))[-1]), weights_only=False)
results["weights_only_files"] = sorted(os.listdir(weights_dir))
results["weights_only_keys"] = sorted(saved)

model = classifier()
model.freeze()
frozen = [p.requires_grad for p in model.parameters()]
model.unfreeze()
results["freeze"] = [frozen, [p.requires_grad for p in model.parameters()], str(model.dtype), str(model.device),
                     model.training]

finder = Tuner(trainer(max_epochs=1)).lr_find(classifier(), datamodule=Data(), num_training=20, min_lr=1e-3,
                                              max_lr=1.0)
results["lr_find"] = [finder.suggestion(), finder.results["lr"], finder.results["loss"]]
results["batch_size_find"] = Tuner(trainer(max_epochs=1)).scale_batch_size(
    classifier(), datamodule=Data(), mode="power", steps_per_trial=1, max_trials=3)
emit(results)
