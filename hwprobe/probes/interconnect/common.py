"""What the peer and collective probes share: which GPUs they use, NVML's topology of them, records built from
samples the probe timed itself, and the link fields the profile files them by."""

from __future__ import annotations

from typing import Any

from hwprobe import keys as K
from hwprobe.measurement import ClockSummary, Measurement, Stats, Theory

GPU_CHOICES = ("auto", "run", "all")


def pick_gpus(run_devices: list[Any], visible: list[Any], gpus: str = "auto") -> tuple[list[Any], str]:
    """The GPUs to measure and why: "run" = the run's --device list; "all" = every visible GPU; "auto" = the
    run's list when it names several, else every visible GPU (``hwprobe run --suite multigpu`` on a box of 8
    measures the 8)."""
    run_gpus = [d for d in run_devices if getattr(d, "kind", None) == "gpu"]
    if gpus == "run" or (gpus == "auto" and len(run_gpus) > 1):
        return run_gpus, "the run's devices"
    if gpus not in GPU_CHOICES:
        raise ValueError(f"gpus must be one of {GPU_CHOICES}, not {gpus!r}")
    return list(visible), "every visible GPU" + (" (the run named one)" if gpus == "auto" else "")


def visible_gpus() -> list[Any]:
    from hwprobe.device import gpus

    return gpus()


def nvml_topology(devices: list[Any]):
    """hwprobe.probes.interconnect.topology over the GPUs (by PCI bus id), or ({}, {}) without NVML."""
    from hwprobe.device import nvml as hw_nvml
    from hwprobe.probes.interconnect import topology

    try:
        import pynvml
    except ImportError:
        return {}, {}
    handles = {d.index: hw_nvml.handle(d) for d in devices}
    cc = devices[0].cc_major if devices else None
    return topology.topology(pynvml, handles, cc)


def free_bytes_nvml(devices: list[Any]) -> int | None:
    """The least free memory over the GPUs, from NVML (no CUDA context needed), or None."""
    from hwprobe.device import nvml as hw_nvml

    try:
        import pynvml

        return min(int(pynvml.nvmlDeviceGetMemoryInfo(hw_nvml.handle(d)).free) for d in devices)
    except Exception:
        return None


def link_theory(bw: float | None, basis: str) -> Theory | None:
    """A link's theory: the same at any clock (links do not follow the SM clock)."""
    if not bw:
        return None
    return Theory(at_clock=bw, at_max_clock=bw, basis=basis)


def link_params(link_kind: str, endpoints: list[Any], link_type: str | None, ceiling_key: str,
                **more: Any) -> dict[str, Any]:
    """The params the profile files a link figure by (hwprobe.profile_build: links[link].ceilings[key])."""
    return {K.LINK_KIND: link_kind, K.ENDPOINTS: endpoints, K.LINK_TYPE: link_type, K.CEILING_KEY: ceiling_key,
            **more}


def timed_record(probe: str, metric: str, kind: str, samples_s: list[float], *, work: float | None = None,
                 per_sample: float | None = None, unit: str, clocks: ClockSummary | None = None,
                 **meta: Any) -> Measurement:
    """A Measurement from samples timed by the probe itself. Rates: value = ``work`` / median sample. Latencies:
    value = median sample / ``per_sample`` (the steps or round trips in one sample), best from the fastest."""
    st = Stats.of(samples_s)
    if kind == "latency":
        steps = per_sample or 1.0
        value, best = st.median_s / steps, st.best_s / steps
    else:
        value, best = work / st.median_s, work / st.best_s
    m = Measurement(probe=probe, metric=metric, kind=kind, value=value, unit=unit, best=best, work=work,
                    samples_s=list(samples_s), stats=st, clocks=clocks, **meta)
    if st.cv > 0.05:
        m.notes.append(f"samples vary: cv {st.cv:.1%}")
    return m
