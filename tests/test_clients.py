"""Real hook libraries from PyPI, unmodified, on hookgrad: the same script runs under real torch
(``python script.py``) and under ``python -m hookgrad run script.py``; each prints its results as
JSON and the two must agree (float64 models, values to 1e-10).

The scripts live in tests/clients/; a few cases run at once (torch and hookgrad never share a
process). A case is (script, arguments, what it checks).
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
CLIENTS = os.path.join(ROOT, "tests", "clients")
TIMEOUT = 180
RTOL = ATOL = 1e-10

CASES = {
    "opacus": ("opacus_case.py", [], "GradSampleModule per-sample gradients (Linear, Conv2d) and a "
                                     "DPOptimizer step with the noise off"),
    "backpack_mse": ("backpack_case.py", [], "BatchGrad, BatchL2Grad, SumGradSquared, Variance and DiagGGNExact "
                                             "on a Linear and a Conv2d model with MSELoss"),
    "torchviz": ("torchviz_case.py", [], "make_dot node labels and edges of an MLP"),
    "torchviz_attrs": ("torchviz_case.py", ["attrs"], "make_dot with params, show_attrs, show_saved; CNN graph"),
    "torchview": ("torchview_case.py", [], "draw_graph node labels and edges of a CNN, an MLP and a residual model "
                                           "(recorded through a __torch_function__ Tensor subclass)"),
    "captum": ("captum_case.py", [], "Saliency, DeepLift and DeepLiftShap (MaxPool2d rule), LayerGradCam"),
    "captum_integrated": ("captum_integrated_case.py", [], "IntegratedGradients (riemann, gauss-legendre, "
                                                          "convergence delta) and LayerConductance"),
    "backpack_cross_entropy": ("backpack_case.py", ["cross-entropy"], "BackPACK quantities with CrossEntropyLoss"),
    "thop": ("thop_case.py", [], "profile: MACs and parameter counts of a CNN and an MLP"),
    "torchinfo": ("torchinfo_case.py", [], "summary table text of a CNN and an LSTM model"),
    "fx_clients": ("fx_case.py", [], "BackPACK's torch.fx module converter on a residual model; thop's fx_profile"),
    "torchscan": ("torchscan_case.py", [], "summary text and report of a CNN and an MLP: operator FLOPs from "
                                           "FlopCounterMode, observed ATen operators from a TorchDispatchMode"),
    "summary_tables": ("summary_tables_case.py", [], "torchsummary and pytorch_model_summary tables of a residual "
                                                     "CNN, a two-input model and a GRU model"),
    "einops": ("einops_case.py", [], "einops functions, pack/unpack and einops.layers.torch (Rearrange, Reduce, "
                                     "EinMix) in a hooked model, with backward"),
    "torch_pruning": ("torch_pruning_case.py", [], "Torch-Pruning dependency groups, MetaPruner steps (magnitude, "
                                                   "BN scale, Taylor; residual CNN and transformer-like block) and "
                                                   "count_ops_and_params"),
    "zennit": ("zennit_case.py", [], "Zennit LRP composites (epsilon/plus/flat, gamma/box, alpha-beta, guided "
                                     "backprop, excitation) with a batch-norm canonizer; SmoothGrad, "
                                     "IntegratedGradients, Occlusion"),
    "ptflops": ("ptflops_case.py", [], "ptflops (pytorch backend) MACs, parameters and per-layer tables of a CNN with "
                                       "functional calls, a transformer-like and recurrent models"),
    "torchextractor": ("torchextractor_case.py", [], "torchextractor feature maps by names and by filter, custom "
                                                     "capture, gradients through them, hooks removed on delete"),
    "pyhessian": ("pyhessian_case.py", [], "PyHessian top eigenvalues and Hutchinson trace (double backward)"),
    "hessian_eigenthings": ("hessian_eigenthings_case.py", [], "hessian-eigenthings Hessian, GGN and Fisher "
                                                               "operators; power iteration, Lanczos, traces, density"),
    "curvlinops": ("curvlinops_case.py", [], "curvlinops Hessian/GGN/EF/MC-Fisher/Jacobian operators, KFAC and EKFAC "
                                             "(module and tensor hooks), inverses, trace and diagonal estimators"),
    "captum_attrs": ("captum_attrs_case.py", [], "Captum GuidedBackprop, Deconvolution, GuidedGradCam, LRP, neuron and "
                                                 "layer methods, DeepLift on smooth nonlinearities, GradientShap, "
                                                 "NoiseTunnel, ShapleyValueSampling, Occlusion, FeatureAblation"),
    "opacus_layers": ("opacus_layers_case.py", [], "Opacus per-sample gradients of Conv1d/2d/3d, LayerNorm, GroupNorm, "
                                                   "InstanceNorm, RMSNorm, Embedding, DPMultiheadAttention, DPLSTM, "
                                                   "DPGRU; ghost clipping; a PrivacyEngine loop with noise"),
    "backpack_curvature": ("backpack_curvature_case.py", [], "BackPACK DiagGGN (exact, MC, per sample), sqrt GGN, "
                                                             "DiagHessian, KFAC/KFLR/KFRA, HMP/GGNMP/PCHMP on conv "
                                                             "nets; Hessian-free products; RNN first-order"),
    "torchinfo_variants": ("torchinfo_variants_case.py", [], "torchinfo depths 0-4 of nested containers, all columns, "
                                                             "row settings, stacked bidirectional GRU, projected LSTM, "
                                                             "transformer encoder, frozen parameters, dict input"),
    "torchcam": ("torchcam_case.py", [], "TorchCAM CAM, Grad-CAM/++, XGradCAM, LayerCAM, Score-CAM/SS-CAM/IS-CAM, "
                                         "SmoothGradCAM++, fused layers, layer location, metrics, hooks removed"),
    # nngeometry is not in the test extra: its metadata requires torchvision (which does not import beside torch 2.13)
    "nngeometry": ("nngeometry_case.py", [], "NNGeometry Fisher matrices (dense, diagonal, block, KFAC, EKFAC, "
                                             "quasi-diagonal, low-rank) from hooked Jacobians; MC Fisher, Gram, "
                                             "Jacobian, torch.func Hessian"),
    "captum_influence": ("captum_influence_case.py", [], "Captum TracInCP (hooked per-sample and per-example "
                                                         "gradients over saved checkpoints), TracInCPFast, top-k"),
    "lightning": ("lightning_case.py", [], "Lightning Trainer fit/validate/test/predict with EarlyStopping, "
                                          "ModelCheckpoint (reloaded, resumed), LearningRateMonitor, CSVLogger, "
                                          "gradient clipping and accumulation; ModelSummary with FLOPs"),
    "lightning_callbacks": ("lightning_callbacks_case.py", [], "Lightning DataModule, metric objects and grad_norm "
                                                               "logged, profilers, SWA, weight averaging, pruning, "
                                                               "finetuning, accumulation schedule, manual optimization, "
                                                               "TensorBoardLogger, batch limits, lr and batch-size finders"),
    "lightning_fabric": ("fabric_case.py", [], "Lightning Fabric setup, backward, no_backward_sync, clip_gradients, "
                                               "save/load/load_raw"),
    "torchmetrics": ("torchmetrics_case.py", [], "torchmetrics classification and regression metrics, "
                                                 "MetricCollection, state dicts, functional metrics"),
    "torchmetrics_more": ("torchmetrics_more_case.py", [], "torchmetrics aggregation, calibration, curves, rank "
                                                           "correlations, retrieval, wrappers (tracker, bootstrap), "
                                                           "image, audio and text metrics with float64 states"),
    "torch_optimizer": ("torch_optimizer_case.py", [], "torch-optimizer's optimizers (deprecated positional add_/"
                                                       "addcmul_ forms, eye(out=)): steps, state dicts, reloads, "
                                                       "Lookahead, AdaHessian's Hutchinson curvature"),
    "torchdiffeq": ("torchdiffeq_case.py", [], "torchdiffeq odeint with adaptive and fixed-grid solvers, gradients "
                                               "through the solver and by the adjoint method, tuple states, "
                                               "gradients with respect to time, odeint_event"),
    "torchattacks": ("torchattacks_case.py", [], "torchattacks FGSM/BIM/PGD/PGDL2/momentum, input-diversity and "
                                                 "noise variants, CW, DeepFool, targeted modes, normalisation"),
    "ema": ("ema_case.py", [], "torch-ema ExponentialMovingAverage and ema-pytorch EMA (post-step hook), KarrasEMA, "
                               "PostHocEMA snapshots synthesised"),
    "torch_cka": ("torch_cka_case.py", [], "torch-cka centred kernel alignment of layers gathered by forward hooks"),
    "torchjd": ("torchjd_case.py", [], "TorchJD autojac backward/mtl_backward/jac (vmap over autograd.grad), "
                                       "jac_to_grad with aggregators, autogram Engine Gramians through hooks"),
    "geoopt": ("geoopt_case.py", [], "geoopt ManifoldParameter/ManifoldTensor (Tensor._make_subclass), Riemannian "
                                     "Adam and SGD on sphere, Stiefel, Poincare ball; maps, distances, transports"),
    "torchsde": ("torchsde_case.py", [], "torchsde sdeint (Euler, Milstein, SRK, reversible Heun, midpoint; diagonal "
                                         "and general noise) over seeded Brownian intervals, sdeint_adjoint"),
    "kornia": ("kornia_case.py", [], "Kornia filters, colour conversions, warps, morphology, enhancement, features, "
                                     "losses and metrics with gradients; geometry conversions; augmentation"),
    "ignite": ("ignite_case.py", [], "PyTorch-Ignite supervised trainer/evaluator with gradient accumulation, metrics, "
                                     "event handlers, LR schedulers, early stopping, checkpoints saved and reloaded"),
    "skorch": ("skorch_case.py", [], "skorch NeuralNetClassifier/Regressor fit, partial_fit, predict_proba, callbacks, "
                                     "history, validation split, saved parameters; a scikit-learn grid search"),
    "delve": ("delve_case.py", [], "Delve layer saturation: covariances of Linear/Conv2d outputs from forward hooks "
                                   "over training; saturation, intrinsic dimension, trace, determinant in its CSV"),
    "surgeon": ("surgeon_case.py", [], "surgeon-pytorch Inspect (forward hooks removed after each call) and Extract "
                                       "(torch.fx graphs re-wired at insert points, dead code eliminated), gradients"),
    "torchopt": ("torchopt_case.py", [], "TorchOpt functional optimizers over functorch.make_functional params, chains, "
                                         "schedules, MetaSGD/MetaAdam inner loops differentiated to a meta-parameter, "
                                         "state extract/recover, FuncOptimizer, implicit differentiation (custom_root)"),
    "higher": ("higher_case.py", [], "higher's monkeypatched functional models and differentiable SGD/Adam inner loops "
                                     "(batch norm, a GRU), meta-gradients to an input scale and the initial weights"),
    "pyro": ("pyro_case.py", [], "Pyro SVI (Trace_ELBO, TraceMeanField_ELBO, TraceEnum_ELBO) with AutoNormal, "
                                 "AutoDiagonalNormal and a hand-written guide, Predictive, poutine traces, "
                                 "subsampled plates, a Gaussian-process regression"),
    "gpytorch": ("gpytorch_case.py", [], "GPyTorch exact GPs (RBF, Matern, periodic kernels) trained on the marginal "
                                         "likelihood, predictive variances, a multitask GP, a variational GP, "
                                         "linear-operator solves and log-determinants"),
    "flows": ("flows_case.py", [], "normflows (affine coupling, ActNorm, spline, planar and radial flows) and nflows "
                                   "(MAF, rational-quadratic spline couplings): KL training, sampling, log-densities"),
    "metric_learning": ("metric_learning_case.py", [], "pytorch-metric-learning pair, triplet, proxy and classification "
                                                       "losses with gradients, miners, distances, reducers, a "
                                                       "cross-batch memory in a training step"),
    "lucent": ("lucent_case.py", [], "Lucent render_vis through hooks on every layer: pixel, FFT and CPPN images "
                                     "optimised for channel, neuron, direction and diversity objectives"),
    "memlab": ("memlab_case.py", [], "pytorch_memlab MemReporter: the garbage collector's tensors named after "
                                     "parameters, gradients and optimizer state, sizes and storage sharing"),
    "warmup": ("warmup_case.py", [], "pytorch-warmup linear, exponential, untuned and RAdam warmup dampening "
                                     "torch.optim.lr_scheduler schedules per parameter group; state dicts"),
    "asdl": ("asdl_case.py", [], "ASDL K-FAC/EK-FAC, full and diagonal natural gradient, Shampoo, PSGD, SENG "
                                 "gradient makers (curvature from module hooks) training an MLP and a CNN; Fisher"),
    "grad_cam": ("grad_cam_case.py", [], "pytorch-grad-cam GradCAM, HiResCAM, GradCAM++, XGradCAM, LayerCAM, "
                                         "element-wise, Eigen(Grad)CAM, ScoreCAM, AblationCAM, FullGrad, guided "
                                         "backpropagation on a hand-built CNN; hooks removed"),
    "layer_getter": ("layer_getter_case.py", [], "torch-intermediate-layer-getter forward hooks on nested and "
                                                 "reused submodules with gradients; unfoldNd unfold/fold 1d-3d"),
    "hook_managers": ("hook_managers_case.py", [], "TorchHook's HookManager (named, custom and transformed forward "
                                                   "hooks, bounded storage, removal) and hookandlook's watcher "
                                                   "(composed forward hooks, legacy backward hooks, statistics)"),
    "nnsight": ("nnsight_case.py", [], "nnsight traces of a plain torch model: saved outputs and inputs, outputs "
                                       "written and replaced, activations patched across traces, gradients"),
    "shap": ("shap_case.py", [], "SHAP DeepExplainer (DeepLIFT multipliers from full backward hooks on every leaf "
                                 "module, max-pool unpooling) and GradientExplainer on whole inputs, an interim "
                                 "layer, two inputs, ranked outputs"),
    "cockpit": ("cockpit_case.py", [], "Cockpit's full configuration over SGD steps (BackPACK per-sample gradients "
                                       "and curvature, histograms, gradient tests, TIC, Hessian trace, HessMaxEV by "
                                       "double backward), chosen quantities on a schedule"),
    "lr_finder": ("lr_finder_case.py", [], "torch-lr-finder range tests (exponential, linear with a validation loader "
                                           "and accumulation, dict batches with a GradScaler, autocast to bfloat16), states "
                                           "cached in memory and by torch.save, reset, suggested learning rates"),
    "quantus": ("quantus_case.py", [], "Quantus faithfulness, robustness, localisation, complexity, randomisation "
                                       "and axiomatic metrics over Captum attributions re-explained on perturbed "
                                       "inputs (with a never-called torchvision stand-in for zennit's import)"),
    "torchstat": ("torchstat_case.py", [], "torchstat per-layer shapes, parameters, memory, MAdd, FLOPs and memory "
                                           "traffic from leaf module classes' replaced __call__, its stat tree"),
    "torch_summary": ("torch_summary_case.py", [], "torch-summary 1.4.5 tables: all columns, depths, branching off, "
                                                   "frozen layers, several inputs with dtypes and keywords, RNNs"),
    "influence_functions": ("influence_functions_case.py", [], "pytorch-influence-functions s_test (LiSSA recursions of "
                                                               "double-backward Hessian-vector products), influences, "
                                                               "s_test files saved and reloaded, its log_softmax warning"),
    "calflops": ("calflops_case.py", [], "calflops FLOPs/MACs/parameters of a CNN and an attention model from replaced "
                                         "functional and Tensor methods with module hooks; detailed profile text"),
    "small_counters": ("small_counters_case.py", [], "flopco-pytorch per-layer shapes/FLOPs/MACs from forward hooks; "
                                                     "modelsummary tables (pre-hooks or hooks) and hierarchical view"),
    "pthflops": ("pthflops_case.py", [], "pthflops' torch.fx ProfilingInterpreter operation counts per node, ignored "
                                         "layers, custom counters, printed table"),
    "transformer_lens": ("transformer_lens_case.py", [], "TransformerLens 4 bridge over a TL-native transformer: "
                                                         "run_with_cache, run_with_hooks on attention patterns and "
                                                         "residual streams, activation patching, gradients, "
                                                         "decomposed residual streams"),
    "transformers": ("transformers_case.py", [], "Hugging Face GPT-2, BERT and ViT from configs: hidden states and "
                                                 "attentions, forward hooks (with kwargs) on attention modules, an "
                                                 "output-replacing hook, gradients with gradient checkpointing, "
                                                 "greedy generation"),
    "pyvene": ("pyvene_case.py", [], "pyvene interchange, addition, subtraction, zero and collect interventions on a "
                                     "tiny GPT-2's block, MLP and attention outputs; rotated-space (orthogonal "
                                     "parametrization), low-rank and sigmoid-mask interventions trained a few steps"),
    "captum_text": ("captum_text_case.py", [], "Captum on an embedding+LSTM text model (layer IG on the embedding, "
                                               "interpretable embedding layer), layer/neuron GradientShap and "
                                               "DeepLiftShap, LRP rules, FeaturePermutation, layer/neuron ablation, "
                                               "ShapleyValues, KernelShap, Lime, infidelity, sensitivity_max"),
    "backpack_layers": ("backpack_layers_case.py", [], "BackPACK's first- and second-order extensions (KFAC/KFLR/KFRA, "
                                                       "diagonal GGN and Hessian, per sample) over Conv1d/3d, "
                                                       "ConvTranspose1d, pooling, dropout, LeakyReLU/SELU/LogSigmoid, "
                                                       "batch norm; unsupported layers refused alike"),
    "torchview_more": ("torchview_more_case.py", [], "torchview graphs of a bidirectional LSTM, a GRU-cell loop, nested "
                                                     "ModuleList/ModuleDict containers with dict inputs and outputs, "
                                                     "depths, rolled recursion, inner tensors shown"),
    "torchdistill": ("torchdistill_case.py", [], "torchdistill ForwardHookManager (inputs/outputs of nested paths, "
                                                 "accumulated and stacked passes, cleared) and KD, FSP, attention-"
                                                 "transfer, PKT, RKD, SPKD losses with student gradients"),
    "adaptive_optimizers": ("adaptive_optimizers_case.py", [], "schedulefree AdamW/SGD/RAdam (train/eval swaps, "
                                                               "closure forms, wrapper), D-Adaptation Adam/SGD/"
                                                               "AdaGrad/Adan/Lion and Prodigy steps, D estimates, "
                                                               "state dicts reloaded"),
    "entmax": ("entmax_case.py", [], "entmax sparsemax, 1.5-entmax (top-k), bisection entmax with a learned alpha, "
                                      "normmax and budget bisection, Fenchel-Young losses, module forms in a hooked "
                                      "model, gradcheck"),
    "zuko": ("zuko_case.py", [], "zuko flows (MAF, NSF/NCSF, NICE, RealNVP, GF, GMM, BPF/SOSPF, NAF with a "
                                  "bisection Function, UNAF with Gauss-Legendre, CNF through an adjoint Function, "
                                  "exact and Hutchinson traces): log-densities, seeded samples, inverses, "
                                  "gradients, Adam steps"),
    "torchfunc": ("torchfunc_case.py", [], "torchfunc hook recorders and registrators (forward pre, forward "
                                            "input/output, deprecated module backward hooks) by type and index, "
                                            "conditions, reductions, removal; module utilities, performance report "
                                            "and tips"),
    "x_transformers": ("x_transformers_case.py", [], "x-transformers decoder (rotary, RMSNorm, residual attention, "
                                                      "qk-norm) with attention intermediates, ALiBi encoder, "
                                                      "encoder-decoder, continuous wrapper, autoregressive loss and "
                                                      "greedy generation; hooks on attention modules, gradients"),
    "laplace": ("laplace_case.py", [], "laplace-torch full/diagonal/Kronecker Laplace over all weights or the last "
                                        "layer with BackPACK, curvlinops and ASDL back ends; marginal likelihood "
                                        "and its hyperparameter gradients, prior tuning, GLM and sampled "
                                        "predictives"),
    "kronfluence": ("kronfluence_case.py", [], "kronfluence EKFAC/KFAC/diagonal/identity factors fitted through "
                                                "TrackedModule hooks (empirical and sampled Fisher), pairwise and "
                                                "self-influence scores with damping, low-rank and aggregated "
                                                "queries, read back from disk"),
    "vector_quantize": ("vector_quantize_case.py", [], "vector-quantize-pytorch VectorQuantize EMA codebook steps "
                                                        "(Euclidean, cosine, k-means init, dead codes, rotation "
                                                        "trick, heads, masks, feature maps), ResidualVQ, FSQ, LFQ, "
                                                        "SimVQ: codes, losses, gradients, codebooks"),
    "trak": ("trak_case.py", [], "TRAK featurizing over two checkpoints: per-example gradients by vmap over grad of "
                                  "functional_call, out-to-loss weights, normal and Rademacher BasicProjector "
                                  "sketches in float64 blocks, stored projected gradients"),
    "torchensemble": ("torchensemble_case.py", [], "TorchEnsemble fusion, voting, bagging, gradient and soft "
                                                    "gradient boosting, snapshot, fast geometric and "
                                                    "adversarial-training ensembles built and trained from a base "
                                                    "module class: predictions, evaluation, weights"),
    "accelerate": ("accelerate_case.py", [], "accelerate ModelHook pre/post-forward hooks added, appended (Sequential"
                                              "Hook) and removed beside torch's hooks, cpu_offload weights put back "
                                              "per call, init_empty_weights filled, sizes, tied parameters, device "
                                              "maps; an Accelerator loop with accumulation, clipping, saved state"),
    "msssim": ("msssim_case.py", [], "pytorch-msssim SSIM/MS-SSIM on images and volumes (functional and module "
                                      "forms, windows, weights), a denoiser trained on 1 - MS-SSIM, input gradients"),
    "torchdyn": ("torchdyn_case.py", [], "torchdyn NeuralODE with fixed and adaptive solvers, gradients through "
                                          "the solver, the adjoint and the interpolated adjoint (custom Functions), "
                                          "second-order and augmented systems, odeint, CNF traces, multiple "
                                          "shooting; forward hooks counting calls"),
    "peft": ("peft_case.py", [], "peft LoRA (rsLoRA, DoRA), LoHa, LoKr and IA3 adapters on a plain model's Linear "
                                  "layers: outputs, adapters disabled, merged and unloaded, gradients to adapters "
                                  "only, saved and reloaded; named adapters switched and combined"),
    "torch_geometric": ("torch_geometric_case.py", [], "PyTorch Geometric GCN, GraphSAGE, GAT (attention weights), "
                                                        "GIN, NNConv message passing with its propagate/message "
                                                        "hooks, pooling over a batch, a GCN trained, graph "
                                                        "utilities, GNNExplainer masks"),
}

# the modules each case imports beyond torch and numpy (in the test extra of pyproject.toml, except those
# with compiled or torchvision-bound requirements: nngeometry, torchattacks, kornia, skorch, delve); a case
# whose module is missing is skipped with the reason, not failed
# (also outside the test extra: torchopt and pytorch-metric-learning, compiled requirements; gpytorch, which
# pulls scikit-learn; lucent, which needs kornia and IPython; pytorch_memlab, which needs pandas; grad-cam,
# which needs OpenCV and scikit-learn; nnsight, which pulls transformers; transformers, TransformerLens,
# pyvene and captum_text's scikit-learn are in the hf-clients extra; torchdistill requires torchvision)
REQUIRES = {
    "opacus": ["opacus"], "backpack_mse": ["backpack"], "backpack_cross_entropy": ["backpack"],
    "torchviz": ["torchviz"], "torchviz_attrs": ["torchviz"], "torchview": ["torchview"], "captum": ["captum"], "captum_integrated": ["captum"],
    "thop": ["thop"], "torchinfo": ["torchinfo"], "fx_clients": ["backpack", "thop"],
    "summary_tables": ["torchsummary", "pytorch_model_summary"], "einops": ["einops"],
    "torch_pruning": ["torch_pruning"], "zennit": ["zennit"],
    "ptflops": ["ptflops"], "torchextractor": ["torchextractor"], "pyhessian": ["pyhessian"],
    "hessian_eigenthings": ["hessian_eigenthings"], "curvlinops": ["curvlinops", "einconv", "linear_operator"],
    "torchscan": ["torchscan"],
    "captum_attrs": ["captum"], "opacus_layers": ["opacus"], "backpack_curvature": ["backpack"],
    "torchinfo_variants": ["torchinfo"], "torchcam": ["torchcam"],
    "nngeometry": ["nngeometry"], "captum_influence": ["captum"],
    "lightning": ["lightning", "torchmetrics"], "lightning_fabric": ["lightning"],
    "lightning_callbacks": ["lightning", "torchmetrics", "tensorboard"], "torchmetrics": ["torchmetrics"],
    "torchmetrics_more": ["torchmetrics"],
    "torch_optimizer": ["torch_optimizer", "pytorch_ranger"], "torchdiffeq": ["torchdiffeq"],
    "torchattacks": ["torchattacks"], "ema": ["torch_ema", "ema_pytorch"], "torch_cka": ["torch_cka"],
    "torchjd": ["torchjd"], "geoopt": ["geoopt"], "torchsde": ["torchsde", "trampoline"],
    "kornia": ["kornia", "kornia_rs"], "ignite": ["ignite"],
    "skorch": ["skorch", "sklearn"], "delve": ["delve", "pandas", "tensorboardX"],
    "surgeon": ["surgeon_pytorch"], "torchopt": ["torchopt", "optree"], "higher": ["higher"],
    "pyro": ["pyro", "pyroapi", "opt_einsum"], "gpytorch": ["gpytorch", "linear_operator"],
    "flows": ["normflows", "nflows"], "metric_learning": ["pytorch_metric_learning"],
    "lucent": ["lucent", "kornia", "decorator", "IPython"], "memlab": ["pytorch_memlab", "calmsize", "pandas"],
    "warmup": ["pytorch_warmup"], "asdl": ["asdl", "asdl.precondition"],  # (asdl comes in the asdfghjkl distribution)
    "grad_cam": ["pytorch_grad_cam", "cv2", "ttach", "sklearn"],
    "layer_getter": ["torch_intermediate_layer_getter", "unfoldNd"],
    "hook_managers": ["torchhook", "hookandlook", "pandas"],
    "nnsight": ["nnsight", "transformers", "greenlet", "pydantic"],
    # (outside the test extra too: shap, which needs numba, compiled; cockpit, quantus, torchstat, which pull
    # seaborn, scikit-image or pandas; torch-lr-finder, pytorch-influence-functions, calflops, torch-summary,
    # flopco-pytorch, modelsummary, pthflops)
    "shap": ["shap", "numba", "slicer", "cloudpickle", "sklearn", "pandas"],
    # (cockpit imports pkg_resources, which setuptools 81 and later no longer have)
    "cockpit": ["cockpit", "backpack", "json_tricks", "seaborn", "pkg_resources"],
    "lr_finder": ["torch_lr_finder", "matplotlib"],
    "quantus": ["quantus", "captum", "zennit", "skimage", "sklearn", "pandas"],
    "torchstat": ["torchstat", "pandas"],
    # torch-summary installs a torchsummary package of its own (the one named in summary_tables is another)
    "torch_summary": ["torchsummary.model_statistics"],
    "influence_functions": ["pytorch_influence_functions"],
    "calflops": ["calflops"],
    "small_counters": ["flopco", "modelsummary"],
    "pthflops": ["pthflops"],
    "transformer_lens": ["transformer_lens", "transformers", "datasets", "pandas", "yaml"],
    "transformers": ["transformers", "huggingface_hub", "tokenizers", "safetensors"],
    "pyvene": ["pyvene", "transformers", "huggingface_hub", "tokenizers", "safetensors"],
    "captum_text": ["captum", "sklearn"],
    "backpack_layers": ["backpack"],
    "torchview_more": ["torchview"],
    "torchdistill": ["torchdistill", "yaml"],
    "adaptive_optimizers": ["schedulefree", "dadaptation", "prodigyopt"],
    "entmax": ["entmax"],
    "zuko": ["zuko"],
    "torchfunc": ["torchfunc"],
    "x_transformers": ["x_transformers", "einx", "loguru", "torch_einops_utils"],
    # (laplace-torch is not in the test extra: its metadata requires torchvision, and pins asdfghjkl 0.1a4)
    "laplace": ["laplace", "asdl", "backpack", "curvlinops", "torchmetrics", "opt_einsum"],
    # (kronfluence is not in the test extra either: its metadata requires torchvision and accelerate)
    "kronfluence": ["kronfluence", "accelerate", "einconv", "opt_einsum", "safetensors"],
    "vector_quantize": ["vector_quantize_pytorch", "einx", "loguru", "torch_einops_utils"],
    "trak": ["trak"],
    # (torchensemble is outside the test extra: it requires scikit-learn, and torchvision in its metadata)
    "torchensemble": ["torchensemble", "sklearn", "joblib"],
    "accelerate": ["accelerate", "psutil", "safetensors", "yaml"],
    "msssim": ["pytorch_msssim"],
    # (torchdyn is outside the test extra: its metadata requires torchvision and pins an old poethepoet)
    "torchdyn": ["torchdyn", "torchcde", "torchsde", "torchdiffeq", "pytorch_lightning"],
    # (peft imports transformers: it is in the hf-clients extra)
    "peft": ["peft", "transformers", "accelerate", "huggingface_hub", "safetensors", "psutil"],
    "torch_geometric": ["torch_geometric", "xxhash", "aiohttp", "jinja2", "requests", "fsspec", "psutil"],
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:   # a dotted name whose package is missing
        return False


def _missing_modules(name):
    return [module for module in REQUIRES.get(name, []) if not _installed(module)]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _start(args):
    # a run without site-packages (python -S, the path given by PYTHONPATH) starts the cases the same way
    site_flag = ["-S"] if sys.flags.no_site else []
    return subprocess.Popen([sys.executable, *site_flag, *args], cwd=CLIENTS, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


AHEAD = 3  # cases running at once (each on both frameworks): enough to overlap, few enough not to starve


class _Runs:
    """The cases' processes, started in CASES order a few cases ahead of the one a test waits for."""

    def __init__(self, names):
        self.order = list(names)
        self.procs = {}

    def _start_case(self, name):
        script, args, _ = CASES[name]
        self.procs[name] = (_start([script, *args]), _start(["-m", "hookgrad", "run", script, *args]))

    def __getitem__(self, name):
        at = self.order.index(name)
        for ahead in self.order[at:at + AHEAD]:
            if ahead not in self.procs:
                self._start_case(ahead)
        return self.procs[name]

    def kill_all(self):
        for procs in self.procs.values():
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()


