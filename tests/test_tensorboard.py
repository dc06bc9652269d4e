"""torch.utils.tensorboard's SummaryWriter: the same logging calls on torch and hookgrad write
event files that TensorBoard's own reader (EventAccumulator) reads back identically."""
import importlib
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from google.protobuf.json_format import MessageToDict  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: E402

from difftest import catch, differential  # noqa: E402


SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))


def _writer_class(T):
    return importlib.import_module(T.__name__ + ".utils.tensorboard").SummaryWriter


def _plugin_content(acc, plugin):
    try:
        return acc.PluginTagToContent(plugin)
    except KeyError:  # the run has no summaries of that plugin
        return {}


def _read_run(path):
    """Everything TensorBoard shows of one run, in comparable form."""
    acc = EventAccumulator(path, size_guidance={"scalars": 0, "histograms": 0, "images": 0,
                                                "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    record = {"tags": {kind: sorted(tags[kind]) for kind in ("scalars", "histograms", "images", "tensors")}}
    record["scalars"] = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in tags["scalars"]}
    record["histograms"] = {
        tag: [(e.step, h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket))
              for e in acc.Histograms(tag) for h in [e.histogram_value]]
        for tag in tags["histograms"]}
    record["images"] = {tag: [(e.step, e.width, e.height, e.encoded_image_string) for e in acc.Images(tag)]
                        for tag in tags["images"]}
    record["tensors"] = {tag: [(e.step, e.tensor_proto.SerializeToString()) for e in acc.Tensors(tag)]
                         for tag in tags["tensors"]}
    record["hparams"] = {tag: MessageToDict(HParamsPluginData.FromString(content))
                         for tag, content in _plugin_content(acc, "hparams").items()}
    record["plugins"] = {plugin: sorted(_plugin_content(acc, plugin))
                         for plugin in ("text", "scalars", "tensor")}
    return record


def _read_all(root):
    runs = {}
    for directory, _, files in os.walk(root):
        if any(name.startswith("events.out.tfevents") for name in files):
            runs[os.path.relpath(directory, root)] = _read_run(directory)
    return runs


@differential
def test_scalars_histograms_text_images_hparams(T, tmp_path):
    root = tmp_path / T.__name__
    rng = np.random.default_rng(0)
    data = rng.standard_normal((4, 50)).astype(np.float32)
    with _writer_class(T)(str(root)) as writer:
        for step in range(4):
            writer.add_scalar("loss/train", T.tensor(float(data[step, 0])), step)
            writer.add_scalar("lr", 0.1 / (step + 1), global_step=np.int64(step))
            writer.add_scalar("exact", T.tensor(data[step, 1], dtype=T.float64), step, new_style=True,
                              double_precision=True)
            writer.add_scalar("new", data[step, 2], step, new_style=True)
            writer.add_scalars("pair/run", {"a": float(step), "b": T.tensor(2.0 * step)}, step)
            writer.add_histogram("weights", T.tensor(data[step]), step)
            writer.add_histogram("counts", T.tensor(np.arange(step + 5)), step, bins=4)
            writer.add_histogram("auto", data[step], step, bins="auto", max_bins=3)
            writer.add_histogram("edges", T.tensor(data[step], dtype=T.float64), step,
                                 bins=np.linspace(-3, 3, 13))
            writer.add_text("notes", f"step **{step}**", step)
        writer.add_histogram("half", T.tensor(data[0]).to(T.bfloat16), 0)
        writer.add_histogram("one value", T.tensor([0.0]), 0)
        writer.add_histogram_raw("raw", min=0.0, max=2.0, num=3, sum=3.0, sum_squares=5.0,
                                 bucket_limits=[1.0, 2.0], bucket_counts=[1, 2], global_step=1)
        writer.add_image("chw", T.tensor(rng.random((3, 6, 5)).astype(np.float32)), 0)
        writer.add_image("hwc", T.tensor(rng.integers(0, 256, (6, 5, 3)), dtype=T.uint8), 0,
                         dataformats="HWC")
        writer.add_image("gray", T.tensor(rng.random((6, 5))), 0, dataformats="HW")
        writer.add_images("batch", T.tensor(rng.random((3, 1, 4, 4)).astype(np.float32)), 0)
        writer.add_images("batch nhwc", T.tensor(rng.random((2, 4, 4, 3)).astype(np.float32)), 0,
                          dataformats="NHWC")
        writer.add_tensor("tensor", T.tensor([[1.0, 2.0], [3.0, 4.5]]), 0)
        writer.add_tensor("ints", T.tensor([1, 2, 3]), 0)
        writer.add_hparams({"lr": 0.01, "layers": 3, "opt": "adam", "nesterov": True, "unused": None,
                            "decay": T.tensor([0.5])}, {"hparam/accuracy": 0.75},
                           hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="trial")
    entries = os.listdir(root)
    return (_read_all(root), sorted(name for name in entries if os.path.isdir(root / name)),
            sum(name.startswith("events.out.tfevents") for name in entries))


