"""torchmetrics beyond the everyday metrics, with float64 states (default dtype float64): aggregation
(mean, sum, max, cat, running mean), more classification metrics (calibration error, average precision,
kappa, MCC, stat scores, specificity, multilabel, Jaccard, ROC and PR curves with and without
thresholds), regression (cosine similarity, explained variance, percentage errors, rank correlations,
Tweedie, log-cosh, Minkowski), retrieval (MAP, NDCG, MRR), wrappers (MetricTracker, ClasswiseWrapper,
MinMaxMetric, BootStrapper with both samplings), image (PSNR, SSIM, total variation, UQI, SAM, ERGAS),
audio (SNR, SI-SDR, permutation-invariant training), text (BLEU, WER, chrF, perplexity), pairwise
distances and Cramer's V."""
import warnings

import torch
import torchmetrics.functional as TF
from torchmetrics import aggregation as A, audio as AU, classification as K, image as I, regression as R
from torchmetrics import retrieval as RT, wrappers as W

from _common import data, emit

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
out = {}


def step(name, compute):
    out[name] = compute()


# p, t: multiclass scores and labels; pb, tb: binary; ml, mlt: multilabel; x, y: regression pairs
p, t = data(20, 5, seed=1), torch.tensor([i % 5 for i in range(20)])
pb, tb = data(30, seed=2).sigmoid(), (data(30, seed=3) > 0).long()
ml, mlt = data(10, 3, seed=4).sigmoid(), (data(10, 3, seed=5) > 0).long()
x, y = data(25, seed=6), data(25, seed=7)


def upd(metric, *args):
    """One update, then compute."""
    metric.update(*args)
    return metric.compute()


step("mean", lambda: upd(A.MeanMetric(), x))
step("sum", lambda: upd(A.SumMetric(), x))
step("max", lambda: upd(A.MaxMetric(), x))
step("cat", lambda: upd(A.CatMetric(), x))
step("running", lambda: [A.RunningMean(window=3)(v) for v in x[:6]])
step("calib", lambda: upd(K.MulticlassCalibrationError(num_classes=5, n_bins=4), p.softmax(-1), t))
step("ap", lambda: upd(K.MulticlassAveragePrecision(num_classes=5), p.softmax(-1), t))
step("kappa", lambda: upd(K.MulticlassCohenKappa(num_classes=5), p, t))
step("mcc", lambda: upd(K.MulticlassMatthewsCorrCoef(num_classes=5), p, t))
step("stat", lambda: upd(K.MulticlassStatScores(num_classes=5, average=None), p, t))
step("spec", lambda: upd(K.MulticlassSpecificity(num_classes=5), p, t))
step("hamming", lambda: upd(K.MultilabelHammingDistance(num_labels=3), ml, mlt))
step("mlacc", lambda: upd(K.MultilabelAccuracy(num_labels=3), ml, mlt))
step("mlf1", lambda: upd(K.MultilabelF1Score(num_labels=3, average=None), ml, mlt))
step("jaccard", lambda: upd(K.MulticlassJaccardIndex(num_classes=5), p, t))
step("roc", lambda: upd(K.BinaryROC(thresholds=5), pb, tb))
step("prc", lambda: upd(K.BinaryPrecisionRecallCurve(), pb, tb))
step("bin_f1", lambda: upd(K.BinaryF1Score(), pb, tb))
step("exact", lambda: upd(K.MultilabelExactMatch(num_labels=3), ml, mlt))
# CosineSimilarity computes in float32 whatever its inputs (an ulp apart from torch's summation order)
step("cos", lambda: round(float(upd(R.CosineSimilarity(), data(4, 6, seed=8), data(4, 6, seed=9))), 6))
step("ev", lambda: upd(R.ExplainedVariance(), x, y))
step("mape", lambda: upd(R.MeanAbsolutePercentageError(), x, y))
step("smape", lambda: upd(R.SymmetricMeanAbsolutePercentageError(), x, y))
step("spear", lambda: upd(R.SpearmanCorrCoef(), x, y))
step("ccc", lambda: upd(R.ConcordanceCorrCoef(), x, y))
step("kendall", lambda: upd(R.KendallRankCorrCoef(), x, y))
step("msle", lambda: upd(R.MeanSquaredLogError(), x.abs(), y.abs()))
step("tweedie", lambda: upd(R.TweedieDevianceScore(power=1.5), x.abs() + 0.1, y.abs()))
step("logcosh", lambda: upd(R.LogCoshError(), x, y))
step("minkowski", lambda: upd(R.MinkowskiDistance(p=3), x, y))
idx = torch.tensor([0] * 5 + [1] * 5)
step("rmap", lambda: RT.RetrievalMAP()(data(10, seed=10), (data(10, seed=11) > 0), indexes=idx))
step("ndcg", lambda: RT.RetrievalNormalizedDCG()(data(10, seed=10), (data(10, seed=11) > 0), indexes=idx))
step("mrr", lambda: RT.RetrievalMRR()(data(10, seed=10), (data(10, seed=11) > 0), indexes=idx))


