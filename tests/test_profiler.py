"""torch.profiler and torch.autograd.profiler against torch: which events a profile holds (by name,
count, nesting and input shapes, for the ops both record), record_function ranges, the step
schedule and on_trace_ready, the summary table's layout, and the argument and state errors. Times
differ between the frameworks, so they are checked only for consistency."""
import importlib
import json
import re
import subprocess
import sys
import warnings

import pytest

from difftest import catch, differential


def prof_mod(T):
    return importlib.import_module(T.__name__ + ".profiler")


def small_model(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(6, 4), T.nn.ReLU(), T.nn.Linear(4, 2))


# hookgrad's backward formulas do not go through its op entry points (torch's call aten::sum, aten::mm...)
SHARED_OPS = ("aten::linear", "aten::relu", "model_inference", "backward_pass", "inner")


def summarize(events):
    """Per shared name: the number of events, their parents' names and their input shapes."""
    out = {}
    for name in SHARED_OPS:
        chosen = [e for e in events if e.name == name]
        out[name] = (len(chosen), sorted(e.cpu_parent.name if e.cpu_parent else "" for e in chosen),
                     sorted(str(e.input_shapes) for e in chosen))
    return out


@pytest.mark.parametrize("record_shapes", [True, False])
@differential
def test_events_of_a_forward_and_backward(T, record_shapes):
    P = prof_mod(T)
    model, x = small_model(T), T.ones(3, 6)
    with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=record_shapes) as prof:
        with P.record_function("model_inference"):
            out = model(x)
            with P.record_function("inner"):
                loss = out.sum()
        with P.record_function("backward_pass"):
            loss.backward()
    events = prof.events()
    averages = prof.key_averages()
    by_key = {a.key: a for a in averages}
    backward_nodes = sorted({e.name for e in events if e.name.startswith("autograd::engine::evaluate_function: ")
                             and "Accumulate" not in e.name})
    consistent = all(0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-6 for e in events)
    return (summarize(events), by_key["aten::linear"].count, by_key["model_inference"].count, backward_nodes,
            consistent, type(events).__name__, type(averages[0]).__name__, type(events[0]).__name__)


@differential
def test_grouped_by_input_shape(T):
    P = prof_mod(T)
    model = small_model(T)
    with P.profile(record_shapes=True) as prof:
        model(T.ones(3, 6))
        model(T.ones(5, 6))
        model(T.ones(3, 6))
    grouped = prof.key_averages(group_by_input_shape=True)
    linear = sorted((str(a.input_shapes), a.count) for a in grouped if a.key == "aten::linear")
    plain = [a for a in prof.key_averages() if a.key == "aten::linear"]
    return linear, [(a.count, a.input_shapes) for a in plain]


def table_layout(text):
    lines = text.rstrip("\n").split("\n")
    header = re.split(r"\s{2,}", lines[1].strip())
    return header, lines[0] == lines[2] == lines[-2], lines[-1].split(":")[0]


@pytest.mark.parametrize("shapes", [True, False])
@differential
def test_table_layout(T, shapes):
    P = prof_mod(T)
    model = small_model(T)
    with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=shapes) as prof:
        with P.record_function("model_inference"):
            model(T.ones(2, 6))
    averages = prof.key_averages(group_by_input_shape=shapes)
    table = averages.table(sort_by="cpu_time_total", row_limit=3)
    rows = table.rstrip("\n").split("\n")[3:-2]
    totals = [a.cpu_time_total for a in sorted(averages, key=lambda a: -a.cpu_time_total)[:3]]
    return (table_layout(table), len(rows), totals == sorted(totals, reverse=True),
            rows[0].split()[0] == "model_inference", catch(averages.table, sort_by="no_such_key"))


