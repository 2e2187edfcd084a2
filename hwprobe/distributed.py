"""Runs across processes and nodes: who am I in the MPI world, which GPU is mine, and one merged result.

hwprobe starts under any launcher that starts MPI ranks (``mpirun``/``mpiexec`` of Open MPI, MPICH or Intel MPI,
and Slurm's ``srun``). Each rank measures with its own GPU (local rank modulo the GPUs it sees); collectives run
through NCCL, whose unique id rank 0 makes and broadcasts over MPI (mpi4py); at the end every rank's records go
to rank 0, which merges them into one results directory and one profile, each figure tagged with the rank, host
and GPU it came from. Ranks other than 0 write nothing.

The world is read from the launcher's environment (no MPI import for a plain run); mpi4py is imported only when
there is more than one rank, or when asked for. ``comm`` objects are duck-typed (``bcast``, ``allgather``,
``gather``, ``Get_rank``, ``Get_size``), so the CPU tests run the logic with fakes.

The end: the ``hwprobe`` command leaves with os._exit (no signal may land in the interpreter's shutdown), which
skips mpi4py's own MPI_Finalize at exit; a launcher then reports the rank as ended "improperly" and fails the job.
So the command calls ``shutdown`` first, on every rank and every path: MPI_Finalize once every rank has passed
the run's last collective step (``finish_run``; a failed probe or Ctrl-C still get there), MPI_Abort with the
exit code when this rank leaves before it (the others may wait in that step forever).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hwprobe import keys as K
from hwprobe.errors import InputError
from hwprobe.world import World, detect


def local_ranks(hosts: list[str]) -> list[tuple[int, int]]:
    """(local rank, local size) of each rank from every rank's host name (ranks in order)."""
    out, seen = [], {}
    totals = {h: hosts.count(h) for h in hosts}
    for h in hosts:
        out.append((seen.get(h, 0), totals[h]))
        seen[h] = seen.get(h, 0) + 1
    return out


def complete(world: World, comm) -> World:
    """Fill what the launcher did not say (local rank/size) from every rank's host name."""
    hosts = comm.allgather(world.host)
    lr, ls = local_ranks(hosts)[world.rank]
    return World(world.rank, world.size, lr, ls, world.host, world.launcher)


def gpu_for(world: World, n_visible: int) -> int:
    """The CUDA ordinal this rank uses: its local rank modulo the GPUs it sees (a launcher that gives each
    rank one GPU through CUDA_VISIBLE_DEVICES leaves one visible: ordinal 0)."""
    if n_visible < 1:
        raise InputError(f"rank {world.rank} on {world.host}: no CUDA GPU visible")
    return max(world.local_rank, 0) % n_visible


def comm_world(world: World | None = None, required: bool = False):
    """mpi4py's COMM_WORLD for a world of several ranks (or when ``required``); None for a plain run."""
    world = world or detect()
    if not world.distributed and not required:
        return None
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise InputError(f"rank {world.rank} of {world.size} ({world.launcher}): mpi4py is needed to run under an "
                         f"MPI launcher ({e}); pip install mpi4py") from None
    comm = MPI.COMM_WORLD
    if world.distributed and comm.Get_size() != world.size:
        raise InputError(f"the launcher says {world.size} ranks but MPI's COMM_WORLD has {comm.Get_size()}: "
                         "mpi4py is built against another MPI than the launcher's")
    return comm


# --- collective helpers over any comm --------------------------------------------------------------------------

def bcast_unique_id(comm, make_id: Callable[[], Any], root: int = 0):
    """NCCL's unique id: made on ``root`` (ncclGetUniqueId), sent to every rank over MPI."""
    uid = make_id() if comm.Get_rank() == root else None
    return comm.bcast(uid, root=root)


def agree(comm, ok: bool, reason: str = "") -> tuple[bool, list[str]]:
    """Every rank says whether it can go on; all go on only if all can (else each rank skips with the others'
    reasons), so no rank waits forever in a collective the others never enter."""
    said = comm.allgather((bool(ok), reason))
    return all(o for o, _ in said), [f"rank {r}: {why}" for r, (o, why) in enumerate(said) if not o]


