"""Building TensorBoard ``Summary`` protocol buffers from tensors, arrays and numbers.

Each builder turns its input into a NumPy array first (``to_numpy``), so hookgrad tensors, NumPy
arrays and Python numbers are all accepted, as torch's writer accepts them.
"""
from __future__ import annotations

import io
import logging

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

logger = logging.getLogger(__name__)

__all__ = ["scalar", "histogram", "histogram_raw", "make_histogram", "image", "make_image", "text",
           "hparams", "tensor_proto", "to_numpy", "convert_to_HWC", "make_grid", "figure_to_image"]


def to_numpy(value) -> np.ndarray:
    """A NumPy array of ``value`` (a tensor, an array or a Python/NumPy scalar)."""
    import hookgrad
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, hookgrad.Tensor):
        if value.device.type == "meta":
            # a meta tensor has no values; torch logs a random stand-in rather than fail
            return np.random.randn(1)
        if value.dtype == hookgrad.bfloat16:
            # NumPy has no bfloat16 of its own: half precision holds every bfloat16 value's digits
            value = value.to(hookgrad.float16)
        return value.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(value)}, but numpy array or torch tensor are expected.")


def scalar(name, value, collections=None, new_style=False, double_precision=False) -> Summary:
    """A summary with one scalar: ``simple_value`` by default, a tensor proto when ``new_style``."""
    array = to_numpy(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). "
                             f"Was given size: {array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    if double_precision:
        proto = TensorProto(double_val=[number], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[number], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


# dtype name -> (TensorProto dtype, field holding the values); half types travel as raw bit patterns
_TENSOR_FIELDS = {
    "float16": ("DT_HALF", "half_val"), "bfloat16": ("DT_BFLOAT16", "half_val"),
    "float32": ("DT_FLOAT", "float_val"), "float64": ("DT_DOUBLE", "double_val"),
    "int8": ("DT_INT8", "int_val"), "uint8": ("DT_UINT8", "uint32_val"),
    "int16": ("DT_INT16", "int_val"), "int32": ("DT_INT32", "int_val"),
    "int64": ("DT_INT64", "int64_val"), "bool": ("DT_BOOL", "bool_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"), "complex128": ("DT_COMPLEX128", "dcomplex_val"),
}


def _float_bits(number: float) -> int:
    # torch stores a half value as the signed int32 reading of its float32 bit pattern
    return int(np.array([number], dtype=np.float32).view(np.int32)[0])


def tensor_proto(tag, tensor) -> Summary:
    """A summary holding the whole tensor (the "tensor" plugin)."""
    dtype_name = str(tensor.dtype).rsplit(".", 1)[-1]
    if dtype_name not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    if tensor.numel() * tensor.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    proto_dtype, field = _TENSOR_FIELDS[dtype_name]
    if dtype_name in ("float16", "bfloat16"):
        import hookgrad
        flat = tensor.detach().to(hookgrad.float32).reshape(-1).tolist()
        values = [_float_bits(v) for v in flat]
    elif dtype_name.startswith("complex"):
        flat = to_numpy(tensor).reshape(-1)
        values = np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist()
    else:
        values = tensor.detach().reshape(-1).tolist()
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=size) for size in tensor.shape])
    proto = TensorProto(dtype=proto_dtype, tensor_shape=shape, **{field: values})
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:
    """A histogram summary from statistics computed by the caller."""
    proto = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=proto)])


def histogram(name, values, bins, max_bins=None) -> Summary:
    proto = make_histogram(to_numpy(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=proto)])


