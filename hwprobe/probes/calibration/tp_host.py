"""gpu.tp_host: transformers' host time per kernel of an eager decode step under its tensor-parallel plan, over the
same step's on one GPU (where torch, transformers and two GPUs are here; skipped with the reason otherwise).

Under ``tp_plan`` transformers wraps every sharded module in forward hooks that split, gather or all-reduce its
tensors through torch.distributed, and that Python costs the host more per kernel than one GPU's modules: on 2x H200
(2026-11-29) hf_host's tiny Llama sharded by the plan cost 57.6-61.0 us a kernel where unsharded it cost 39.1-39.8,
and llama-3.2-1b's tp-2 eager steps read -41% against a price from the unsharded figure, -10 to -13% from the sharded
one. The eager runtime and hf-compiled's prefill under ``--tp`` are host-bound where small, so
their price needs this.

Each rank (a spawned process per GPU with torchrun's one OpenMP thread, or the MPI ranks of one host) joins a
torch.distributed NCCL group, loads the tiny Llama sharded by the plan (hf_host.tp_model: rank 0's random weights,
``from_pretrained`` with ``DistributedConfig``) and the same weights unsharded, and times both decode steps in turn,
in short rounds (hf_host.step_seconds), so a host that changes speed moves both alike: the sharded step on every rank
at once, as tensor parallel runs, then the unsharded one on each rank in turn while the others sleep on a barrier
(hf_host.in_turn), as a one-GPU run issues alone. The figure the predictor reads is ``vs_one_gpu``: the median over
rounds of the sharded step's host per kernel over the unsharded one's. A ratio, because the kernel calibration (one
GPU) and this run are often two leases whose hosts differ (hwprobe.predict.model.Predictor.for_tp). The sharded
step's logits are checked against the unsharded model's.

The families whose plan gathers the fused projections (hwprobe.models.llm.config.GATHERED_TP: Phi-3) are timed
beside the Llama by default, their tiny decoder's sharded step per kernel over the Llama's in the same rounds
(``vs_llama``): a gathering plan's hooks cost more than a Llama's, which one GPU's family ratio cannot show.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from hwprobe import calibration as C
from hwprobe import keys as K
from hwprobe.errors import Skip
from hwprobe.models.llm.config import GATHERED_TP
from hwprobe.probes.base import probe
from hwprobe.probes.calibration.hf_host import FAMILIES
from hwprobe.vocab import Curve

METRIC = C.metric(Curve.TP_HOST)
TOLERANCE = 0.05            # the sharded step's logits against the unsharded ones: max |diff| over max |logit|
# More, shorter rounds than hf_host's 3 x 30 steps: a round's sharded and unsharded steps lie within ~0.3 s. Each
# round's ratio is kept (vs_one_gpu_rounds): on 2x H200 (2026-11-30) the rounds read 1.5-1.8x or 2.4-2.7x (once
# 0.98x), and the one-GPU step alone 22-24 or 37.8 us a kernel from one second to the next: a host at two speeds
# ~1.6x apart, changing between a round's two halves (inferred). The median over seven is the majority's.
ROUNDS, STEPS, WARM = 7, 12, 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_logits(sharded: np.ndarray, one: np.ndarray) -> str:
    """Raise AssertionError unless the sharded step's logits match the unsharded model's (same weights, same token,
    same zero cache) within TOLERANCE of their scale; the check's words otherwise."""
    if sharded.shape != one.shape:
        raise AssertionError(f"the sharded step's logits are {sharded.shape}, one GPU's {one.shape}")
    a, b = sharded.astype(np.float64), one.astype(np.float64)
    if not np.isfinite(a).all():
        raise AssertionError("the sharded step's logits are not finite")
    scale = float(np.abs(b).max())
    diff = float(np.abs(a - b).max())
    if scale <= 0 or diff > TOLERANCE * scale:
        raise AssertionError(f"the sharded step's logits differ from one GPU's by {diff:.3g} (scale {scale:.3g})")
    return f"logits match one GPU's within {diff / scale:.2%} of their scale"


