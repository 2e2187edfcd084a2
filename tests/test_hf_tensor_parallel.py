"""transformers' tensor parallel (tp_plan, 5.17) in the hf lowering: one rank's kernels. Read from the source (see
hwprobe/lowering/llm/hf.py's TP_FAMILIES), and checked on 2x H200 (profiles/h200x2/2026-11-28-tp2-hf)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from hwprobe.errors import InputError
from hwprobe.lowering.llm.graph import Case
from hwprobe.lowering.llm.hf import Step, lower_hf
from hwprobe.models.llm.config import load

DATA = Path(__file__).parent / "data" / "llm_configs"


def step(name: str, case: Case, mode: str = "captured"):
    cfg = load(str(DATA / f"{name}.json"))
    return cfg, lower_hf(cfg, Step(mode, case, case.context))


def layer(ops, i: int = 1) -> dict:
    p = f"layers.{i}."
    return {o.name[len(p):]: o for o in ops if o.name.startswith(p)}


def test_a_llama_rank_runs_half_the_heads_and_ffn_and_reduces_twice_a_layer():
    cfg, one = step("llama-3-8b", Case.decode(16, 1024))
    _, two = step("llama-3-8b", Case.decode(16, 1024, tp=2))
    a, b = layer(one), layer(two)
    for name in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"):            # colwise: N halved
        assert (b[name].m, b[name].n, b[name].k) == (a[name].m, a[name].n // 2, a[name].k), name
    for name in ("o_proj", "down_proj"):                                            # rowwise: K halved, then a sum
        assert (b[name].n, b[name].k) == (a[name].n, a[name].k // 2), name
    assert b["attention"].batch == a["attention"].batch // 2
    assert b["k_cache_index_copy"].bytes < a["k_cache_index_copy"].bytes
    reduces = [o for o in b.values() if o.kind == "allreduce"]
    assert [o.name.split(".")[-1] for o in reduces] == ["o_proj_allreduce", "down_allreduce"]
    assert all(o.bytes == 16 * cfg.hidden * 2 and o.ranks == 2 for o in reduces)
    assert set(b) - set(a) == {"o_proj_allreduce", "down_allreduce"}
    assert not any(o.kind in ("allreduce", "allgather") for o in one)
    head = {o.name: o for o in two if not o.name.startswith("layers.")}
    assert head["lm_head"].n == cfg.vocab // 2 and head["logits_gather"].bytes == 16 * cfg.vocab * 2
    assert "logits_gather_cat" in head                                    # batch 16: the gathered chunks copied back
    assert "embed_allreduce" not in head                                  # llama-3-8b's embeddings are not tied


def test_tied_embeddings_are_vocab_parallel_and_batch_one_logits_need_no_copy():
    _, ops = step("llama-3.2-1b", Case.decode(1, 1024, tp=2))
    names = [o.name for o in ops if not o.name.startswith("layers.")]
    assert names[:1] == ["embed_ids_mask.0"] and "embed_allreduce" in names and "embed_allreduce_clone" in names
    assert "logits_gather" in names and "logits_gather_cat" not in names


def test_phi3_gathers_qkv_and_gate_up_and_splits_the_inputs_of_o_and_down():
    cfg, one = step("phi-3-mini-4k-instruct", Case.decode(16, 1024))
    _, two = step("phi-3-mini-4k-instruct", Case.decode(16, 1024, tp=2))
    a, b = layer(one), layer(two)
    assert b["qkv_proj"].n == a["qkv_proj"].n // 2 and b["gate_up_proj"].n == a["gate_up_proj"].n // 2
    assert b["attention"].batch == a["attention"].batch                  # the gathered heads: attention runs whole
    assert b["act"].bytes == a["act"].bytes
    order = [k for k in b if k not in a]
    assert order == ["qkv_gather", "qkv_gather_cat", "o_proj_split", "o_proj_allreduce", "gate_up_gather",
                     "gate_up_gather_cat", "down_split", "down_allreduce"]
    assert b["o_proj"].k == a["o_proj"].k // 2 and b["down_proj"].k == a["down_proj"].k // 2


def test_a_moe_rank_slices_every_expert_and_reduces_after_them():
    cfg, one = step("qwen3-30b-a3b", Case.prefill(1, 512), "generate")
    _, two = step("qwen3-30b-a3b", Case.prefill(1, 512, tp=2), "generate")
    a, b = layer(one), layer(two)
    assert b["router"].n == a["router"].n == cfg.experts                    # the router is replicated
    assert b["experts_gate_up"].batch == a["experts_gate_up"].batch        # every expert on every rank
    assert b["experts_gate_up"].n == a["experts_gate_up"].n // 2 and b["experts_down"].k == a["experts_down"].k // 2
    assert Counter(o.kind for o in b.values())["allreduce"] == 2           # after o_proj and after the experts
    _, dec = step("qwen3-30b-a3b", Case.decode(16, 1024, tp=2))
    assert "experts_allreduce" in layer(dec)


def test_tensor_parallel_refusals_name_the_reason():
    with pytest.raises(InputError, match="tp plans of llama"):
        step("mixtral-8x7b", Case.decode(1, 1024, tp=2))
    with pytest.raises(InputError, match="--tp 3 does not divide .*num_attention_heads 32"):
        step("llama-3-8b", Case.decode(1, 1024, tp=3))


GENERIC = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-27-predict-generic"
X2 = Path(__file__).resolve().parents[1] / "profiles/h200x2/2026-11-28-tp2-hf/multigpu"


def test_a_one_gpu_calibration_takes_a_node_runs_collectives():
    """The kernel calibration is a one-GPU profile and has no NCCL curves: a tp 2 step's all-reduces are priced at
    zero and flagged missing. With the x2 gate's multigpu run (the same lease as the tp 2 validation) they are
    priced from its all-reduce curve, in range, and the rest of the step is unchanged."""
    from hwprobe.analysis.llm import LLMOptions, analyze
    from hwprobe.lowering.ops import COMM_KINDS

    opts = LLMOptions(phase="prefill", prompt=2048, batch=1, tp=2, runtime="hf")
    alone = analyze("llama-3.2-1b", str(GENERIC), opts).phases["prefill"]
    both = analyze("llama-3.2-1b", str(GENERIC), opts, comm=str(X2)).phases["prefill"]
    comm = [r for r in both.rows if r.kind in COMM_KINDS]
    assert {r.kind for r in comm} == {"allreduce", "allgather"} and all(r.time_s > 5e-6 for r in comm)
    assert all(r.time_s == 0 for r in alone.rows if r.kind in COMM_KINDS)
    other = sum(r.time_s for r in both.rows if r.kind not in COMM_KINDS)
    assert other == pytest.approx(sum(r.time_s for r in alone.rows if r.kind not in COMM_KINDS))
    assert both.time_s - alone.time_s == pytest.approx(sum(r.time_s for r in comm))


def run_cli(capsys, args: list[str]) -> tuple[int, str]:
    from hwprobe.cli import main

    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out + out.err


def test_comm_profile_without_collectives_is_a_one_line_error(capsys):
    code, out = run_cli(capsys, ["analyze", "llama-3.2-1b", "--profile", str(GENERIC), "--tp", "2",
                                 "--comm-profile", str(GENERIC)])
    assert code == 2 and "no measured collective curves" in out and "Traceback" not in out
    code, out = run_cli(capsys, ["analyze", "llama-3.2-1b", "--tp", "2", "--comm-profile", str(X2)])
    assert code == 2 and "give --profile too" in out
    code, out = run_cli(capsys, ["analyze", "llama-3.2-1b", "--profile", str(GENERIC), "--tp", "2", "--runtime", "hf",
                                 "--comm-profile", str(X2), "--json"])
    assert code == 0, out