def make_histogram(values: np.ndarray, bins, max_bins=None) -> HistogramProto:
    """TensorBoard's histogram layout: ``bucket_limit[i]`` is the right edge of bucket ``i``; empty
    buckets at both ends are dropped, keeping one empty bucket whose limit is the left edge of the
    first occupied one (that is where TensorBoard starts drawing)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        short = len(counts) % group
        if short:
            counts = np.concatenate([counts, np.zeros(group - short, counts.dtype)])
        counts = counts.reshape(-1, group).sum(axis=-1)
        edges = np.concatenate([edges[:-1:group], edges[-1:]])
    # first and last occupied bucket, found as torch finds them (with no occupied bucket this keeps
    # one empty bucket at the far right, as torch does)
    occupied_so_far = np.cumsum(counts > 0)
    first, last = np.searchsorted(occupied_so_far, [0, occupied_so_far[-1] - 1], side="right")
    first, end = int(first), int(last) + 1
    if first > 0:
        kept_counts = counts[first - 1:end]
    else:
        kept_counts = np.concatenate([[0], counts[:end]])
    kept_limits = edges[first:end + 1]
    if kept_counts.size == 0 or kept_limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=kept_limits.tolist(),
                          bucket=kept_counts.tolist())


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile an NCHW batch (1 or 3 channels) into one CHW image, ``ncols`` images a row."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = -(-count // ncols)
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for index in range(count):
        row, col = divmod(index, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = images[index]
    return canvas


def convert_to_HWC(array: np.ndarray, input_format: str) -> np.ndarray:
    """An HWC image with three channels from an array laid out as ``input_format`` (letters of
    NCHW; a batch is tiled into a grid, one channel or none is repeated as grey)."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if array.ndim != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {array.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = array.transpose([input_format.find(axis) for axis in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = array.transpose([input_format.find(axis) for axis in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc] * 3, axis=2)
        return hwc
    if len(input_format) == 2:
        hw = array.transpose([input_format.find(axis) for axis in "HW"])
        return np.stack([hw] * 3, axis=2)
    # torch falls through and returns nothing here; say what is wrong instead
    raise AssertionError(f"input_format must have 2, 3 or 4 letters of NCHW, got {input_format!r}")


def _draw_box(picture, left, top, right, bottom, label, color="Red", thickness=2):
    """Outline a box on a Pillow image; a label sits on a filled strip at the box's bottom left."""
    from PIL import ImageDraw, ImageFont
    draw = ImageDraw.Draw(picture)
    draw.line([(left, top), (left, bottom), (right, bottom), (right, top), (left, top)], width=thickness,
              fill=color)
    if label:
        font = ImageFont.load_default()
        x0, y0, x1, y1 = font.getbbox(label)
        text_width, text_height = x1 - x0, y1 - y0
        margin = np.ceil(0.05 * text_height)
        draw.rectangle([(left, bottom - text_height - 2 * margin), (left + text_width, bottom)], fill=color)
        draw.text((left + margin, bottom - text_height - margin), label, fill="black", font=font)


def make_image(hwc: np.ndarray, rescale=1, rois=None, labels=None) -> Summary.Image:
    """A PNG-encoded image proto from a uint8 HWC array (Pillow does the encoding), with
    ``rois`` (rows of xmin, ymin, xmax, ymax) outlined when given."""
    from PIL import Image
    height, width, channels = hwc.shape
    picture = Image.fromarray(hwc)
    if rois is not None:
        for index, (left, top, right, bottom) in enumerate(rois[:, :4]):
            _draw_box(picture, left, top, right, bottom, None if labels is None else labels[index])
    picture = picture.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as buffer:
        picture.save(buffer, format="PNG")
        encoded = buffer.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encoded)


def image(tag, tensor, rescale=1, dataformats="NCHW") -> Summary:
    """An image summary; float input is read as [0, 1], uint8 input as [0, 255]."""
    hwc = convert_to_HWC(to_numpy(tensor), dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    hwc = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(hwc, rescale=rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None) -> Summary:
    hwc = convert_to_HWC(to_numpy(tensor_image), dataformats)
    boxes = to_numpy(tensor_boxes)
    scale = 1 if hwc.dtype == np.uint8 else 255
    hwc = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(hwc, rescale=rescale, rois=boxes,
                                                                 labels=labels))])


