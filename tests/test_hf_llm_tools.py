"""tools/validate_hf_llm.py's pure helpers (the device side needs a GPU) and tools/compare_hf_llm.py on a small JSON
shaped as the validation tool writes it (its own helpers build the pieces)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import compare_hf_llm as cmp  # noqa: E402
import validate_hf_llm as val  # noqa: E402

from tests.test_llm import FakePricer  # noqa: E402

DATA = ROOT / "tests" / "data" / "llm_configs"
H200 = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"


def test_parse_cases_and_plan():
    assert val.parse_cases("1x512, 16X1024") == [(1, 512), (16, 1024)]
    for bad in ("1x", "0x512", "ax2", "1x1"):
        with pytest.raises(ValueError):
            val.parse_cases(bad)
    p = val.plan(["hf", "hf-compiled"], [(1, 512)], [(1, 1024), (16, 1024)], [(16, 2048)])
    assert p == [("hf", "prefill", 1, 512), ("hf", "decode", 1, 1024), ("hf", "decode", 16, 1024),
                 ("hf-compiled", "prefill", 1, 512), ("hf-compiled", "decode", 16, 2048)]


def test_the_host_is_read_around_the_cases_of_every_runtime_priced_with_it():
    assert val.host_priced(["eager"]) and val.host_priced(["hf-compiled"])     # hf-compiled's prefill: op by op
    assert val.host_priced(["hf", "hf-compiled"])
    assert not val.host_priced(["hf"])


def test_kernel_cases_lists_every_case_only_for_the_named_models():
    from types import SimpleNamespace

    a = SimpleNamespace(runtimes=["hf", "hf-compiled"], prefill="1x512,8x512", decode="1x1024,16x1024",
                        compiled_decode="16x2048", kernels_every_case={"llama-3.2-1b"})
    assert val.kernel_cases("qwen3-8b", a) == [("hf", "prefill", 1, 512), ("hf", "decode", 1, 1024),
                                               ("hf-compiled", "prefill", 1, 512), ("hf-compiled", "decode", 16, 2048)]
    every = val.kernel_cases("llama-3.2-1b", a)
    assert ("hf", "decode", 16, 1024) in every and ("hf", "prefill", 8, 512) in every and len(every) == 7


def test_reduce_config_cuts_the_layer_pattern_with_the_layers():
    d = {"num_hidden_layers": 42, "layer_types": ["sliding_attention", "full_attention"] * 21,
         "mlp_only_layers": [1, 7]}
    r = val.reduce_config(d, 4)
    assert r["num_hidden_layers"] == 4 and r["layer_types"] == ["sliding_attention", "full_attention"] * 2
    assert r["mlp_only_layers"] == [1] and d["num_hidden_layers"] == 42          # the input is not changed
    assert val.reduce_config(d, 0)["num_hidden_layers"] == 42
    assert val.reduce_config({"num_hidden_layers": 2}, 4)["num_hidden_layers"] == 2


def test_kv_bytes_stats_and_kernel_summary():
    d = json.loads((DATA / "llama-3-8b.json").read_text())
    d = val.reduce_config(d, 4)
    # 4 layers x 8 KV heads + 32 expanded heads, 128 wide, K and V, BF16
    assert val.kv_bytes(d, 16, 4096) == 2 * 2 * 16 * 4096 * 128 * (4 * 8 + 32)
    s = val.stats([3.0, 1.0, 2.0, 4.0, 5.0])
    assert (s["median_s"], s["min_s"], s["reps"]) == (3.0, 1.0, 5)
    r = val.merge_rounds([[3.0, 3.1, 2.9], [6.0, 6.2, 5.9], [3.05, 2.95, 3.0]])     # one disturbed round of three
    assert r["median_s"] == 3.05 and r["rounds"] == 3 and r["reps"] == 9 and r["round_median_s"] == [3.0, 6.0, 3.0]
    k = val.summarize_kernels([("ampere_bf16_gemm", 10.0), ("elementwise_kernel", 1.5), ("ampere_bf16_gemm", 9.0)])
    assert k["total"] == 3 and k["by_name"][0] == {"name": "ampere_bf16_gemm", "count": 2, "us": 19.0}



def test_routing_summary_counts_touched_experts_and_their_spread():
    """Four experts, top-2 of 6 tokens in layer 0 (one expert untouched) and an even layer 1."""
    got = val.routing_summary([[6, 0, 4, 2], [3, 3, 3, 3]], 4)
    a, b = got["layers"]
    assert (a["rows"], a["touched"], a["min"], a["median"], a["max"]) == (12, 3, 2, 4.0, 6)
    assert a["cv"] == pytest.approx(0.4082, abs=1e-4) and b["cv"] == 0.0 and b["touched"] == 4
    assert got["experts"] == 4 and got["counts"][0] == [6, 0, 4, 2]
    assert val.routing_summary([[0, 0]], 2)["layers"][0] == {"rows": 0, "touched": 0, "min": 0, "median": 0.0,
                                                             "max": 0, "cv": 0.0}


def test_balanced_routing_gives_each_token_distinct_experts_and_each_expert_its_share():
    import types

    import numpy as np

    for tokens, k, experts in ((4096, 8, 128), (7, 8, 128), (5, 2, 4), (1, 8, 8)):
        ids = val.balanced_ids(np, tokens, k, experts)
        assert ids.shape == (tokens, k)
        assert all(len(set(row)) == k for row in ids.tolist())            # no expert twice for one token
        counts = np.bincount(ids.ravel(), minlength=experts)
        assert counts.max() - counts.min() <= 1 and counts.sum() == tokens * k
    class Tensor:                               # what topk_ids_at asks of a torch tensor
        def __init__(self, shape, floating):
            self.shape, self.floating = shape, floating

        def is_floating_point(self):
            return self.floating

        def dim(self):
            return len(self.shape)

    fake = types.SimpleNamespace(is_tensor=lambda t: isinstance(t, Tensor))
    logits, weights, ids = Tensor((5, 128), True), Tensor((5, 8), True), Tensor((5, 8), False)
    assert val.topk_ids_at(fake, [logits, weights, ids], 8) == 2        # the integer [tokens, k] one
    assert val.topk_ids_at(fake, [logits, ids], 4) is None
    assert val.topk_ids_at(fake, [3, Tensor((40,), False)], 8) is None
    summary = val.routing_summary([np.bincount(val.balanced_ids(np, 4096, 8, 128).ravel()).tolist()], 128)
    assert summary["layers"][0]["cv"] == 0.0 and summary["layers"][0]["touched"] == 128


def test_compare_lists_the_routing_the_validation_counted():
    doc = {"kernels": [{"model": "qwen3-30b-a3b", "phase": "prefill", "batch": 1, "length": 512,
                        "routing": val.routing_summary([[6, 0, 4, 2], [3, 3, 3, 3]], 4)},
                       {"model": "llama-3.2-1b", "phase": "prefill", "batch": 1, "length": 512}]}
    assert "MoE routing: balanced" in cmp.table([], {"routing": "balanced"}, "p")
    assert "MoE routing" not in cmp.table([], {"routing": "model"}, "p")
    md = cmp.routing_lines(doc)
    assert "| qwen3-30b-a3b | prefill | 1 x 512 | 4 | 3-4 | 2-3 / 3-4 / 3-6 | 0.41 |" in md
    assert "llama" not in md and cmp.routing_lines({"kernels": doc["kernels"][1:]}) == ""

def test_the_tool_refuses_bad_arguments_before_touching_a_gpu():
    for argv in (["--reps", "5"], ["--rounds", "0"], ["--runtimes", "tensorrt"], ["--decode", "1x"],
                 ["--routing", "random"],
                 ["--configs", "nothere"], ["--tp", "0"]):
        with pytest.raises(SystemExit) as e:
            val.main(argv)
        assert e.value.code == 2


def synthetic() -> dict:
    """A validate_hf_llm.py document: two cut models, timed and skipped cases, one kernel list."""
    models = {}
    for name in ("llama-3-8b", "qwen3-8b"):
        d = json.loads((DATA / f"{name}.json").read_text())
        models[name] = {"source": str(DATA / f"{name}.json"), "layers_original": d["num_hidden_layers"],
                        "config": val.reduce_config(d, 4), "wall_s": 12.0}
    cases = []
    for model in models:
        for rt, phase, b, n in val.plan(["hf", "hf-compiled", "eager"], [(1, 512)], [(16, 1024)], [(16, 2048)]):
            key = "prompt" if phase == "prefill" else "context"
            cases.append({"model": model, "runtime": rt, "phase": phase, "batch": b, key: n, "layers": 4,
                          "cache_len": n, "timing": "gpu", **val.stats([1e-3, 1.1e-3, 0.9e-3] * 7)})
    cases.append({"model": "qwen3-8b", "runtime": "hf", "phase": "decode", "batch": 64, "context": 8192,
                  "layers": 4, "skipped": "cache + expanded K/V 90.0 GiB of 70 GiB free"})
    kernels = [{"model": "llama-3-8b", "runtime": "hf", "phase": "decode", "batch": 16, "length": 1024,
                "cache_len": 1024, "traced": "graph replay",
                **val.summarize_kernels([("sm90_xmma_gemm_bf16bf16_bf16f32", 5.0)] * 29
                                        + [("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", 20.0)] * 4
                                        + [("vectorized_elementwise_kernel", 1.0)] * 150)},
               {"model": "qwen3-8b", "runtime": "eager", "phase": "decode", "error": "RuntimeError: boom"}]
    return {"tool": "tools/validate_hf_llm.py", "torch": "2.x", "transformers": "5.17.0", "gpu": "NVIDIA H200",
            "sms": 132, "layers": 4, "reps": 21, "models": models, "cases": cases, "kernels": kernels, "errors": []}


def test_compare_prices_every_case_of_the_cut_config():
    rows = cmp.predict(synthetic(), pricer=FakePricer(), tuned=("llama",))
    assert len(rows) == 13
    timed = [r for r in rows if not r.skipped]
    assert all(r.predicted_s and r.kernels for r in timed)
    llama = {(r.runtime, r.phase): r for r in rows if r.model == "llama-3-8b"}
    assert llama[("hf", "decode")].kernels == 4 * 47 + 19                     # 4 layers: the cut config priced
    assert not llama[("hf", "decode")].held_out and all(r.held_out for r in rows if r.model == "qwen3-8b")
    assert llama[("eager", "prefill")].target is None and llama[("eager", "decode")].target == 0.25
    skipped = next(r for r in rows if r.skipped)
    assert skipped.error is None and skipped.predicted_s is None


def test_compare_table_and_kernel_lines():
    doc = synthetic()
    md = cmp.table(cmp.predict(doc, pricer=FakePricer()), doc, "P")
    assert "### hf" in md and "### hf-compiled" in md and "### eager" in md
    assert "| qwen3-8b * | decode | 64 | 8192 | 8192 | skipped: cache + expanded K/V" in md
    assert "held-out families" in md and "tuned families" in md
    k = cmp.kernel_lines(doc)
    # 4 layers x 7 GEMMs + the rotary table's K = 1 bmm + lm_head = 30
    assert "| llama-3-8b | hf | decode | 16 x 1024 | 207 / 183 | 30 / 29 | 4 / 4 | 173 / 150 |" in k
    assert "error: RuntimeError: boom" in k


def test_compare_main_on_the_real_profile(tmp_path, capsys):
    p = tmp_path / "m.json"
    p.write_text(json.dumps(synthetic()))
    out = tmp_path / "t.md"
    code = cmp.main([str(p), "--profile", str(H200), "--out", str(out)])
    assert code == 1                   # the synthetic 1 ms is nowhere near a real prediction: misses are reported
    text = out.read_text()
    assert "MISS" in text and "qwen3-8b *" in text
    hf = text.split("### hf\n")[1].split("### ")[0]
    rows = [ln for ln in hf.splitlines() if "| ok (" in ln or "| MISS (" in ln]
    missed = [ln for ln in rows if "MISS" in ln]
    assert (f"- against the target: {len(rows)} cases" in hf
            and f"{len(missed)} missed ({sum('*' in ln for ln in missed)} held out)" in hf)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert cmp.main([str(bad), "--profile", str(H200)]) == 2
    assert "not tools/validate_hf_llm.py output" in capsys.readouterr().err


def test_the_committed_h100_run_reads_gzipped_with_a_tuned_familys_kernels_at_every_case():
    doc = cmp.load_measured(str(ROOT / "profiles/h100-sxm/2026-11-27-hf-llm/hf_llm_measured.json.gz"))
    assert doc["gpu"].startswith("NVIDIA H100") and doc["transformers"].startswith("5.")
    llama = {(k["runtime"], k["phase"], k["batch"], k["length"]) for k in doc["kernels"]
             if k["model"] == "llama-3.2-1b"}
    assert ("hf", "decode", 64, 1024) in llama and ("hf", "prefill", 8, 2048) in llama
    qwen = {(k["runtime"], k["phase"]) for k in doc["kernels"] if k["model"] == "qwen3-8b"}
    assert len(qwen) == sum(k["model"] == "qwen3-8b" for k in doc["kernels"])      # held out: first case only


def test_eager_is_priced_with_the_runs_own_host_time_where_it_measured_one(tmp_path):
    """A lent machine's host is not the profile's: a run that measured hwprobe's eager calibration in its own
    process prices its eager passes with that (the mean of before and after); --host profile keeps the profile's."""
    doc = synthetic()
    doc["host_before"] = {"eager_op_s": 40e-6, "per_op_s": {}}
    doc["host_after"] = {"eager_op_s": 60e-6, "per_op_s": {}}
    assert cmp.run_host_s(doc) == pytest.approx(50e-6) and cmp.run_host_s(synthetic()) is None
    assert cmp.run_pricers(H200, 50e-6)["eager"].host_s == 50e-6
    slow = {(r.model, r.runtime, r.phase, r.batch, r.length): r for r in cmp.predict(doc, str(H200))}
    own = {(r.model, r.runtime, r.phase, r.batch, r.length): r for r in cmp.predict(doc, str(H200), host="profile")}
    for key, r in slow.items():
        if r.skipped:
            continue
        if key[1] == "hf" or (key[1], key[2]) == ("hf-compiled", "decode"):
            assert r.predicted_s == own[key].predicted_s, key          # graph-priced: no host in them
        else:
            assert r.predicted_s > own[key].predicted_s, key           # 50 us a kernel against the profile's 18
    assert "host time per op hwprobe measured in the validation's own process, 50.0 us" in cmp.table(
        list(slow.values()), doc, "P")