def agree_min(comm, value: int) -> int:
    """The smallest of every rank's ``value`` (e.g. free memory: every rank then plans the same sizes)."""
    return min(comm.allgather(int(value)))


# --- one merged result ---------------------------------------------------------------------------------------------

@dataclass
class RankOutput:
    """What one rank sends to rank 0: who it is, its device, its records (Measurement dicts)."""

    rank: int
    host: str
    gpu: dict[str, Any]                   # {"index", "name", "uuid", "pci_bus_id"} of the rank's device
    records: list[dict[str, Any]]
    device: dict[str, Any] | None = None  # the full device dict for the profile's device list


def rank_output(world: World, device, records) -> RankOutput:
    dev = device if isinstance(device, dict) else device.to_dict()
    gpu = {k: dev.get(k) for k in ("index", "name", "uuid", "pci_bus_id")}
    recs = [r if isinstance(r, dict) else r.to_dict() for r in records]
    return RankOutput(world.rank, world.host, gpu, recs, dev)


def gather_outputs(comm, out: RankOutput) -> list[RankOutput] | None:
    """Every rank's output on rank 0 (in rank order); None on the other ranks."""
    got = comm.gather(out, root=0)
    return sorted(got, key=lambda o: o.rank) if got is not None else None


def merge(outputs: list[RankOutput]):
    """One list of Measurements from every rank's records, each tagged with ``rank``, ``host`` and ``gpu``.

    - A record made once for the whole world (``params["scope"] == "world"``: a collective's figure, computed on
      rank 0 from every rank's timings) is kept once, as made.
    - A per-rank record keeps its metric on the first rank that has it; the same metric from another rank is
      renamed ``rank<r>.<metric>`` (metrics stay unique within a run, and no rank's figure hides another's).
    - A skip that only says another rank measured this (``params["delegated_to"]``) is dropped when that rank
      is in the world: its figures stand for it.
    """
    from hwprobe.measurement import Measurement

    ranks = {o.rank for o in outputs}
    seen: set[str] = set()
    merged = []
    for o in sorted(outputs, key=lambda o: o.rank):
        for d in o.records:
            m = Measurement.from_dict(d)
            p = m.params
            if p.get(K.DELEGATED_TO) is not None and p[K.DELEGATED_TO] in ranks and m.status == "skipped":
                continue
            if p.get(K.SCOPE) == "world":
                if m.metric in seen:
                    continue
            else:
                p.setdefault(K.RANK, o.rank)
                p.setdefault(K.HOST, o.host)
                p.setdefault(K.GPU, o.gpu)
                if m.metric in seen:
                    m.metric = f"rank{o.rank}.{m.metric}"
            seen.add(m.metric)
            merged.append(m)
    return merged


def finish_world(world: World, comm, device, measurements) -> tuple[list, list[dict[str, Any]]] | None:
    """The end of a run under MPI: every rank's records to rank 0. Rank 0 gets (the merged measurements, every
    rank's device); the other ranks get None (they write nothing)."""
    outs = gather_outputs(comm, rank_output(world, device, measurements))
    if outs is None:
        return None
    return merge(outs), merged_devices(outs)


# --- the hooks hwprobe.api.run uses under an MPI launcher -----------------------------------------------------------

