"""``SummaryWriter`` and ``FileWriter``: TensorBoard event files for training runs.

Events go through the ``tensorboard`` package's ``EventFileWriter`` (a background thread that
flushes every ``flush_secs`` or when ``max_queue`` events are pending), as in torch.
"""
from __future__ import annotations

import os
import time

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from .summary import (audio, custom_scalars, figure_to_image, histogram, histogram_raw, hparams, image,
                      image_boxes, mesh, pr_curve, pr_curve_raw, scalar, tensor_proto, text, to_numpy, video)

__all__ = ["FileWriter", "SummaryWriter"]


def _tensorflow_bins() -> list:
    # TensorBoard's default buckets: +-1e-12 growing by 10% up to 1e20, and zero
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-edge for edge in reversed(positive)] + [0] + positive


class FileWriter:
    """Writes ``Event`` protos to one event file in ``log_dir``."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix="") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)  # NumPy and tensor steps become a plain int for protobuf
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None) -> None:
        """Write a (GraphDef, RunMetadata) pair built elsewhere."""
        from tensorboard.compat.proto.event_pb2 import TaggedRunMetadata
        graph_def, step_stats = graph_profile
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=step_stats.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        """Open a new event file in the same directory after ``close()``."""
        self.event_writer.reopen()


class SummaryWriter:
    """Logs scalars, histograms, images, text, hyperparameters and embeddings for TensorBoard.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<host><comment>``; ``purge_step`` marks a
    restart so that TensorBoard hides events at or after that step from the crashed run.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix="") -> None:
        if not log_dir:
            import socket
            from datetime import datetime
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        # closed writers are dropped and opened again on the next add_* call
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _tensorflow_bins()

    def _get_file_writer(self) -> FileWriter:
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False) -> None:
        summary = scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """One run per key: ``<log_dir>/<main_tag with / as _>_<key>``, each holding ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(run_dir)
            if writer is None:
                writer = FileWriter(run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[run_dir] = writer
            writer.add_summary(scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """``bins`` as NumPy's ``np.histogram`` takes it, or "tensorflow" for TensorBoard's."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None) -> None:
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW") -> None:
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW") -> None:
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
                             dataformats="CHW", labels=None) -> None:
        """An image with boxes (rows of xmin, ymin, xmax, ymax in pixels) outlined in red; labels are
        dropped when there is not one per box, as in torch."""
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None
        summary = image_boxes(tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats,
                              labels=labels)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """A matplotlib figure (or a list of them, tiled) rendered as an image."""
        layout = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats=layout)

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """(N, T, C, H, W) videos (float in [0, 1] or uint8) as one animated GIF, the batch tiled."""
        self._get_file_writer().add_summary(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None) -> None:
        self._get_file_writer().add_summary(audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                                            walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None) -> None:
        """Precision and recall of ``predictions`` in [0, 1] against 0/1 ``labels``."""
        summary = pr_curve(tag, to_numpy(labels), to_numpy(predictions), num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None) -> None:
        summary = pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                               false_negative_counts, precision, recall, num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled") -> None:
        self._get_file_writer().add_summary(custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled") -> None:
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._get_file_writer().add_summary(custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout) -> None:
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None) -> None:
        self._get_file_writer().add_summary(mesh(tag, vertices, colors, faces, config_dict), global_step,
                                            walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """Hyperparameters and their metrics, in a run of their own under ``log_dir``."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, session_start, session_end = hparams(hparam_dict, metric_dict,
                                                         hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=run_dir) as run_writer:
            for summary in (experiment, session_start, session_end):
                run_writer.file_writer.add_summary(summary, global_step)
            for key, value in metric_dict.items():
                run_writer.add_scalar(key, value, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """The model's graph from a ``hookgrad.fx`` trace (torch traces with TorchScript, so node
        names and ops differ from torch's; ``use_strict_trace`` is TorchScript's and has no effect)."""
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose))

    @staticmethod
    def _encode(rawstr: str) -> str:
        # percent-escape the characters that would make a tag a nested path
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None) -> None:
        """Points for TensorBoard's projector: ``tensors.tsv`` (and ``metadata.tsv``, ``sprite.png``)
        under ``<log_dir>/<step:05d>/<tag>``, listed in ``projector_config.pbtxt``."""
        from google.protobuf import text_format
        from tensorboard.compat import tf
        from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig
        gfile = tf.io.gfile
        mat = to_numpy(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        logdir = self._get_file_writer().get_logdir()
        save_path = os.path.join(logdir, subdir)
        if gfile.exists(save_path):
            if not gfile.isdir(save_path):
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            gfile.makedirs(save_path)
        info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                             tensor_path=subdir + "/tensors.tsv")
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            if metadata_header:
                if len(metadata_header) != len(metadata[0]):
                    raise AssertionError("len of header must be equal to the number of columns in metadata")
                lines = ["\t".join(str(cell) for cell in row) for row in [metadata_header] + list(metadata)]
            else:
                lines = [str(label) for label in metadata]
            with gfile.GFile(save_path + "/metadata.tsv", "wb") as handle:
                handle.write(("\n".join(lines) + "\n").encode("utf-8"))
            info.metadata_path = subdir + "/metadata.tsv"
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            self._write_sprite(to_numpy(label_img), save_path + "/sprite.png")
            info.sprite.image_path = subdir + "/sprite.png"
            info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        with gfile.GFile(save_path + "/tensors.tsv", "wb") as handle:
            for row in mat:
                handle.write(("\t".join(str(value.item()) for value in row) + "\n").encode("utf-8"))
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([info])
        with gfile.GFile(logdir + "/projector_config.pbtxt", "wb") as handle:
            handle.write(text_format.MessageToString(self._projector_config).encode("utf-8"))

    @staticmethod
    def _write_sprite(images, path) -> None:
        """All label images tiled into one square PNG (the projector's sprite sheet)."""
        import io
        import math

        import numpy as np
        from PIL import Image
        from tensorboard.compat import tf

        from .summary import make_grid
        grid = make_grid(images, ncols=math.ceil(images.shape[0] ** 0.5))
        side = grid.shape[2]
        square = np.zeros((side, side, 3))
        square[:grid.shape[1]] = grid.transpose(1, 2, 0)
        with io.BytesIO() as buffer:
            Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(buffer, format="PNG")
            encoded = buffer.getvalue()
        with tf.io.gfile.GFile(path, "wb") as handle:
            handle.write(encoded)

    def flush(self) -> None:
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