@differential
def test_purge_step_and_reopen_after_close(T, tmp_path):
    root = tmp_path / T.__name__
    writer = _writer_class(T)(str(root), purge_step=2, filename_suffix=".x")
    for step in range(4):
        writer.add_scalar("a", step, step)
    writer.close()
    writer.add_scalar("a", 10.0, 4)  # a closed writer opens a new event file
    writer.flush()
    writer.close()
    names = sorted(os.listdir(root))
    return _read_all(root), len(names), all(name.endswith(".x") for name in names)


@differential
def test_default_log_dir_with_comment(T, tmp_path, monkeypatch):
    (tmp_path / T.__name__).mkdir()
    monkeypatch.chdir(tmp_path / T.__name__)
    writer = _writer_class(T)(comment="_lr0.1")
    writer.close()
    run = os.path.relpath(writer.get_logdir(), "runs")
    pattern = r"[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_" + re.escape(socket.gethostname() + "_lr0.1")
    return bool(re.fullmatch(pattern, run)), os.path.dirname(writer.get_logdir())


@differential
def test_bad_input_raises_torch_errors_and_half_tensors_log(T, tmp_path):
    with _writer_class(T)(str(tmp_path / T.__name__)) as writer:
        results = [
            catch(writer.add_scalar, "two values", T.tensor([1.0, 2.0]), 0),
            catch(writer.add_scalar, "a list", [1.0], 0),
            catch(writer.add_histogram, "empty", T.tensor([]), 0),
            catch(writer.add_histogram, "out of range", T.tensor([5.0]), 0, bins=[0.0, 1.0]),
            catch(writer.add_histogram_raw, "raw", 0, 1, 1, 1, 1, [1.0, 2.0], [1], 0),
            catch(writer.add_image, "wrong rank", T.rand(3, 4), 0),
            catch(writer.add_image, "twice", T.rand(3, 4, 4), 0, dataformats="CCW"),
            catch(writer.add_images, "two channels", T.rand(2, 2, 4, 4), 0),
            catch(writer.add_hparams, [("lr", 1)], {}),
            catch(writer.add_hparams, {"lr": [1]}, {}),
            catch(writer.add_hparams, {"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["x"]}),
            catch(writer.add_tensor, "half", T.tensor([1.0, -2.5]).to(T.float16), 0),
            catch(writer.add_tensor, "bfloat16", T.tensor([1.0, 3.0]).to(T.bfloat16), 0),
            catch(writer.add_embedding, T.rand(3, 2), metadata=["a"]),
            catch(writer.add_embedding, T.rand(3, 2, 1)),
        ]
        writer.add_scalar("still usable", 1.0, 0)  # errors leave the writer working
    return results, _read_all(tmp_path / T.__name__)


@differential
def test_embedding_files(T, tmp_path):
    root = tmp_path / T.__name__
    rng = np.random.default_rng(1)
    with _writer_class(T)(str(root)) as writer:
        writer.add_embedding(T.tensor(rng.random((4, 3))), metadata=["a", "b", "c", "d"],
                             label_img=T.tensor(rng.random((4, 3, 2, 2)).astype(np.float32)), tag="feat/x")
        writer.add_embedding(T.tensor(rng.random((2, 2)).astype(np.float32)),
                             metadata=[["x", 1], ["y", 2]], metadata_header=["name", "n"], global_step=3)
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.startswith("events.out"):
                with open(os.path.join(directory, name), "rb") as handle:
                    files[os.path.relpath(os.path.join(directory, name), root)] = handle.read()
    return files


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
@differential
def test_figure(T, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    root = tmp_path / T.__name__
    with _writer_class(T)(str(root)) as writer:
        figures = []
        for scale in (1, 2):
            figure = plt.figure(figsize=(1, 1), dpi=20)
            plt.plot([0, 1], [0, scale])
            figures.append(figure)
        writer.add_figure("one", figures[0], 0, close=False)
        writer.add_figure("both", figures, 0)
    return _read_all(root), plt.fignum_exists(figures[0].number)


def _net(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(3, 4)
            self.seq = T.nn.Sequential(T.nn.ReLU(), T.nn.Linear(4, 2))

        def forward(self, x, y):
            return self.seq(T.relu(self.fc(x)) + y.sum()).softmax(-1)
    T.manual_seed(0)
    return Net()


def _graph_of(T, root, model, inputs):
    with _writer_class(T)(str(root)) as writer:
        writer.add_graph(model, inputs)
    acc = EventAccumulator(str(root))
    acc.Reload()
    return acc.Graph()


def test_add_graph_from_fx(tmp_path):
    import hookgrad
    import torch
    graph = _graph_of(hookgrad, tmp_path / "hookgrad", _net(hookgrad), (hookgrad.rand(5, 3), hookgrad.rand(2)))
    nodes = {node.name: node for node in graph.node}
    shapes = {name: [[dim.size for dim in shape.dim] for shape in node.attr["_output_shapes"].list.shape]
              for name, node in nodes.items()}
    assert nodes["Net/Linear[fc]/fc"].op == "Linear"
    assert list(nodes["Net/Linear[fc]/fc"].input) == ["input/x"]
    assert list(nodes["Net/add"].input) == ["Net/relu", "Net/sum_1"]
    assert list(nodes["output/output"].input) == ["Net/softmax"]
    assert shapes["Net/Sequential[seq]/Linear[1]/seq_1"] == [[5, 2]] and shapes["Net/sum_1"] == [[]]
    assert nodes["Net/Linear[fc]/fc"].attr["attr"].s == b"Linear(in_features=3, out_features=4, bias=True)"
    # the module scopes are torch's (its nodes inside them are TorchScript's ATen ops)
    torch_graph = _graph_of(torch, tmp_path / "torch", _net(torch), (torch.rand(5, 3), torch.rand(2)))
    torch_names = [node.name for node in torch_graph.node]
    for name in ("Net/Linear[fc]/", "Net/Sequential[seq]/ReLU[0]/", "Net/Sequential[seq]/Linear[1]/"):
        assert any(found.startswith(name) for found in torch_names), name
        assert any(found.startswith(name) for found in nodes), name


def test_add_graph_refuses_untraceable_models_clearly(tmp_path):
    import hookgrad
    from hookgrad.utils.tensorboard import SummaryWriter

    class Branchy(hookgrad.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x  # control flow on values: fx cannot trace it

    with SummaryWriter(str(tmp_path)) as writer:
        with pytest.raises(NotImplementedError, match="TorchScript tracer.*could not trace Branchy"):
            writer.add_graph(Branchy(), hookgrad.rand(1, 2))
        writer.add_scalar("after", 1.0, 0)
    assert _read_all(tmp_path)["."]["scalars"] == {"after": [(0, 1.0)]}


def test_without_the_package_names_the_extra():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import hookgrad.utils.tensorboard\n"
            "except ModuleNotFoundError as error:\n    print(type(error).__name__, error)\n")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True).stdout
    assert out.startswith("ModuleNotFoundError TensorBoard logging requires TensorBoard")
    assert "hookgrad[tensorboard]" in out


def test_under_hookgrad_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.tensorboard import SummaryWriter\n"
        "model = torch.nn.Linear(3, 1)\n"
        "with SummaryWriter('logs') as writer:\n"
        "    for step in range(3):\n"
        "        loss = model(torch.ones(2, 3)).pow(2).mean()\n"
        "        writer.add_scalar('loss', loss.item(), step)\n"
        "        writer.add_histogram('weight', model.weight, step)\n"
        "import hookgrad\n"
        "print(type(writer).__module__, type(writer) is hookgrad.utils.tensorboard.SummaryWriter)\n")
    out = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, check=True).stdout
    # hookgrad's writer, named as torch's under `hookgrad run`
    assert out.strip() == "torch.utils.tensorboard.writer True"
    run = _read_all(tmp_path / "logs")["."]
    assert [step for step, _ in run["scalars"]["loss"]] == [0, 1, 2]
    assert [entry[0] for entry in run["histograms"]["weight"]] == [0, 1, 2]


@differential
def test_pr_curves_audio_mesh_custom_scalars(T, tmp_path):
    root = tmp_path / T.__name__
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 40)
    predictions = rng.random(40).astype(np.float32)
    with _writer_class(T)(str(root)) as writer:
        writer.add_pr_curve("pr", T.tensor(labels), T.tensor(predictions), 0)
        writer.add_pr_curve("pr weighted", labels, predictions, 1, num_thresholds=500,
                            weights=rng.random(40))
        writer.add_pr_curve_raw("pr raw", [3, 1], [2, 0], [0, 2], [0, 2], [0.6, 1.0], [1.0, 0.3], 0,
                                num_thresholds=2)
        writer.add_audio("tone", T.tensor(np.sin(np.linspace(0, 20, 300))).reshape(1, -1), 0,
                         sample_rate=8000)
        writer.add_audio("loud", T.tensor([0.5, 2.0, -3.0]), 1)
        vertices = T.tensor(rng.random((1, 4, 3)).astype(np.float32))
        writer.add_mesh("mesh", vertices, colors=T.tensor(rng.integers(0, 256, (1, 4, 3))),
                        faces=T.tensor([[[0, 1, 2], [1, 2, 3]]]), config_dict={"camera": {"fov": 75}})
        writer.add_mesh("points", vertices, global_step=2)
        writer.add_custom_scalars({"losses": {"both": ["Multiline", ["loss/train", "loss/test"]],
                                              "band": ["Margin", ["m", "lo", "hi"]]}})
        writer.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
        writer.add_custom_scalars_marginchart(["a", "b", "c"])
        errors = [catch(writer.add_custom_scalars_marginchart, ["a", "b"]),
                  catch(writer.add_audio, "stereo", T.rand(2, 5), 0),
                  catch(writer.add_mesh, "flat", T.rand(4, 3)),
                  catch(writer.add_mesh, "deep", T.rand(1, 4, 3, 1))]
    acc = EventAccumulator(str(root), size_guidance={"tensors": 0, "audio": 0})
    acc.Reload()
    audio = {tag: [(e.step, e.encoded_audio_string, e.sample_rate, e.length_frames) for e in acc.Audio(tag)]
             for tag in acc.Tags()["audio"]}
    plugins = {plugin: {tag: content for tag, content in _plugin_content(acc, plugin).items()}
               for plugin in ("pr_curves", "mesh", "custom_scalars")}
    return _read_all(root)["."]["tensors"], audio, plugins, errors