def rank_device(device: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """``--device`` for this rank: as given, or under MPI with none given, the rank's own GPU (local rank modulo
    the GPUs it sees; the CPU where it sees none)."""
    world = detect(env)
    if device is not None or not world.distributed:
        return device
    from hwprobe.device import gpus

    found = gpus()
    if not found:
        return "cpu"
    if world.local_rank < 0:
        world = complete(world, comm_world(world))
    return str(found[gpu_for(world, len(found))].index)


RANK_TMP = "hwprobe-rank{rank}-"     # the prefix of rank_out's temporary directory for a rank other than 0


def rank_out(out, env: Mapping[str, str] | None = None):
    """Where this rank writes: ``out`` on rank 0 (or a plain run), a temporary directory elsewhere (removed by
    ``finish_run``: ranks other than 0 leave nothing behind)."""
    world = detect(env)
    if world.root:
        return out
    import tempfile

    return tempfile.mkdtemp(prefix=RANK_TMP.format(rank=world.rank))


_FINISHED = False      # this rank has passed the run's last collective step (finish_run's gather)


def shutdown(code: int, modules: Mapping[str, Any] | None = None) -> str:
    """End MPI before the process ends, if this process started it: MPI_Finalize when the run's last collective
    step is behind every rank (or the code is 0), else MPI_Abort(code) so no other rank waits forever. Returns
    what it did: "none" (no MPI here, or already finalized), "finalize" or "abort". ``modules``: sys.modules
    (injectable for tests); MPI is never imported here."""
    mpi = (sys.modules if modules is None else modules).get("mpi4py.MPI")
    if mpi is None:
        return "none"
    try:
        if not mpi.Is_initialized() or mpi.Is_finalized():
            return "none"
        if code != 0 and not _FINISHED and mpi.COMM_WORLD.Get_size() > 1:
            mpi.COMM_WORLD.Abort(code if 0 < code < 256 else 1)
            return "abort"
        mpi.Finalize()
        return "finalize"
    except Exception as e:      # the process is ending: say why MPI could not be ended cleanly, never raise
        sys.stderr.write(f"hwprobe: MPI could not be finalized: {type(e).__name__}: {e}\n")
        return "none"


def finish_run(run_dir, profile, measurements, device, comm=None, world: World | None = None):
    """After every rank has measured: rank 0 rewrites its results directory with every rank's records (tagged with
    rank, host and GPU) and one merged profile, and returns it; the other ranks send theirs, remove their
    temporary directory and return their own profile. A plain run returns ``profile`` untouched."""
    world = world or detect()
    if not world.distributed:
        return profile
    comm = comm or comm_world(world)
    if world.local_size is None or world.local_rank < 0:
        world = complete(world, comm)
    global _FINISHED
    got = finish_world(world, comm, device, measurements)
    _FINISHED = True
    if got is None:
        import shutil
        from pathlib import Path

        run_dir = Path(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        if run_dir.parent.name.startswith(RANK_TMP.format(rank=world.rank)):
            try:                          # rank_out's directory, which held the run's directory
                run_dir.parent.rmdir()
            except OSError:               # not empty: something else was written there
                pass
        return profile
    return write_merged(run_dir, *got, world)


def write_merged(run_dir, merged, devices: list[dict[str, Any]], world: World):
    """measurements.jsonl, measurements.csv, environment.json (with the world) and profile.json of the merge."""
    import json
    from pathlib import Path

    from hwprobe import results as R
    from hwprobe.profile_build import build_profile

    run_dir = Path(run_dir)
    try:
        env = json.loads((run_dir / R.ENVIRONMENT).read_text())
    except (OSError, ValueError):
        env = {}
    env["world"] = {"size": world.size, "launcher": world.launcher,
                    "hosts": sorted({d.get("host", "") for d in devices}),
                    "ranks": [{"rank": d.get("rank"), "host": d.get("host"), "gpu": d.get("index"),
                               "name": d.get("name"), "uuid": d.get("uuid")} for d in devices]}
    lines = [json.dumps({"format": R.RECORDS_FORMAT, "version": R.RECORDS_VERSION})]
    lines += [json.dumps(m.to_dict(), default=str) for m in merged]
    R.atomic_write(run_dir / R.MEASUREMENTS, "\n".join(lines) + "\n")
    R.atomic_write(run_dir / R.ENVIRONMENT, json.dumps(env, indent=2, default=str) + "\n")
    prof = build_profile(devices[0], merged, env, not env.get("finished", True), devices=devices)
    prof.save(run_dir / R.PROFILE)
    R.write_table(run_dir, merged)
    return prof


def merged_devices(outputs: list[RankOutput]) -> list[dict[str, Any]]:
    """Each rank's device for the profile's device list, with its rank and host."""
    return [{**(o.device or o.gpu), "rank": o.rank, "host": o.host} for o in sorted(outputs, key=lambda o: o.rank)]