def tracker():
    tracked = W.MetricTracker(K.MulticlassAccuracy(num_classes=5))
    for seed in range(3):
        tracked.increment()
        tracked.update(data(20, 5, seed=20 + seed), t)
    return tracked.compute_all(), tracked.best_metric(return_step=True)


step("tracker", tracker)
step("classwise", lambda: W.ClasswiseWrapper(K.MulticlassAccuracy(num_classes=5, average=None))(p, t))
step("minmax", lambda: W.MinMaxMetric(K.MulticlassAccuracy(num_classes=5))(p, t))
def bootstrap(strategy):
    torch.manual_seed(0)  # the resampling draws from torch's generator: the same numbers on both
    metric = W.BootStrapper(R.MeanSquaredError(), num_bootstraps=5, sampling_strategy=strategy)
    metric.update(x, y)
    return metric.compute()


step("boot", lambda: bootstrap("multinomial"))
step("boot_poisson", lambda: bootstrap("poisson"))
img1, img2 = data(2, 3, 16, 16, seed=12).sigmoid(), data(2, 3, 16, 16, seed=13).sigmoid()
step("psnr", lambda: I.PeakSignalNoiseRatio(data_range=1.0)(img1, img2))
step("ssim", lambda: I.StructuralSimilarityIndexMeasure(data_range=1.0)(img1, img2))
step("tv", lambda: I.TotalVariation()(img1))
step("uqi", lambda: I.UniversalImageQualityIndex()(img1, img2))
step("sam", lambda: I.SpectralAngleMapper()(img1, img2))
step("ergas", lambda: I.ErrorRelativeGlobalDimensionlessSynthesis()(img1, img2))
step("snr", lambda: AU.SignalNoiseRatio()(data(2, 100, seed=16), data(2, 100, seed=17)))
step("sisdr", lambda: AU.ScaleInvariantSignalDistortionRatio()(data(2, 100, seed=16), data(2, 100, seed=17)))
step("pit", lambda: TF.audio.permutation_invariant_training(data(1, 2, 50, seed=18), data(1, 2, 50, seed=19), TF.audio.scale_invariant_signal_noise_ratio, mode="speaker-wise", eval_func="max"))
step("bleu", lambda: TF.text.bleu_score(["the cat is on the mat"], [["there is a cat on the mat", "a cat is on the mat"]]))
step("wer", lambda: TF.text.word_error_rate(["hello world", "foo bar"], ["hello there world", "foo baz"]))
step("chrf", lambda: TF.text.chrf_score(["the cat is on the mat"], [["there is a cat on the mat"]]))
step("perplexity", lambda: TF.text.perplexity(data(2, 4, 6, seed=22), torch.tensor([[1, 2, 3, 4], [5, 0, 1, 2]])))
step("pairwise", lambda: [TF.pairwise_euclidean_distance(data(3, 4, seed=23), data(2, 4, seed=24)), TF.pairwise_manhattan_distance(data(3, 4, seed=23))])
step("nominal", lambda: TF.nominal.cramers_v(torch.tensor([0,1,2,0,1,2,0,0]), torch.tensor([0,1,1,0,2,2,1,0])))
emit(out)