@pytest.fixture(scope="module")
def client_runs():
    """Every case on both frameworks (the two never share a process)."""
    runs = _Runs(name for name in CASES if not _missing_modules(name))
    yield runs
    runs.kill_all()


def _result(proc, label):
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, f"{label} failed (exit {proc.returncode}):\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def _differences(got, want, path="", found=None):
    found = [] if found is None else found
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            found.append(f"{path}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(want)}")
            return found
        for key in want:
            _differences(got[key], want[key], f"{path}.{key}", found)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            found.append(f"{path}: {got!r} != {want!r}"[:400])
            return found
        for i, (g, w) in enumerate(zip(got, want)):
            _differences(g, w, f"{path}[{i}]", found)
    elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if not (math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(got) and math.isnan(want))):
            found.append(f"{path}: {got!r} != {want!r}")
    elif got != want:
        found.append(f"{path}: {got!r} != {want!r}"[:400])
    return found


@pytest.mark.parametrize("name", list(CASES))
def test_client_matches_torch(client_runs, name):
    missing = _missing_modules(name)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[test]' installs every client)")
    torch_proc, hookgrad_proc = client_runs[name]
    want = _result(torch_proc, f"{name} on torch")
    got = _result(hookgrad_proc, f"{name} under hookgrad run")
    assert want.pop("torchvision_imported") is False and got.pop("torchvision_imported") is False
    differences = _differences(got, want, name)
    assert not differences, "\n".join(differences[:20])
