"""Other processes on the GPU (NVML's running processes) skew the figures: the reader that names them, on a
fake pynvml, and what validate does with a run or reference recorded as contended."""

from __future__ import annotations

import os
import sys
import types

import pytest

from hwprobe.device import GpuInfo, nvml

NOT_AVAILABLE = 2**64 - 1          # NVML_VALUE_NOT_AVAILABLE for usedGpuMemory


def fake_pynvml(compute, graphics=(), names=None, util=(87, 41), fail_util=False):
    def proc(pid, mem):
        return types.SimpleNamespace(pid=pid, usedGpuMemory=mem)

    names = names or {}

    def name(pid):
        if pid not in names:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return names[pid].encode()

    def utilization(h):
        if fail_util:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return types.SimpleNamespace(gpu=util[0], memory=util[1])

    return types.SimpleNamespace(
        nvmlDeviceGetComputeRunningProcesses=lambda h: [proc(p, m) for p, m in compute],
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [proc(p, m) for p, m in graphics],
        nvmlSystemGetProcessName=name, nvmlDeviceGetUtilizationRates=utilization)


def gpu() -> GpuInfo:
    return GpuInfo(index=0, name="NVIDIA H200", cc_major=9, cc_minor=0, sms=132, l2_bytes=60 << 20,
                   mem_bytes=141 << 30, mem_clock_mhz=3201, bus_width_bits=6016, sm_clock_max_mhz=1980)


def test_other_processes_are_named_with_their_memory(monkeypatch):
    me = os.getpid()
    fake = fake_pynvml(compute=[(me, 512 << 20), (4242, 20 << 30), (5151, NOT_AVAILABLE)],
                       graphics=[(4242, 20 << 30), (6000, 1 << 20)], names={4242: "python3", 6000: "Xorg"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    r = nvml.running_processes(gpu(), handle_="h")
    assert r["available"] and r["contended"]
    by_pid = {p["pid"]: p for p in r["processes"]}
    assert set(by_pid) == {4242, 5151, 6000}                       # this process left out, 4242 listed once
    assert by_pid[4242] == {"pid": 4242, "name": "python3", "used_memory_bytes": 20 << 30, "kind": "compute"}
    assert by_pid[5151]["used_memory_bytes"] is None                 # NVML could not say
    assert by_pid[6000]["kind"] == "graphics" and by_pid[6000]["name"] == "Xorg"
    assert (r["utilization_gpu_pct"], r["utilization_mem_pct"]) == (87, 41)
    assert "3 other process(es) use this GPU: python3 (pid 4242, 20480 MiB)" in r["warning"]
    assert "GPU utilization 87%" in r["warning"] and "skewed" in r["warning"]


def test_process_name_falls_back_to_proc_comm(monkeypatch):
    me = os.getpid()
    parent = os.getppid()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(compute=[(parent, 1 << 20)], fail_util=True))
    r = nvml.running_processes(gpu(), handle_="h")
    with open(f"/proc/{parent}/comm") as f:
        assert r["processes"][0]["name"] == f.read().strip()
    assert r["utilization_gpu_pct"] is None and "utilization" not in r["warning"]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(compute=[(me, 1 << 20)]))
    quiet = nvml.running_processes(gpu(), handle_="h")
    assert quiet["processes"] == [] and not quiet["contended"] and quiet["warning"] is None


def test_no_nvml_is_not_an_error(monkeypatch):
    monkeypatch.setattr(nvml, "handle", lambda info: None)
    r = nvml.running_processes(gpu())
    assert r == {"available": False, "processes": [], "utilization_gpu_pct": None, "utilization_mem_pct": None,
                 "contended": False, "warning": None}


def test_recorded_processes_mark_a_run_contended_and_become_a_cause():
    from hwprobe.fleet import causes
    from hwprobe.fleet.records import RunRecord

    procs = {"contended": True, "processes": [{"pid": 4242, "name": "python3", "used_memory_bytes": 1}]}
    busy = RunRecord("busy", "busy", {"name": "NVIDIA H200"}, {"processes": procs}, {})
    calm = RunRecord("calm", "calm", {"name": "NVIDIA H200"}, {}, {})
    assert busy.contended and not calm.contended
    assert "other processes used the GPU during this run: python3 (4242)" in causes.explain(busy, calm)
    from hwprobe.errors import InputError
    from hwprobe.fleet import validate

    with pytest.raises(InputError, match="contended"):
        validate.validate(calm, busy)


def test_a_contended_cpu_run_is_not_said_to_have_shared_a_gpu():
    """Issue 35 item 6: validating against a CPU run whose figures looked contended said it "was recorded while
    other work used the GPU". It names the CPU, and what marked it: figures, not a recorded process."""
    from hwprobe.errors import InputError
    from hwprobe.fleet import causes, validate
    from hwprobe.fleet.records import CeilingRec, RunRecord

    def cpu_run(label, value, contended):
        env = {"contended": ["fp64.cpu.fma"]} if contended else {}
        return RunRecord(label, label, {"kind": "cpu", "model": "AMD EPYC"}, env,
                         {"fp64.cpu.instruction": CeilingRec("fp64.cpu.instruction", value, "FLOP/s", "fp64.cpu.fma")})

    busy, calm = cpu_run("busy", 80e9, True), cpu_run("calm", 130e9, False)
    with pytest.raises(InputError) as e:
        validate.validate(calm, busy)
    msg = str(e.value)
    assert "GPU" not in msg and "recorded while" not in msg
    assert "1 figure(s) look contended, far below theory or with split samples (fp64.cpu.fma): other work " \
           "probably used the CPU" in msg
    v = validate.validate(busy, calm)
    assert not any("GPU" in n for n in v.notes) and any("used the CPU" in n for n in v.notes)
    assert not any("GPU" in c for c in causes.explain(busy, calm, "fp64.cpu.instruction"))
