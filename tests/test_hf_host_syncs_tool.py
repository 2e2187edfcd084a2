"""tools/hf_host_syncs.py's pure parts: its cases, and a step's figures from profiler events (blocking calls with
where they ran; the harness's own synchronize, outside every module, and queued async copies left out)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import hf_host_syncs as tool  # noqa: E402


def test_cases_parse_and_bad_ones_say_why():
    assert tool.parse_cases("prefill:1x512, decode:16x1024") == [("prefill", 1, 512), ("decode", 16, 1024)]
    for bad in ("prefill:1x", "train:1x512", "decode:0x1024", "1x512"):
        with pytest.raises(ValueError, match="bad case"):
            tool.parse_cases(bad)


def test_a_step_summary_counts_kernels_blocking_calls_and_host_ops():
    ev = [{"name": "k1", "kind": "kernel", "us": 5.0}, {"name": "k2", "kind": "kernel", "us": 7.0},
          {"name": "aten::nonzero", "kind": "cpu_op", "us": 300.0, "depth": 0, "top": "aten::nonzero",
           "module": "Qwen3MoeSparseMoeBlock"},
          {"name": "cudaStreamSynchronize", "kind": "runtime", "us": 250.0, "depth": 1, "top": "aten::nonzero",
           "module": "Qwen3MoeSparseMoeBlock"},
          {"name": "cudaMemcpyAsync", "kind": "runtime", "us": 4.0, "depth": 2, "top": "aten::nonzero",
           "module": "Qwen3MoeSparseMoeBlock"},
          {"name": "aten::add", "kind": "cpu_op", "us": 20.0, "depth": 0, "top": "aten::add", "module": "X"},
          {"name": "aten::add", "kind": "cpu_op", "us": 10.0, "depth": 0, "top": "aten::add", "module": "X"},
          {"name": "cudaDeviceSynchronize", "kind": "runtime", "us": 900.0, "depth": 0,
           "top": "cudaDeviceSynchronize", "module": ""}]
    s = tool.summarize(ev, 0.002)
    assert (s["wall_us"], s["kernels"], s["kernel_us"]) == (2000.0, 2, 12.0)
    assert s["blocking"] == [{"name": "cudaStreamSynchronize", "us": 250.0, "top": "aten::nonzero",
                              "module": "Qwen3MoeSparseMoeBlock"}] and s["blocking_us"] == 250.0
    assert s["host_ops"][0] == {"op": "aten::nonzero", "calls": 1, "us": 300.0}
    assert s["host_ops"][1] == {"op": "aten::add", "calls": 2, "us": 30.0}
    doc = {"gpu": "G", "torch": "t", "transformers": "x", "layers": 4,
           "steps": [{"model": "m", "phase": "prefill", "batch": 1, "length": 512, **s}]}
    row = tool.table(doc).splitlines()[-1]
    assert row.startswith("| m | prefill | 1 x 512 | 2000 | 0 | 1 | 250 | aten::nonzero: Qwen3MoeSparseMoeBlock |")
    assert row.endswith("| nonzero 1x 300, add 2x 30 |")


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        tool.main([])
    assert e.value.code == 2 and "--out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        tool.main(["--table", "/nonexistent.json"])
    assert e.value.code == 2


def test_the_h200_run_reads_back_with_the_moe_syncs_where_they_ran():
    """The committed H200 run (profiles/h200-sxm/2026-11-28-hf-host-syncs): the profiler's view lists long copies
    inside the MoE prefill's experts (sort, masked_fill: device-to-device copies, not waits, as the sync census of
    profiles/h200-sxm/2026-11-28-hf-moe-ops showed) and every step's mask check; the table has a row per step."""
    import json

    run = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-28-hf-host-syncs/hf_host_syncs.json"
    doc = json.loads(run.read_text())
    steps = {(s["model"], s["phase"]): s for s in doc["steps"]}
    moe = steps[("qwen3-30b-a3b", "prefill")]
    in_experts = {b["top"] for b in moe["blocking"] if b["module"] == "Qwen3MoeExperts"}
    assert in_experts == {"aten::sort", "aten::masked_fill"}
    assert all(any(b["top"] == "aten::is_nonzero" for b in s["blocking"]) for s in steps.values())
    assert not any(b["module"] == "Qwen3MoeExperts" for b in steps[("qwen3-30b-a3b", "decode")]["blocking"])
    assert moe["wall_us"] > 2 * steps[("llama-3.2-1b", "prefill")]["wall_us"]
    assert len(tool.table(doc).splitlines()) == 4 + len(doc["steps"])


class _Handle:
    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn

    def remove(self):
        self.hooks.remove(self.fn)


class _Module:
    """A stand-in nn.Module: hooks called around ``body`` as torch calls them around forward."""

    def __init__(self, body, children=()):
        self.body, self.children, self.pre, self.post = body, list(children), [], []

    def modules(self):
        yield self
        for c in self.children:
            yield from c.modules()

    def register_forward_pre_hook(self, fn):
        self.pre.append(fn)
        return _Handle(self.pre, fn)

    def register_forward_hook(self, fn):
        self.post.append(fn)
        return _Handle(self.post, fn)

    def __call__(self):
        for h in list(self.pre):
            h(self, ())
        self.body()
        for h in list(self.post):
            h(self, (), None)