def test_each_eager_case_is_priced_with_the_host_read_around_its_rounds():
    """Readings before the first case and after every case's round: a round's host is the mean of the two around it,
    a case's the median of its rounds (a host that ran at two speeds, as a lent one did, lands on the speed most of
    the case's rounds saw). With --host case, an eager case carrying its own reading is priced with it (a slower
    host: a longer step), a case without one with the run's before-and-after reading; the graph-priced runtimes do
    not move."""
    h = val.HostRounds(10e-6)
    for case, reading in ((0, 30e-6), (1, 20e-6), (0, 20e-6), (1, 40e-6), (0, 40e-6), (1, 40e-6)):
        h.after(case, reading)
    assert h.of(0) == {"host_kernel_s": pytest.approx(20e-6),
                       "host_kernel_s_rounds": pytest.approx([20e-6, 20e-6, 40e-6])}
    assert h.of(1)["host_kernel_s_rounds"] == pytest.approx([25e-6, 30e-6, 40e-6]) and h.of(2) == {}
    doc = synthetic()
    doc["host_before"] = doc["host_after"] = {"eager_op_s": 12e-6, "per_op_s": {}, "hf_eager_kernel_s": 20e-6}
    slow = next(c for c in doc["cases"] if (c["model"], c["runtime"], c["phase"]) == ("llama-3-8b", "eager",
                                                                                     "decode"))
    slow["host_kernel_s"] = 40e-6
    key = lambda r: (r.model, r.runtime, r.phase, r.batch, r.length)   # noqa: E731
    case = {key(r): r for r in cmp.predict(doc, str(H200), host="case")}
    run = {key(r): r for r in cmp.predict(doc, str(H200), host="run")}
    moved = {k for k in case if not case[k].skipped and case[k].predicted_s != run[k].predicted_s}
    assert moved == {("llama-3-8b", "eager", "decode", 16, 1024)}
    k = ("llama-3-8b", "eager", "decode", 16, 1024)
    assert case[k].predicted_s > 1.5 * run[k].predicted_s          # host-bound: twice the time a kernel
    md = cmp.table(list(case.values()), doc, "P", host="case")
    assert "read around each case's own rounds" in md and "40.0-40.0 us over 1 cases" in md