def video_frames(videos: np.ndarray) -> np.ndarray:
    """(batch, time, channels, H, W) videos -> (time, rows*H, cols*W, channels) frames: the batch is
    padded with black videos to a power of two and tiled, rows = 2**floor(log2(batch) / 2)."""
    batch, steps, channels, height, width = videos.shape
    if videos.dtype == np.uint8:
        videos = np.float32(videos) / 255.0
    padded = 1 << (batch - 1).bit_length() if batch > 0 else 0
    if padded != batch:
        videos = np.concatenate([videos, np.zeros((padded - batch, steps, channels, height, width))], axis=0)
    rows = 2 ** ((batch.bit_length() - 1) // 2)
    cols = videos.shape[0] // rows
    grid = videos.reshape(rows, cols, steps, channels, height, width).transpose(2, 0, 4, 1, 5, 3)
    return grid.reshape(steps, rows * height, cols * width, channels)


def video(tag, tensor, fps=4) -> Summary:
    """An animated GIF of the videos, tiled as ``video_frames`` tiles them; torch encodes it with
    moviepy, here Pillow encodes it (the same frames, the GIF bytes may differ)."""
    from PIL import Image
    frames = video_frames(to_numpy(tensor))
    scale = 1 if frames.dtype == np.uint8 else 255
    frames = (frames.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    _, height, width, channels = frames.shape
    if channels == 1:
        frames = frames[..., 0]
    pictures = [Image.fromarray(frame) for frame in frames]
    with io.BytesIO() as buffer:
        pictures[0].save(buffer, format="GIF", save_all=True, append_images=pictures[1:],
                         duration=int(round(1000 / fps)), loop=0)
        encoded = buffer.getvalue()
    clip = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encoded)
    return Summary(value=[Summary.Value(tag=tag, image=clip)])


def figure_to_image(figures, close=True) -> np.ndarray:
    """Render a matplotlib figure (CHW uint8) or a list of figures (NCHW)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        width, height = figure.canvas.get_width_height()
        chw = np.moveaxis(rgba.reshape(height, width, 4)[:, :, :3], 2, 0)
        if close:
            plt.close(figure)
        return chw

    if isinstance(figures, list):
        return np.stack([render(figure) for figure in figures])
    return render(figures)


def text(tag, text_string) -> Summary:
    """A text summary under ``<tag>/text_summary`` (the text plugin's tag)."""
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)])