@differential
def test_image_with_boxes(T, tmp_path):
    root = tmp_path / T.__name__
    rng = np.random.default_rng(3)
    picture = T.tensor(rng.random((3, 40, 60)).astype(np.float32))
    boxes = T.tensor([[2.0, 3.0, 30.0, 25.0], [10.0, 5.0, 50.0, 38.0]])
    with _writer_class(T)(str(root)) as writer:
        writer.add_image_with_boxes("labelled", picture, boxes, 0, labels=["cat", "dog"])
        writer.add_image_with_boxes("label count differs", picture, boxes, 0, labels=["cat"])
        writer.add_image_with_boxes("one label", picture, boxes[:1], 0, labels="cat", rescale=2)
        writer.add_image_with_boxes("hwc uint8", T.tensor(rng.integers(0, 256, (40, 60, 3)), dtype=T.uint8),
                                    boxes.numpy(), 1,
                                    dataformats="HWC")
    return _read_all(root)["."]["images"]


@pytest.mark.parametrize("batch", [1, 2, 3, 4, 5, 6])
def test_video_frames_tile_the_batch_as_torch(batch):
    from torch.utils.tensorboard._utils import _prepare_video
    from hookgrad.utils.tensorboard.summary import video_frames
    videos = np.random.default_rng(batch).random((batch, 2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(video_frames(videos), _prepare_video(videos))
    as_bytes = (videos * 255).astype(np.uint8)
    np.testing.assert_array_equal(video_frames(as_bytes), _prepare_video(as_bytes))


def test_video_is_an_animated_gif_of_the_frames(tmp_path):
    # torch encodes with moviepy (not installed here); compare the decoded frames with the input
    from PIL import Image
    import io
    import hookgrad
    from hookgrad.utils.tensorboard import SummaryWriter
    rng = np.random.default_rng(4)
    videos = rng.integers(0, 2, (3, 4, 3, 6, 5)).astype(np.float32)  # black and white: no palette loss
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_video("clip", hookgrad.tensor(videos), 7, fps=5)
        writer.add_video("gray", hookgrad.tensor((videos[:1, :, :1] * 255).astype(np.uint8)), 8)
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    for tag, channels, batch in (("clip", 3, 3), ("gray", 1, 1)):
        (event,) = acc.Images(tag)
        gif = Image.open(io.BytesIO(event.encoded_image_string))
        rows, cols = (1, 4) if batch == 3 else (1, 1)  # 3 videos: padded to 4, rows from the 3
        assert (event.step, event.width, event.height) == (7 if tag == "clip" else 8, 5 * cols, 6 * rows)
        assert gif.n_frames == 4 and gif.info["duration"] == (200 if tag == "clip" else 250)
        for step in range(4):
            gif.seek(step)
            frame = np.asarray(gif.convert("RGB"))
            tile = videos[0, step, :channels].transpose(1, 2, 0) * 255
            np.testing.assert_array_equal(frame[:6, :5], np.broadcast_to(tile, (6, 5, 3)))
            if batch == 3:
                assert not frame[:, 15:].any()  # the padding video is black