@differential
def test_schedule_actions(T):
    P = prof_mod(T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plans = [P.schedule(wait=1, warmup=1, active=2, repeat=1), P.schedule(wait=0, warmup=0, active=1),
                 P.schedule(wait=2, warmup=1, active=3, repeat=2, skip_first=3),
                 P.schedule(wait=2, warmup=1, active=1, skip_first=2, skip_first_wait=1)]
    actions = [[plan(step).name for step in range(16)] for plan in plans]
    return (actions, [str(w.message) for w in caught],
            catch(P.schedule, wait=-1, warmup=0, active=1), catch(P.schedule, wait=0, warmup=0, active=0),
            catch(plans[0], -1), [a.name for a in P.ProfilerAction][:4])


def _step_names(prof):
    return sorted({e.name for e in prof.events() if e.name.startswith("ProfilerStep")})


@pytest.mark.parametrize("plan", [dict(wait=1, warmup=1, active=2, repeat=1), dict(wait=0, warmup=1, active=1),
                                  dict(wait=1, warmup=0, active=2, repeat=2)])
@differential
def test_scheduled_profile_hands_over_each_cycle(T, plan):
    P = prof_mod(T)
    model = small_model(T)
    handed = []

    def ready(prof):
        counts = [e.count for e in prof.key_averages() if e.key == "aten::linear"]
        handed.append((prof.step_num, _step_names(prof), counts))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with P.profile(activities=[P.ProfilerActivity.CPU], schedule=P.schedule(**plan), on_trace_ready=ready) as prof:
            for _ in range(7):
                model(T.ones(2, 6)).sum().backward()
                prof.step()
    return handed, prof.step_num


@differential
def test_profile_without_schedule_start_stop(T):
    P = prof_mod(T)
    model = small_model(T)
    handed = []
    prof = P.profile(on_trace_ready=lambda p: handed.append(p.step_num))
    before = catch(prof.events), catch(prof.key_averages)
    prof.start()
    model(T.ones(2, 6))
    prof.step()
    model(T.ones(2, 6))
    prof.stop()
    linear = [a.count for a in prof.key_averages() if a.key == "aten::linear"]
    return before, handed, linear, _step_names(prof)


@differential
def test_autograd_profiler_api(T):
    AP = T.autograd.profiler
    prof = AP.profile(record_shapes=True)
    early = catch(prof.key_averages), catch(prof.table)
    with prof:
        with AP.record_function("block"):
            T.ones(2, 3).relu()
    names = [e.name for e in prof.function_events if e.name in ("block", "aten::relu")]
    relu = [e for e in prof.function_events if e.name == "aten::relu"][0]

    @AP.record_function("decorated")
    def f(x):
        return x.relu()

    with AP.profile() as again:
        f(T.ones(2))
    outside = f(T.ones(1))  # no profile: the range records nothing and the function still runs
    return (early, names, relu.input_shapes, relu.cpu_parent.name, prof.self_cpu_time_total > 0,
            str(prof).split("\n")[1].split()[0], [e.name for e in again.function_events if e.name == "decorated"],
            outside, hasattr(prof, "events"))


def test_nested_profiles_both_record():
    """torch warns and its outer profile loses the events of the nested one's time; hookgrad's
    profiles each record everything while they are open."""
    import hookgrad as T
    with T.profiler.profile() as outer:
        T.ones(2).relu()
        with T.autograd.profiler.profile() as inner:
            T.ones(3).relu()
    assert [a.count for a in outer.key_averages() if a.key == "aten::relu"] == [2]
    assert [a.count for a in inner.key_averages() if a.key == "aten::relu"] == [1]


@differential
def test_profiler_enums_and_config(T):
    A = T.autograd
    members = [[(name, int(m)) for name, m in kind.__members__.items()]
               for kind in (A.ProfilerActivity, A.ProfilerState, A.DeviceType)]
    return (members, str(A.ProfilerActivity.CPU), repr(A.ProfilerState.CPU),
            A.ProfilerActivity.CPU.value, prof_mod(T).supported_activities() == {A.ProfilerActivity.CPU},
            prof_mod(T).ProfilerActivity is A.ProfilerActivity, A.DeviceType is T.profiler.DeviceType)


def test_profiler_config_and_kineto():
    import hookgrad
    A = hookgrad.autograd
    config = A.ProfilerConfig(A.ProfilerState.CPU, True, False, False, False, False)
    assert (config.state, config.report_input_shapes, config.with_modules) == (A.ProfilerState.CPU, True, False)
    assert A.kineto_available() is False  # hookgrad's own profiler, not Kineto


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    import hookgrad as T
    P = T.profiler
    with P.profile(record_shapes=True, on_trace_ready=P.tensorboard_trace_handler(str(tmp_path / "tb"))) as prof:
        with P.record_function("step"):
            T.ones(2, 2).relu()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    names = {e["name"] for e in trace}
    assert {"step", "aten::relu"} <= names and all(e["ph"] == "X" and e["dur"] >= 0 for e in trace)
    written = list((tmp_path / "tb").iterdir())
    assert len(written) == 1 and written[0].name.endswith(".pt.trace.json")


def test_nothing_is_patched_outside_a_profile():
    import hookgrad as T
    from hookgrad.nn import functional as F
    before = (T.Tensor.__add__, T.Tensor.relu, F.linear, T.add)
    with T.profiler.profile():
        assert T.Tensor.relu is not before[1]
    assert (T.Tensor.__add__, T.Tensor.relu, F.linear, T.add) == before


def test_tutorial_script_under_hookgrad_run(tmp_path):
    script = tmp_path / "profile_tutorial.py"
    script.write_text(
        "import torch\n"
        "from torch.profiler import profile, record_function, ProfilerActivity\n"
        "model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())\n"
        "inputs = torch.randn(4, 16)\n"
        "with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:\n"
        "    with record_function('model_inference'):\n"
        "        model(inputs)\n"
        "print(prof.key_averages().table(sort_by='cpu_time_total', row_limit=10))\n"
        "print(prof.key_averages(group_by_input_shape=True).table(sort_by='cpu_time_total', row_limit=10))\n")
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "model_inference" in done.stdout and "aten::linear" in done.stdout
    assert "Input Shapes" in done.stdout and "[[4, 16], [8, 16], [8]]" in done.stdout
    assert "Self CPU time total:" in done.stdout
