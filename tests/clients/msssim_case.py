"""pytorch-msssim SSIM and MS-SSIM (Gaussian windows by grouped conv2d/conv3d, average-pooled scales) on
float64 images and volumes: functional and module forms, per-channel and non-negative variants, custom
windows and weights, and gradients through the loss training a small denoiser a few steps.

The library builds its default window in float32, normalised by a float32 sum whose rounding depends on
torch's summation order (one ulp apart on hookgrad), so the calls here pass float64 windows of the same
Gaussian (``win=``, or a module's ``win`` attribute)."""
import torch
from pytorch_msssim import MS_SSIM, SSIM, ms_ssim, ssim
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
clean = data(2, 3, 48, 48).sigmoid()
noisy = (clean + 0.1 * data(2, 3, 48, 48, seed=2)).clamp(0, 1)
big_clean = data(1, 1, 180, 180, seed=3).sigmoid()
big_noisy = (big_clean + 0.05 * data(1, 1, 180, 180, seed=4)).clamp(0, 1)
volume = data(1, 2, 20, 20, 20, seed=5).sigmoid()
volume_noisy = (volume + 0.1 * data(1, 2, 20, 20, 20, seed=6)).clamp(0, 1)


def window(channels, dims=2, size=11, sigma=1.5):
    coords = torch.arange(size, dtype=torch.float64) - size // 2
    gauss = torch.exp(-coords ** 2 / (2 * sigma ** 2))
    return (gauss / gauss.sum()).reshape(1, 1, size).repeat([channels, 1] + [1] * dims)


def module(kind, channel, size=11):
    made = kind(data_range=1.0, channel=channel, win_size=size)
    made.win = window(channel, size=size)
    return made


results = {
    "ssim": ssim(clean, noisy, data_range=1.0, win=window(3)),
    "ssim_per_image": ssim(clean, noisy, data_range=1.0, size_average=False, win=window(3)),
    "ssim_nonnegative": ssim(clean, noisy, data_range=1.0, nonnegative_ssim=True, win=window(3)),
    "ssim_window": ssim(clean, noisy, data_range=1.0, win=window(3, size=7, sigma=1.0), K=(0.02, 0.04)),
    "ssim_255": ssim(clean * 255, noisy * 255, data_range=255, win=window(3)),
    "ssim_volume": ssim(volume, volume_noisy, data_range=1.0, win=window(2, 3, size=5)),
    "ms_ssim": ms_ssim(big_clean, big_noisy, data_range=1.0, win=window(1)),
    "ms_ssim_weights": ms_ssim(big_clean, big_noisy, data_range=1.0, win=window(1, size=7),
                               weights=[0.25, 0.25, 0.25, 0.25]),
    "ms_ssim_per_image": ms_ssim(big_clean.expand(2, 3, -1, -1), big_noisy.expand(2, 3, -1, -1),
                                 data_range=1.0, size_average=False, win=window(3)),
    "module_ssim": module(SSIM, 3)(clean, noisy),
    "module_ms_ssim": module(MS_SSIM, 1, size=7)(big_clean, big_noisy),
}

# a denoiser trained on 1 - MS-SSIM, with a forward hook recording the loss module's input statistics
denoiser = fill(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 3, padding=1),
                              nn.Sigmoid()), scale=0.3)
loss_module = module(MS_SSIM, 1, size=7)
seen = []
loss_module.register_forward_pre_hook(lambda m, args: seen.append([a.mean().item() for a in args]))
optimizer = torch.optim.Adam(denoiser.parameters(), lr=1e-2)
losses = []
for _ in range(3):
    optimizer.zero_grad()
    loss = 1 - loss_module(denoiser(big_noisy), big_clean)
    loss.backward()
    losses.append(loss.item())
    optimizer.step()
results["training"] = {"losses": losses, "seen": seen, "grads": [p.grad for p in denoiser.parameters()]}
image = noisy.clone().requires_grad_()
ssim(clean, image, data_range=1.0, win=window(3)).backward()
results["input_grad"] = image.grad[0, 0, :4, :4]
for name, call in {"odd_window": lambda: ssim(clean, noisy, win_size=4),
                   "shape_mismatch": lambda: ssim(clean, noisy[:, :2]),
                   "too_small": lambda: ms_ssim(clean, noisy)}.items():
    try:
        call()
        results[name] = "no error"
    except (ValueError, AssertionError) as error:
        results[name] = [type(error).__name__, str(error)]
emit(results)