def test_a_tp_run_is_priced_per_rank():
    """A validation run under torchrun (--tp 2) says so; the comparison prices one rank's step with its collectives
    (a profile with NCCL curves: the 2x H200 composite) and counts one rank's kernels."""
    doc = synthetic()
    doc["tp"] = 2
    composite = ROOT / "profiles/h200x2/2026-11-26-tp2/composite"
    two = {(r.model, r.runtime, r.phase): r for r in cmp.predict(doc, str(composite))}
    doc["tp"] = 1
    one = {(r.model, r.runtime, r.phase): r for r in cmp.predict(doc, str(composite))}
    refused = two.pop(("qwen3-8b", "hf-compiled", "decode"))     # q/k norms: the compiled step is not one graph
    assert refused.refused and refused.predicted_s is None and refused.error is None and not one[
        ("qwen3-8b", "hf-compiled", "decode")].refused
    assert "not modelled (1 cases, no prediction)" in cmp.summary([refused])
    for key, r in two.items():
        if not r.skipped:
            assert r.kernels > one[key].kernels, key          # two all-reduces a layer, the logits' gather
    doc["tp"] = 2
    line = next(x for x in cmp.kernel_lines(doc).splitlines() if x.startswith("| llama-3-8b | hf | decode"))
    one_line = next(x for x in cmp.kernel_lines({**doc, "tp": 1}).splitlines() if x.startswith("| llama-3-8b | hf"))
    assert line != one_line