def pair(torch, transformers, config: dict[str, Any], tp: int, where: Path) -> tuple[tuple, tuple, str]:
    """(sharded step, one GPU's step, the logits check) of the tiny decoder ``config``: the same weights sharded by
    the tp plan and whole, each step a hf_host.decoder (step, restore)."""
    from hwprobe.probes.calibration import hf_host

    cfg = transformers.AutoConfig.for_model(**config)
    sharded_model = hf_host.tp_model(torch, cfg, tp, where)
    with torch.inference_mode(False), torch.device("cuda"):
        one_model = transformers.AutoModelForCausalLM.from_pretrained(where, dtype=torch.bfloat16,
                                                                      attn_implementation="sdpa")
    with torch.inference_mode():
        sharded = hf_host.decoder(torch, transformers, config, model=sharded_model, tp=tp)
        one = hf_host.decoder(torch, transformers, config, model=one_model)
        logits = [step().logits.float().cpu().numpy() for step, _ in (sharded, one)]   # from the filled caches
    return sharded, one, check_logits(*logits)


def figures(got: dict[str, list[float]], kernels: dict[str, int]) -> dict[str, Any]:
    """One decoder's figures from its rounds (``got``) and kernels per step, "sharded" and "one" (GPU) each; each
    round's ratio beside their median (its spread)."""
    from hwprobe.probes.calibration import hf_host

    rounds = [(s / kernels["sharded"]) / (o / kernels["one"]) for s, o in zip(got["sharded"], got["one"], strict=True)]
    return {"kernel_s": hf_host.per_kernel(got["sharded"], kernels["sharded"]),
            "vs_one_gpu": hf_host.vs_llama(got["sharded"], kernels["sharded"], got["one"], kernels["one"]),
            "vs_one_gpu_rounds": [round(r, 4) for r in rounds],
            "kernels_per_step": kernels["sharded"], "step_s": got["sharded"],
            "one_gpu_kernel_s": hf_host.per_kernel(got["one"], kernels["one"]),
            "one_gpu_kernels_per_step": kernels["one"], "one_gpu_step_s": got["one"]}


def family_figures(got: dict[str, list[float]], kernels: dict[str, int], llama_got: dict[str, list[float]],
                   llama_kernels: dict[str, int]) -> dict[str, Any]:
    """A family's figures (``figures``) and ``vs_llama``: its sharded step per kernel over the Llama's, round by
    round (the figure the predictor prices a gathering plan's family with)."""
    from hwprobe.probes.calibration import hf_host

    return {**figures(got, kernels), "vs_llama": hf_host.vs_llama(got["sharded"], kernels["sharded"],
                                                                  llama_got["sharded"], llama_kernels["sharded"])}


def measure_rank(torch, tp: int, where: str, families: tuple[str, ...]) -> dict[str, Any]:
    """On one rank of a torch.distributed group of ``tp``: the tiny Llama, and the same decoder in each of
    ``families``' classes (hf_host.FAMILIES), sharded and whole, every step timed in turn round by round (a host
    that changes speed between rounds moves them alike; the whole model's on one rank at a time), their kernels
    counted, the sharded logits checked. A family that cannot be built, checked or timed is listed under
    ``family_errors`` (the same on every rank: the ranks run the same code on the same weights)."""
    import datetime

    import torch.distributed as dist
    import transformers

    from hwprobe.probes.calibration import hf_host

    turns = dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=3))
    configs = {"llama": hf_host.CONFIG, **{f: hf_host.family_config(f) for f in families}}
    steps, checks, errors = {}, {}, {}
    for name, config in configs.items():
        built = hf_host.attempt(name, errors,
                                lambda c=config, n=name: pair(torch, transformers, c, tp, Path(where) / n))
        if built is not None:
            *steps[name], checks[name] = built
    got = {name: {"sharded": [], "one": []} for name in steps}
    with torch.inference_mode():
        for r in range(ROUNDS):
            warm = WARM if r == 0 else 0
            for name, (sharded, one) in steps.items():
                got[name]["sharded"] += hf_host.step_seconds(torch, *sharded, STEPS, 1, warm)
                got[name]["one"] += hf_host.in_turn(lambda one=one, warm=warm:
                                                    hf_host.step_seconds(torch, *one, STEPS, 1, warm), turns)
        kernels = {name: {side: hf_host.kernels_per_step(torch, *st)
                          for side, st in zip(("sharded", "one"), pairs, strict=True)} for name, pairs in steps.items()}
    llama = got.pop("llama")
    out = {**figures(llama, kernels["llama"]), "check": checks["llama"], "version": transformers.__version__,
           "families": {name: {**family_figures(g, kernels[name], llama, kernels["llama"]), "check": checks[name]}
                        for name, g in got.items()}}
    if errors:
        out["family_errors"] = errors
    return out