def _plugin_summary(tag, plugin_data) -> Summary:
    from tensorboard.plugins.hparams.metadata import PLUGIN_NAME
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=PLUGIN_NAME, content=plugin_data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three summaries of the hparams plugin: the experiment (names of hyperparameters and
    metrics), the session start (the hyperparameter values) and the session end (success)."""
    import hookgrad
    from tensorboard.plugins.hparams import api_pb2, metadata as hp_metadata, plugin_data_pb2

    if not isinstance(hparam_dict, dict):
        logger.warning("parameter: hparam_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        logger.warning("parameter: metric_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for key, domain in hparam_domain_discrete.items():
        if (key not in hparam_dict or not isinstance(domain, list)
                or not all(isinstance(choice, type(hparam_dict[key])) for choice in domain)):
            raise TypeError(f"parameter: hparam_domain_discrete[{key}] should be a list of same type as "
                            f"hparam_dict[{key}].")

    # checked in torch's order: a bool is an int, so it is stored as a number
    kinds = ((lambda v: isinstance(v, (int, float)), "number_value", "DATA_TYPE_FLOAT64"),
             (lambda v: isinstance(v, str), "string_value", "DATA_TYPE_STRING"),
             (lambda v: isinstance(v, bool), "bool_value", "DATA_TYPE_BOOL"))
    infos = []
    start = plugin_data_pb2.SessionStartInfo()
    for key, value in hparam_dict.items():
        if value is None:
            continue
        for matches, field, data_type in kinds:
            if matches(value):
                setattr(start.hparams[key], field, value)
                domain = None
                if key in hparam_domain_discrete:
                    domain = struct_pb2.ListValue(values=[
                        struct_pb2.Value(**{field: choice}) for choice in hparam_domain_discrete[key]])
                infos.append(api_pb2.HParamInfo(name=key, type=api_pb2.DataType.Value(data_type),
                                                domain_discrete=domain))
                break
        else:
            if not isinstance(value, hookgrad.Tensor):
                raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
            start.hparams[key].number_value = to_numpy(value)[0]  # a 0-d tensor fails here, as in torch
            infos.append(api_pb2.HParamInfo(name=key, type=api_pb2.DataType.Value("DATA_TYPE_FLOAT64")))

    version = hp_metadata.PLUGIN_DATA_VERSION
    experiment = api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=key))
                                          for key in metric_dict])
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (
        _plugin_summary(hp_metadata.EXPERIMENT_TAG,
                        plugin_data_pb2.HParamsPluginData(experiment=experiment, version=version)),
        _plugin_summary(hp_metadata.SESSION_START_INFO_TAG,
                        plugin_data_pb2.HParamsPluginData(session_start_info=start, version=version)),
        _plugin_summary(hp_metadata.SESSION_END_INFO_TAG,
                        plugin_data_pb2.HParamsPluginData(session_end_info=end, version=version)),
    )


def _float_matrix_proto(data: np.ndarray) -> TensorProto:
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=size) for size in data.shape])
    return TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=shape)


def _pr_curve_summary(tag, data: np.ndarray, num_thresholds) -> Summary:
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="pr_curves",
                                                                      content=content))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=_float_matrix_proto(data))])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None) -> Summary:
    """A PR-curve summary from the caller's six rows of counts and ratios (TensorBoard draws at
    most 127 thresholds)."""
    return _pr_curve_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), min(num_thresholds, 127))


def compute_curve(labels, predictions, num_thresholds=None, weights=None) -> np.ndarray:
    """Rows tp, fp, tn, fn, precision, recall at ``num_thresholds`` evenly spaced thresholds in
    [0, 1]: a prediction counts as positive at every threshold up to its own bucket."""
    tiny_count = 1e-7  # keeps the ratios finite where nothing is predicted or labelled positive
    if weights is None:
        weights = 1.0
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_per_bucket, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * weights)
    fp_per_bucket, _ = np.histogram(buckets, bins=num_thresholds, range=span,
                                    weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_per_bucket[::-1])[::-1]
    fp = np.cumsum(fp_per_bucket[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(tiny_count, tp + fp)
    recall = tp / np.maximum(tiny_count, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None) -> Summary:
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_curve_summary(tag, data, num_thresholds)


def custom_scalars(layout) -> Summary:
    """The custom-scalars plugin's layout: ``{category: {title: ["Multiline", tags] or
    ["Margin", [value, lower, upper]]}}``."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    categories = []
    for category, charts_by_title in layout.items():
        charts = []
        for title, (kind, tags) in charts_by_title.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                charts.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                charts.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=charts))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="custom_scalars"))
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto, metadata=metadata)])


def audio(tag, tensor, sample_rate=44100) -> Summary:
    """One mono clip in [-1, 1] as 16-bit WAV (louder samples are clipped, with a warning)."""
    import wave
    samples = to_numpy(tensor).squeeze()
    if abs(samples).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (samples * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(pcm.data)
        encoded = buffer.getvalue()
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                         encoded_audio_string=encoded, content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None) -> Summary:
    """The mesh plugin's summaries: one (batch, count, 3) tensor each for vertices, faces and
    colors, whichever are given."""
    import json

    from tensorboard.plugins.mesh import metadata as mesh_metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(part, kind) for part, kind in ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE),
                                             (colors, MeshPluginData.COLOR)) if part is not None]
    components = mesh_metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for part, kind in parts:
        array = np.asarray(part) if isinstance(part, (list, tuple)) else to_numpy(part)
        # create_summary_metadata refuses any shape but (batch, count, 3) with a ValueError
        summary_metadata = mesh_metadata.create_summary_metadata(
            tag, display_name, kind, components, list(array.shape), description, json_config=json_config)
        proto = TensorProto(dtype="DT_FLOAT", float_val=array.reshape(-1).tolist(),
                            tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in array.shape]))
        values.append(Summary.Value(tag=mesh_metadata.get_instance_name(tag, kind), tensor=proto,
                                    metadata=summary_metadata))
    return Summary(value=values)