def test_the_sync_census_counts_each_synchronizing_line_in_its_module_and_times_modules_apart():
    import types
    import warnings

    modes = []
    cuda = types.SimpleNamespace(synchronize=lambda: None, set_sync_debug_mode=modes.append)
    torch = types.SimpleNamespace(cuda=cuda)
    # a transformers source line that synchronizes: a warning raised from a file under /transformers/, as PyTorch's
    # sync debug mode raises it from the Python line that called the op
    code = compile("def route():\n    if modes[-1] == 'warn':\n        warn('called a synchronizing CUDA operation')\n",
                   "/site-packages/transformers/integrations/moe.py", "exec")
    ns = {"warn": warnings.warn, "modes": modes}
    exec(code, ns)

    class Qwen3MoeExperts(_Module):
        pass

    experts = Qwen3MoeExperts(lambda: (ns["route"](), ns["route"]()))
    model = _Module(lambda: (experts(), modes[-1] == "warn" and warnings.warn("unrelated", stacklevel=1)), [experts])
    out = tool.sync_census(torch, model, model, lambda: None)
    assert out["syncs"] == [{"module": "Qwen3MoeExperts", "where": "moe.py:3", "count": 2}]   # (no source to read)
    assert modes == ["warn", 0]                                  # the debug mode is left off again
    assert set(out["module_host_us"]) == {"_Module", "Qwen3MoeExperts"}
    assert all(v >= 0 for v in out["module_host_us"].values())
    assert not model.pre and not experts.post                   # the hooks are removed
    doc = {"gpu": "G", "torch": "t", "transformers": "x", "layers": 4,
           "steps": [{"model": "m", "phase": "prefill", "batch": 1, "length": 512, "wall_us": 1.0, "blocking": [],
                      "blocking_us": 0, "host_ops": [], **out}]}
    row = tool.table(doc).splitlines()[-1]
    assert row.startswith("| m | prefill | 1 x 512 | 2 x Qwen3MoeExperts: moe.py:3 | ")


def test_each_ops_own_device_work_is_gathered_by_module_op_and_shapes():
    dtod = "Memcpy DtoD (Device -> Device)"
    ev = [{"name": "aten::copy_", "kind": "cpu_op", "us": 9.0, "depth": 2, "top": "aten::contiguous",
           "module": "Qwen3MoeExperts", "shapes": "[[4096, 768]]", "launched": [[dtod, 37.0]]},
          {"name": "aten::copy_", "kind": "cpu_op", "us": 8.0, "depth": 2, "top": "aten::contiguous",
           "module": "Qwen3MoeExperts", "shapes": "[[4096, 768]]", "launched": [[dtod, 35.0]]},
          {"name": "aten::sort", "kind": "cpu_op", "us": 50.0, "depth": 0, "top": "aten::sort",
           "module": "Qwen3MoeExperts", "shapes": "[[32768]]", "launched": [["radix", 5.0], ["scan", 1.0]]}]
    got = {(r["top"], r["op"]): r for r in tool.summarize(ev, 0.001)["op_launches"]}
    assert got[("aten::contiguous", "aten::copy_")] == {
        "module": "Qwen3MoeExperts", "top": "aten::contiguous", "op": "aten::copy_", "shapes": "[[4096, 768]]",
        "calls": 2, "launched": 2, "us": 72.0, "names": [dtod]}
    assert got[("aten::sort", "aten::sort")]["launched"] == 2 and got[("aten::sort", "aten::sort")]["calls"] == 1
    doc = {"gpu": "G", "torch": "t", "transformers": "x", "layers": 4,
           "steps": [{"model": "m", "phase": "prefill", "batch": 1, "length": 512, **tool.summarize(ev, 0.001)}]}
    rows = [r for r in tool.table(doc).splitlines() if r.startswith("| m | prefill | 1 x 512 | Qwen3MoeExperts |")]
    assert [r.split(" | ")[4] for r in rows] == ["aten::copy_ (aten::contiguous)", "aten::sort (aten::sort)"]


def test_the_committed_op_launches_show_the_moes_device_copies(tmp_path, capsys):
    """profiles/h200-sxm/2026-11-28-hf-moe-ops: each out-of-place masked_fill of the grouped experts copies its whole
    input (a DtoD memcpy of S x width), and the table reads the gzipped run."""
    import gzip
    import json

    run = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-28-hf-moe-ops/hf_moe_ops.json.gz"
    assert tool.main(["--table", str(run)]) == 0
    assert "aten::copy_ (aten::masked_fill) | [[131072, 2048], [131072, 2048], []]" in capsys.readouterr().out
    steps = json.loads(gzip.decompress(run.read_bytes()))["steps"]
    big = next(s for s in steps if (s["batch"], s["length"]) == (8, 2048))
    copies = [r for r in big["op_launches"] if r["top"] == "aten::masked_fill" and r["op"] == "aten::copy_"]
    assert sorted(r["shapes"] for r in copies) == ["[[131072, 1536], [131072, 1536], []]",
                                                   "[[131072, 2048], [131072, 2048], []]"]
    assert all(r["calls"] == 4 and r["names"] == ["Memcpy DtoD (Device -> Device)"] for r in copies)


def test_the_census_finds_one_wait_a_step_the_mask_check():
    """profiles/h200-sxm/2026-11-28-hf-moe-ops: under the sync debug mode each eager step synchronizes once, in
    masking_utils' mask check, in both models and phases; hf-compiled's static-cache prefill never inside a module."""
    import json

    runs = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-28-hf-moe-ops"
    eager = json.loads((runs / "hf_host_syncs-eager.json").read_text())["steps"]
    assert {(s["model"], s["phase"]) for s in eager} >= {("qwen3-30b-a3b", "prefill"), ("llama-3.2-1b", "decode")}
    for s in eager:
        inside = [x for x in s["syncs"] if x["module"]]
        assert [x["count"] for x in inside] == [1] and inside[0]["where"].startswith("masking_utils.py:"), s["model"]
    compiled = json.loads((runs / "hf_host_syncs-compiled.json").read_text())["steps"]
    assert compiled and all(not x["module"] for s in compiled for x in s["syncs"])