@contextmanager
def torchrun_env(rank: int, tp: int, device: int, addr: str, port: int) -> Iterator[None]:
    """The variables torchrun sets, as they were after: transformers' tp set-up reads LOCAL_RANK for the rank's GPU
    (``initialize_tensor_parallelism``), whoever started the process; and one OpenMP thread where none is set
    (torchrun's default for more than one process a node; run_rank sets torch's threads from it)."""
    env = {"RANK": str(rank), "WORLD_SIZE": str(tp), "LOCAL_RANK": str(device), "LOCAL_WORLD_SIZE": str(tp),
           "MASTER_ADDR": addr, "MASTER_PORT": str(port), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_rank(rank: int, tp: int, device: int, addr: str, port: int, where: str,
             families: tuple[str, ...] = ()) -> dict[str, Any]:
    """Join the group as ``rank`` on ``device``, measure, leave."""
    import datetime

    import torch
    import torch.distributed as dist

    threads = torch.get_num_threads()
    with torchrun_env(rank, tp, device, addr, port):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=tp,
                                device_id=torch.device("cuda", device), timeout=datetime.timedelta(minutes=3))
        try:
            return {"rank": rank, "gpu": device, **measure_rank(torch, tp, where, families)}
        finally:
            dist.destroy_process_group()
            torch.set_num_threads(threads)


def worker(rank: int, tp: int, device: int, addr: str, port: int, where: str, families: tuple[str, ...],
           conn) -> None:
    """A spawned rank: its report (ok, and its figures or the error) back through ``conn``."""
    try:
        conn.send({"ok": True, **run_rank(rank, tp, device, addr, port, where, families)})
    except BaseException as e:  # noqa: BLE001 - a rank's failure is reported to the parent, which records it
        conn.send({"ok": False, "rank": rank, "error": f"{type(e).__name__}: {e}"[:400],
                   "traceback": traceback.format_exc()[-2000:]})
    finally:
        conn.close()


def spawn(devices: list[int], where: str, families: tuple[str, ...], timeout_s: float) -> list[dict]:
    """One process per GPU; their reports in rank order (hwprobe.probes.ranks)."""
    from hwprobe.probes import ranks

    port = free_port()
    return ranks.spawn(devices, worker, lambda rank, dev: (rank, len(devices), dev, "127.0.0.1", port, where, families),
                       "hwprobe-tp-host", timeout_s)


def summary(reports: list[dict], tp: int) -> tuple[float, dict[str, Any]]:
    """(the record's value, its params) from every rank's report: rank 0's figures (the ranks step together), each
    rank's beside them."""
    r0 = reports[0]
    keep = ("kernel_s", "vs_one_gpu", "vs_one_gpu_rounds", "kernels_per_step", "step_s", "one_gpu_kernel_s",
            "one_gpu_kernels_per_step", "one_gpu_step_s", "version")
    params = {"tp": tp, **{k: r0[k] for k in keep}, "check": r0["check"], "families": r0.get("families") or {},
              **({"family_errors": r0["family_errors"]} if r0.get("family_errors") else {}),
              "per_rank": [{k: r.get(k) for k in ("rank", "gpu", "kernel_s", "vs_one_gpu", "one_gpu_kernel_s", "host")}
                           for r in reports]}
    return float(r0["kernel_s"]), params


def _notes(params: dict[str, Any]) -> list[str]:
    fams = ", ".join(f"{k} {v['vs_llama']:.2f}x" for k, v in sorted(params["families"].items()))
    lacking = ", ".join(sorted(params.get("family_errors") or {}))
    return [f"transformers {params['version']}: {params['kernel_s'] * 1e6:.1f} us of host per kernel of an eager "
            f"decode step under its tp plan over {params['tp']} GPUs ({params['kernels_per_step']} kernels, a 4-layer "
            f"Llama of hidden 64 over a DynamicCache), {params['vs_one_gpu']:.2f}x the same weights' step on one GPU "
            f"({params['one_gpu_kernel_s'] * 1e6:.1f} us, {params['one_gpu_kernels_per_step']} kernels), timed in "
            f"turn; {params['check']}"
            + (f"; the same decoder in each family's classes under its plan, per kernel over the sharded Llama's: "
               f"{fams}" if fams else "")
            + (f"; not measured: {lacking}" if lacking else "")]


def _prereqs() -> str:
    """Why the probe cannot run here ("" where it can)."""
    try:
        import torch
        import transformers  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure is a reason to skip
        return f"needs PyTorch and transformers ({type(e).__name__}: {e})"[:300]
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        return "this PyTorch has no NCCL backend for torch.distributed"
    if not torch.distributed.is_gloo_available():
        return "this PyTorch has no gloo backend for torch.distributed (the ranks take turns on its barrier)"
    return ""


