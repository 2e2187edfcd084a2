"""CuPy's kernels compiled in worker processes before the first probe (hwprobe.kernels.warm): the task specs, the
shares, the workers' failure reports and the cache marker, with pure-Python tasks in real subprocesses."""

from __future__ import annotations

import json
import time

from hwprobe import probes
from hwprobe.kernels import warm
from hwprobe.kernels.warm import Warm


def test_a_task_spec_names_an_importable_function_and_its_arguments():
    spec = Warm(json.loads, "[1, 2]").spec
    assert spec == 'json:loads:["[1, 2]"]'
    fn, args = warm.parse(spec)
    assert fn is json.loads and fn(*args) == [1, 2]


def test_shares_are_round_robin_and_never_empty():
    assert warm.split(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert warm.split(["a"], 8) == [["a"]]


def test_every_probe_task_resolves_and_equal_gemm_points_share_one_task():
    reg = probes.registry()
    specs = [t.spec for p in reg.values() for t in p.warm]
    assert len(specs) > 40
    for spec in set(specs):
        fn, args = warm.parse(spec)
        assert callable(fn) and isinstance(args, list)
    # gpu.gemm_align and gpu.gemm_shapes ask for fp16.f32acc in its own layout; gpu.gemm names it explicitly
    shared = {t.spec for t in reg["gpu.gemm_align"].warm} & {t.spec for t in reg["gpu.gemm"].warm}
    assert any('"fp16.f32acc", "NN"' in s for s in shared)


def test_workers_report_failures_and_no_marker_is_left(tmp_path):
    logs: list[str] = []
    out = warm.run([Warm(time.sleep, 0.01), Warm(json.loads, "{")], None, "test", log=logs.append, workers=2,
                   cache=tmp_path)
    assert out["tasks"] == 2 and 1 <= out["workers"] <= 2
    assert len(out["failures"]) == 1 and "JSONDecodeError" in out["failures"][0]
    assert logs and "1 of 2 tasks failed" in logs[0]
    assert not list(tmp_path.glob(warm.MARKER_PREFIX + "*"))


def test_a_clean_warm_up_leaves_a_marker_and_the_next_run_starts_no_worker(tmp_path):
    tasks = [Warm(time.sleep, 0.01), Warm(json.dumps, [1])]
    first = warm.run(tasks, None, "test", cache=tmp_path)
    assert "failures" not in first and first["tasks"] == 2
    again = warm.run(tasks, None, "test", cache=tmp_path)
    assert again["skipped"].startswith("done before")


def test_a_worker_that_dies_is_a_failure_not_an_exception(tmp_path):
    out = warm.run([Warm(warm.os._exit, 3)], None, "test", cache=tmp_path)
    assert out["failures"] and "exited 3" in out["failures"][0]
