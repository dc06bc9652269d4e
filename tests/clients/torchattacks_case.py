"""torchattacks adversarial attacks on a small float64 CNN: gradient-sign and projected-gradient attacks
(autograd.grad with respect to the input images), momentum and input-diversity variants, L2 attacks,
Carlini-Wagner (an optimiser on the perturbation), DeepFool (Jacobians of the logits), targeted modes,
normalisation and the robust-accuracy helpers."""
import torch
from torch import nn
import torchattacks

from _common import emit, fill

torch.set_default_dtype(torch.float64)  # the attacks make helper tensors in the default dtype


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(4, 6, 3, padding=1), nn.Tanh())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(6 * 4 * 4, 5))

    def forward(self, x):
        return self.head(self.features(x))


model = fill(Net(), scale=0.5).eval()
generator = torch.Generator().manual_seed(3)
images = torch.rand(4, 3, 8, 8, generator=generator)
labels = torch.tensor([0, 1, 2, 3])
results = {"clean": model(images)}

ATTACKS = {
    "FGSM": lambda: torchattacks.FGSM(model, eps=8 / 255),
    "BIM": lambda: torchattacks.BIM(model, eps=8 / 255, alpha=2 / 255, steps=4),
    "PGD": lambda: torchattacks.PGD(model, eps=8 / 255, alpha=2 / 255, steps=4, random_start=True),
    "PGDL2": lambda: torchattacks.PGDL2(model, eps=0.5, alpha=0.1, steps=4, random_start=True),
    "RFGSM": lambda: torchattacks.RFGSM(model, eps=8 / 255, alpha=2 / 255, steps=3),
    "FFGSM": lambda: torchattacks.FFGSM(model, eps=8 / 255, alpha=10 / 255),
    "TPGD": lambda: torchattacks.TPGD(model, eps=8 / 255, alpha=2 / 255, steps=3),
    "MIFGSM": lambda: torchattacks.MIFGSM(model, eps=8 / 255, alpha=2 / 255, steps=4, decay=1.0),
    "NIFGSM": lambda: torchattacks.NIFGSM(model, eps=8 / 255, alpha=2 / 255, steps=3),
    "VMIFGSM": lambda: torchattacks.VMIFGSM(model, eps=8 / 255, alpha=2 / 255, steps=3, N=3),
    "SINIFGSM": lambda: torchattacks.SINIFGSM(model, eps=8 / 255, alpha=2 / 255, steps=3, m=3),
    "EOTPGD": lambda: torchattacks.EOTPGD(model, eps=8 / 255, alpha=2 / 255, steps=3, eot_iter=2),
    "UPGD": lambda: torchattacks.UPGD(model, eps=8 / 255, alpha=2 / 255, steps=3, loss="ce"),
    "Jitter": lambda: torchattacks.Jitter(model, eps=8 / 255, alpha=2 / 255, steps=3),
    "GN": lambda: torchattacks.GN(model, std=0.1),
    "CW": lambda: torchattacks.CW(model, c=1, kappa=0, steps=10, lr=0.01),
    "DeepFool": lambda: torchattacks.DeepFool(model, steps=5, overshoot=0.02),
}

for name, make in ATTACKS.items():
    torch.manual_seed(0)
    attack = make()
    adversarial = attack(images, labels)
    results[name] = {"images": adversarial, "logits": model(adversarial), "repr": repr(attack).split("(")[0]}

torch.manual_seed(0)
targeted = torchattacks.PGD(model, eps=8 / 255, alpha=2 / 255, steps=4)
targeted.set_mode_targeted_by_function(target_map_function=lambda images, labels: (labels + 1) % 5)
results["targeted"] = targeted(images, labels)
targeted.set_mode_targeted_least_likely(kth_min=1)
results["least_likely"] = targeted(images, labels)

torch.manual_seed(0)
normalized = torchattacks.FGSM(model, eps=8 / 255)
normalized.set_normalization_used(mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3])
results["normalized"] = normalized(images, labels)
results["robust_accuracy"] = torchattacks.FGSM(model, eps=8 / 255).get_logits(images).argmax(1)
emit(results)