@probe(name="gpu.tp_host", target="gpu", family="calibration",
       summary="transformers' host time per kernel of an eager decode step under its tensor-parallel plan, over one "
               "GPU's (the tp prediction's host; optional: needs PyTorch, transformers and two GPUs)",
       ranges={"tp": (2, None), "timeout_s": (30, None)}, choices={"families": tuple(FAMILIES)})
def run(ctx, tp: int = 2, families: list[str] | None = None, timeout_s: float = 240.0) -> Iterator[Any]:
    """``tp``: the ranks (the first ``tp`` GPUs of the run's list, else of the visible ones). ``families``: other
    decoder families timed beside the Llama under their own plans (hf_host.FAMILIES; by default those whose plan
    gathers, GATHERED_TP: the predictor prices only those, Predictor.for_tp says why). ``timeout_s``: ranks still
    running after this are stopped."""
    families = sorted(GATHERED_TP) if families is None else list(families)
    from hwprobe import distributed

    world = distributed.detect()
    if world.distributed:
        yield from _run_mpi(ctx, world, tp, families)
        return
    why = _prereqs()
    if why:
        raise Skip(why)
    from hwprobe.probes.interconnect.common import pick_gpus, visible_gpus

    devs, which = pick_gpus(ctx.devices, visible_gpus())
    if len(devs) < tp:
        raise Skip(f"{len(devs)} GPU(s) ({which}): tensor parallel {tp} needs {tp}")
    idx = [d.index for d in devs[:tp]]
    ctx.log(f"tp {tp} on GPUs {idx}: transformers' tiny Llama sharded by its tp plan, against one GPU's")
    with tempfile.TemporaryDirectory(prefix="hwprobe-tp-host-") as where, ctx.sampler.window() as win:
        t0 = time.perf_counter()
        reports = spawn(idx, where, tuple(families), timeout_s)
        took = time.perf_counter() - t0
    bad = [r for r in reports if not r["ok"]]
    if bad:
        raise RuntimeError("; ".join(f"rank {r['rank']}: {r['error']}" for r in bad)
                           + "\n" + "\n".join(r.get("traceback", "") for r in bad))
    value, params = summary(reports, tp)
    yield ctx.derived(METRIC, value, unit="s", kind="info", params={**params, K.WALL_S: round(took, 2)},
                      clocks=win.summary, verified=True, notes=_notes(params))


def _run_mpi(ctx, world, tp: int, families: list[str]):
    """Under an MPI launcher: the ranks of one host are the group (``tp`` of them; the others wait), the address
    from rank 0 over MPI; rank 0 files the record."""
    from hwprobe import distributed

    comm = distributed.comm_world(world, required=True)
    world = distributed.complete(world, comm)
    hosts = comm.allgather(world.host)
    ok, why = distributed.agree(comm, not _prereqs(), _prereqs())
    if not ok:
        raise Skip("; ".join(why))
    if len(set(hosts)) > 1 or world.size < tp:
        raise Skip(f"{world.size} MPI rank(s) on {len(set(hosts))} host(s): tensor parallel {tp} runs on {tp} ranks "
                   "of one host")
    port = comm.bcast(free_port() if world.root else None, root=0)
    where = comm.bcast(tempfile.mkdtemp(prefix="hwprobe-tp-host-") if world.root else None, root=0)
    report: dict[str, Any]
    with ctx.sampler.window() as win:
        t0 = time.perf_counter()
        try:
            report = ({"ok": True, **run_rank(world.rank, tp, ctx.device.index, "127.0.0.1", port, where,
                                              tuple(families))}
                      if world.rank < tp else {"ok": True, "rank": world.rank, "idle": True})
        except Exception as e:  # noqa: BLE001 - every rank's outcome goes to rank 0, which records it
            report = {"ok": False, "rank": world.rank, "error": f"{type(e).__name__}: {e}"[:400]}
        took = time.perf_counter() - t0
    reports = comm.gather({**report, "host": world.host}, root=0)
    if not world.root:
        return
    import shutil

    shutil.rmtree(where, ignore_errors=True)
    bad = [r for r in reports if not r["ok"]]
    if bad:
        raise RuntimeError("; ".join(f"rank {r['rank']}: {r['error']}" for r in bad))
    value, params = summary([r for r in reports if not r.get("idle")], tp)
    yield ctx.derived(METRIC, value, unit="s", kind="info", params={**params, K.WALL_S: round(took, 2),
                                                                    "launcher": world.launcher},
                      clocks=win.summary, verified=True, notes=_notes(params))

