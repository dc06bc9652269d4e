"""Kornia's differentiable image operations on float64 images, with gradients: filters (Gaussian, Sobel,
Laplacian, median, bilateral), colour conversions, geometric warps (affine, perspective, rotation,
resize), morphology, enhancement, edges, feature responses, losses and metrics."""
import math

import torch
import kornia
import kornia.augmentation as K

from _common import data, emit

torch.set_default_dtype(torch.float64)
image = torch.sigmoid(data(2, 3, 12, 12))
results = {}


def with_grad(name, fn, source=image):
    x = source.clone().requires_grad_()
    out = fn(x)
    first = out[0] if isinstance(out, (tuple, list)) else out
    if first.requires_grad:  # (canny's thresholded edges carry no gradient)
        (first.double() * torch.linspace(0.5, 1.5, first.numel()).view_as(first)).sum().backward()
    results[name] = {"out": out, "grad": x.grad}


with_grad("gaussian_blur", lambda x: kornia.filters.gaussian_blur2d(x, (5, 5), (1.2, 0.8)))
with_grad("box_blur", lambda x: kornia.filters.box_blur(x, (3, 3)))
with_grad("sobel", lambda x: kornia.filters.sobel(x))
with_grad("laplacian", lambda x: kornia.filters.laplacian(x, 3))
with_grad("median", lambda x: kornia.filters.median_blur(x, (3, 3)))
with_grad("bilateral", lambda x: kornia.filters.bilateral_blur(x, (3, 3), 0.1, (1.5, 1.5)))
with_grad("unsharp", lambda x: kornia.filters.unsharp_mask(x, (3, 3), (1.5, 1.5)))
with_grad("canny", lambda x: kornia.filters.canny(x)[1])
with_grad("rgb_to_hsv", kornia.color.rgb_to_hsv)
with_grad("rgb_to_lab", kornia.color.rgb_to_lab)
with_grad("rgb_to_ycbcr", kornia.color.rgb_to_ycbcr)
with_grad("grayscale", kornia.color.rgb_to_grayscale)
with_grad("rotate", lambda x: kornia.geometry.transform.rotate(x, torch.tensor([30.0, -45.0])))
with_grad("warp_affine", lambda x: kornia.geometry.transform.warp_affine(
    x, torch.tensor([[[0.9, 0.1, 1.0], [-0.2, 1.1, -0.5]]]).repeat(2, 1, 1), (10, 11)))
with_grad("warp_perspective", lambda x: kornia.geometry.transform.warp_perspective(
    x, torch.tensor([[[1.0, 0.1, 0.5], [0.05, 0.95, -0.3], [0.001, 0.002, 1.0]]]).repeat(2, 1, 1), (12, 12)))
with_grad("resize", lambda x: kornia.geometry.transform.resize(x, (7, 9), antialias=True))
with_grad("pyrdown", kornia.geometry.transform.pyrdown)
with_grad("dilation", lambda x: kornia.morphology.dilation(x, torch.ones(3, 3)))
with_grad("opening", lambda x: kornia.morphology.opening(x, torch.ones(3, 3)))
with_grad("adjust", lambda x: kornia.enhance.adjust_saturation(kornia.enhance.adjust_contrast(x, 1.3), 0.7))
with_grad("equalize_clahe", lambda x: kornia.enhance.equalize_clahe(x, clip_limit=2.0, grid_size=(2, 2)))
with_grad("harris", lambda x: kornia.feature.harris_response(kornia.color.rgb_to_grayscale(x)))
with_grad("ssim_loss", lambda x: kornia.losses.ssim_loss(x, image.flip(-1), 5))
with_grad("total_variation", kornia.losses.total_variation)
with_grad("psnr", lambda x: kornia.metrics.psnr(x, image.flip(-2), 1.0))
center = torch.tensor([[6.0, 6.0], [5.0, 7.0]])
results["rotation_matrix"] = kornia.geometry.transform.get_rotation_matrix2d(center, torch.tensor([30.0, 60.0]),
                                                                             torch.ones(2, 2))
results["homography"] = kornia.geometry.homography.find_homography_dlt(
    torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]]),
    torch.tensor([[[0.1, 0.0], [1.2, 0.1], [1.0, 1.3], [-0.1, 0.9]]]))
results["deg2rad"] = kornia.geometry.conversions.deg2rad(torch.tensor([30.0, 90.0]))
results["angle_axis"] = kornia.geometry.conversions.axis_angle_to_rotation_matrix(torch.tensor([[0.1, 0.2, 0.3]]))
results["quaternion"] = kornia.geometry.conversions.rotation_matrix_to_quaternion(results["angle_axis"])
torch.manual_seed(0)
augment = K.AugmentationSequential(K.RandomHorizontalFlip(p=0.5), K.RandomAffine(degrees=20.0, p=1.0),
                                   K.ColorJitter(0.1, 0.1, 0.1, 0.0, p=1.0))
results["augmented"] = augment(image)
results["pi"] = math.pi
emit(results)