def test_a_grouped_gemms_prepare_kernel_is_not_counted_as_a_gemm():
    """qwen3-30b-a3b's H200 prefill lists (balanced routing, 2026-11-28): each torch._grouped_mm launches
    prepare_grouped_gemm_data before its CUTLASS kernel. Counted as GEMMs they read as 8 GEMMs the lowering lacked."""
    doc = cmp.load_measured(str(ROOT / "profiles/h200-sxm/2026-11-28-hf-moe-balanced/hf_moe_balanced.json.gz"))
    prep = [r["name"] for k in doc["kernels"] for r in k["by_name"] if "prepare_grouped_gemm_data" in r["name"]]
    assert prep and {cmp.kernel_class(n) for n in prep} == {"other"}
    grouped = [r["name"] for k in doc["kernels"] for r in k["by_name"] if "GroupProblemShape" in r["name"]]
    assert grouped and {cmp.kernel_class(n) for n in grouped} == {"gemm"}
    prefill = [line for line in cmp.kernel_lines(doc).splitlines() if "| hf | prefill |" in line]
    assert prefill and all("| 30 / 30 |" in line for line in prefill)


def test_a_compiled_tp_decode_is_held_longer_and_its_loop_listed():
    """Issuing generate's compiled step under tp took the host up to 1.6 ms on 2x H200: its GPU-only timing queues a
    10M-cycle sleep (the others hf_host's 2M), and the loop time the validation kept is set against the price."""
    from hwprobe.probes.calibration.hf_host import HOLD_CYCLES

    assert val.hold_cycles("hf-compiled", "decode", 2) == val.TP_COMPILED_HOLD > HOLD_CYCLES
    assert {val.hold_cycles(rt, ph, tp) for rt, ph, tp in (("hf-compiled", "decode", 1), ("hf", "decode", 2),
                                                           ("hf-compiled", "prefill", 2))} == {HOLD_CYCLES}
    doc = synthetic()
    doc["tp"], doc["host_clock"] = 2, "tp"
    case = next(c for c in doc["cases"] if c["model"] == "llama-3-8b" and c["runtime"] == "hf-compiled"
                and c["phase"] == "decode")
    case["loop_s_rounds"] = [2e-3, 1.9e-3, 2.2e-3]
    rows = cmp.predict(doc, pricer=FakePricer())
    md = cmp.table(rows, doc, "P", "case")
    row = next(r for r in rows if (r.model, r.runtime, r.phase) == ("llama-3-8b", "hf-compiled", "decode"))
    assert "sharded by the tp plan" in md and "sharded by the tp plan" not in cmp.table(rows, doc, "P", "run")
    assert (f"- llama-3-8b 16 x 2048: generate's loop 2.000 ms a step against the GPU's 1.000; the price "
            f"{row.predicted_s * 1e3:.3f} is {100 * (row.predicted_s / 2e-3 - 1):+.1f}% off the loop") in md
    assert md.count("generate's loop 2.000") == 1                      # the decode case only, once
