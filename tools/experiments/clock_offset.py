"""Why the H200's kernel clock (clock64 over %globaltimer) reads ~10% under NVML's SM clock (issue 9).

Steps, each printed as one line and summed up in a table at the end:
1. the GPU timer against the host clock: %globaltimer (sentinel start stamps) and CUDA events over ~1 s of
   host perf_counter time: a timer that runs fast or slow would move every kernel clock;
2. an idle-ish kernel: the clock sentinel (one 32-thread block per SM spinning on the timer) for 0.3 s, with
   NVML read during it: the clock of an SM that does almost nothing;
3. heavy kernels, 1.2 s each, NVML polled every 10 ms (clock, power, throttle mask): FFMA chains on every SM
   (CUDA cores), wgmma TF32 on random operands (the committed record: NVML 1980, kernel 1811), the same wgmma
   on zero operands (no operand bits toggle), wgmma FP16; each launch's kernel clock from every CTA's stamps;
4. sentinels right after the heavy work (0, 50 ms, 300 ms, 1 s later): how fast the clock a light kernel sees
   comes back; and one sentinel on a second stream *during* a wgmma launch (co-resident on the same SMs);
5. nvidia-smi -q -d CLOCK,PERFORMANCE before and after (clock event reasons and their counters).
"""
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pynvml

sys.path.insert(0, os.path.dirname(__file__))

OUT = os.environ.get("OUT", "/tmp")
RESULTS: dict = {}


class Nvml:
    """NVML every 10 ms: (t, SM MHz, graphics MHz, W, C, clock-event mask)."""

    def __init__(self, period=0.01):
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.rows, self.period, self._stop = [], period, threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        n, h = pynvml, self.h
        while not self._stop.is_set():
            try:
                self.rows.append((time.perf_counter(), n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                                  n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_GRAPHICS),
                                  n.nvmlDeviceGetPowerUsage(h) / 1e3,
                                  n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
                                  n.nvmlDeviceGetCurrentClocksEventReasons(h)))
            except n.NVMLError:
                pass
            time.sleep(self.period)

    def window(self, t0, t1):
        r = [x for x in self.rows if t0 <= x[0] <= t1]
        if not r:
            return {}
        a = np.array([x[1:5] for x in r], dtype=float)
        mask = 0
        for x in r:
            mask |= x[5]
        return {"nvml_sm_mhz": float(np.median(a[:, 0])), "nvml_sm_min": float(a[:, 0].min()),
                "nvml_sm_max": float(a[:, 0].max()), "nvml_gr_mhz": float(np.median(a[:, 1])),
                "power_w": float(np.median(a[:, 2])), "temp_c": float(np.median(a[:, 3])),
                "event_mask": hex(mask), "reasons": reasons(mask), "n": len(r)}

    def stop(self):
        self._stop.set()
        self.t.join()


def reasons(mask):
    """NVML's clock-event reason bits (nvmlClocksEventReason*) set in ``mask``."""
    names = {"gpu_idle": 0x1, "app_clocks": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8, "sync_boost": 0x10,
             "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80, "display_clocks": 0x100}
    return [k for k, bit in names.items() if mask & bit]


def nvml_static():
    n = pynvml
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out = {}
    for name, fn in (("max_sm", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
                     ("app_sm", lambda: n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_SM)),
                     ("default_app_sm", lambda: n.nvmlDeviceGetDefaultApplicationsClock(h, n.NVML_CLOCK_SM)),
                     ("clock_id_current", lambda: n.nvmlDeviceGetClock(h, n.NVML_CLOCK_SM, n.NVML_CLOCK_ID_CURRENT)),
                     ("clock_id_app_target",
                      lambda: n.nvmlDeviceGetClock(h, n.NVML_CLOCK_SM, n.NVML_CLOCK_ID_APP_CLOCK_TARGET)),
                     ("clock_id_boost_max",
                      lambda: n.nvmlDeviceGetClock(h, n.NVML_CLOCK_SM, n.NVML_CLOCK_ID_CUSTOMER_BOOST_MAX)),
                     ("power_limit_w", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3),
                     ("persistence", lambda: n.nvmlDeviceGetPersistenceMode(h))):
        try:
            out[name] = fn()
        except Exception as e:
            out[name] = f"{type(e).__name__}"
    return out


def smi(tag):
    txt = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,PERFORMANCE"], capture_output=True, text=True).stdout
    with open(os.path.join(OUT, f"smi-{tag}.txt"), "w") as f:
        f.write(txt)
    keep = [ln.strip() for ln in txt.splitlines() if any(k in ln for k in (
        "Idle", "Power Cap", "Slowdown", "Thermal", "Brake", "Sync Boost", "Applications Clocks Setting",
        "Display", "SM  ", "Graphics", "Counters", "Power Capping"))]
    print(f"nvidia-smi {tag}: " + " | ".join(keep)[:1500])


def log(step, **kv):
    RESULTS[step] = kv
    print(f"{step}: " + json.dumps(kv, default=float)[:900], flush=True)


def timer_vs_host(cp, sn, sms):
    """%globaltimer and CUDA events against perf_counter over ~1 s."""
    k = sn._KERNEL.get(cp.cuda.Device().id)
    out = cp.zeros(4 * sms, dtype=cp.uint64)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    k((1,), (32,), (out, np.int64(1000)))
    e0.record()
    cp.cuda.get_current_stream().synchronize()
    h0 = time.perf_counter()
    g0 = int(cp.asnumpy(out)[3])
    time.sleep(1.0)
    k((1,), (32,), (out, np.int64(1000)))
    e1.record()
    cp.cuda.get_current_stream().synchronize()
    h1 = time.perf_counter()
    g1 = int(cp.asnumpy(out)[3])
    ev = cp.cuda.get_elapsed_time(e0, e1) * 1e-3
    log("timer_vs_host", host_s=h1 - h0, globaltimer_s=(g1 - g0) * 1e-9, event_s=ev,
        globaltimer_over_host=(g1 - g0) * 1e-9 / (h1 - h0), event_over_host=ev / (h1 - h0))


def sentinel_run(cp, sn, nv, sms, name, spin_us):
    t0 = time.perf_counter()
    r = sn.sentinel_clock(sms, spin_us=spin_us)
    t1 = time.perf_counter()
    log(name, sentinel=r.to_dict() if r else None, **nv.window(t0, t1))
    return r


FFMA_SRC = r'''
extern "C" __global__ void ffma_stamped(float* out, unsigned long long* clk, int iters, float p) {
  long long c0 = clock64(); unsigned long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  float x[16];
  for (int j = 0; j < 16; ++j) x[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int u = 0; u < 32; ++u)
#pragma unroll
      for (int j = 0; j < 16; ++j) x[j] = fmaf(x[j], p, 0.5f);
  float s = 0; for (int j = 0; j < 16; ++j) s += x[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long c1 = clock64(); unsigned long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    clk[blockIdx.x * 2] = c1 - c0; clk[blockIdx.x * 2 + 1] = g1 - g0;
  }
}
'''


def heavy(cp, nv, name, launch, clocks_of, seconds=1.2):
    """Run ``launch()`` back to back for ``seconds``; per-launch kernel clocks from ``clocks_of()``."""
    stream = cp.cuda.get_current_stream()
    mhz = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        launch()
        stream.synchronize()
        mhz.append(clocks_of())
    t1 = time.perf_counter()
    w = nv.window(t0 + 0.3, t1)
    m = np.array(mhz[len(mhz) // 4:])
    log(name, launches=len(mhz), kernel_mhz_median=float(np.median(m)), kernel_mhz_min=float(m.min()),
        kernel_mhz_max=float(m.max()), nvml_over_kernel=w.get("nvml_sm_mhz", 0) / float(np.median(m)), **w)
    return t1


def main():
    import cupy as cp

    from hwprobe import device
    from hwprobe.probes.compute import mma as g
    from hwprobe.probes.compute import mma_clock as mc
    from hwprobe.timing import sentinel as sn

    dev = device.select("0")
    sms = dev.sms
    log("device", gpu=dev.name, sms=sms, max_mhz=dev.sm_clock_max_mhz, **nvml_static())
    smi("before")
    nv = Nvml()
    sn.sentinel_clock(sms, 50)                       # compile and load
    timer_vs_host(cp, sn, sms)
    sentinel_run(cp, sn, nv, sms, "sentinel_idle_0.3s", 300_000)
    # FFMA on every SM, 4 blocks x 256 threads per SM
    mod = cp.RawModule(code=FFMA_SRC, options=("-std=c++17",))
    fk = mod.get_function("ffma_stamped")
    grid = sms * 4
    fout, fclk = cp.zeros(grid * 256, dtype=cp.float32), cp.zeros(grid * 2, dtype=cp.uint64)

    def ffma_clock():
        c = cp.asnumpy(fclk).reshape(-1, 2).astype(float)
        return float(c[:, 0].sum() / c[:, 1].sum() * 1e3)

    heavy(cp, nv, "ffma_all_sms", lambda: fk((grid,), (256,), (fout, fclk, np.int32(2000), np.float32(0.999))),
          ffma_clock)
    time.sleep(0.5)
    for metric, zeros in (("tf32.tensor_core.wgmma.f32acc", False), ("tf32.tensor_core.wgmma.f32acc", True),
                          ("fp16.tensor_core.wgmma.f32acc", False)):
        v = next(x for x in g.VARIANTS if x.metric == metric)
        mod_w, _ = g._module(v)
        lau = g._Launcher(cp, v, mod_w, sms)
        cfg = ("ss_sw128", 1)
        if zeros:
            a_dev, b_dev = lau.operands(cfg)
            a_dev.fill(0)
            b_dev.fill(0)
        launch = lau.make(cfg)
        iters = 16000 if v.precision == "tf32" else 8000

        def wg_clock(launch=launch):
            st = launch.stamps(1)
            lc = mc.launch_clocks(st, [1.0])
            return lc.kernel_mhz[0] if lc else float("nan")

        name = f"wgmma_{v.precision}{'_zeros' if zeros else ''}"
        t_end = heavy(cp, nv, name, lambda launch=launch, iters=iters: launch(iters), wg_clock)
        if not zeros and v.precision == "tf32":       # how fast a light kernel's clock comes back
            for delay in (0.0, 0.05, 0.3, 1.0):
                time.sleep(max(0.0, t_end + delay - time.perf_counter()))
                sentinel_run(cp, sn, nv, sms, f"sentinel_after_tf32_{delay:g}s", 200)
            # a sentinel on a second stream while a long wgmma runs on the first (co-resident: 1 CTA/SM)
            s2 = cp.cuda.Stream(non_blocking=True)
            out = cp.zeros(4 * sms, dtype=cp.uint64)
            launch(iters * 4)
            with s2:
                sn._KERNEL[cp.cuda.Device().id]((sms,), (32,), (out, np.int64(5_000_000)))
            cp.cuda.Device().synchronize()
            r = sn.reading(cp.asnumpy(out), 5e-3)
            log("sentinel_during_tf32_wgmma", sentinel=r.to_dict() if r else None, wgmma_kernel_mhz=wg_clock())
        time.sleep(0.5)
    for metric in ("fp16.tensor_core.mma_sync.f32acc", "fp64.tensor_core.mma_sync.f64acc.m16n8k16"):
        v = next(x for x in g.VARIANTS if x.metric == metric)      # HMMA vs DMMA, one CTA of 256 threads per SM
        mod_m, _ = g._module(v)
        launch = g._Launcher(cp, v, mod_m, sms).make((256, 1))

        def mma_clock(launch=launch):
            lc = mc.launch_clocks(launch.stamps(1), [1.0])
            return lc.kernel_mhz[0] if lc else float("nan")

        heavy(cp, nv, f"mma_sync_{v.precision}", lambda launch=launch: launch(g.odd(20000)), mma_clock)
        time.sleep(0.5)
    sentinel_run(cp, sn, nv, sms, "sentinel_idle_end_0.3s", 300_000)
    nv.stop()
    smi("after")
    with open(os.path.join(OUT, "clock_offset.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, default=float)
    print("\n| step | kernel/sentinel MHz | NVML SM MHz (min-max) | W | reasons |")
    for k, r in RESULTS.items():
        kern = r.get("kernel_mhz_median") or (r.get("sentinel") or {}).get("mhz")
        if kern is None:
            continue
        print(f"| {k} | {kern:.0f} | {r.get('nvml_sm_mhz', 0):.0f} ({r.get('nvml_sm_min', 0):.0f}-"
              f"{r.get('nvml_sm_max', 0):.0f}) | {r.get('power_w', 0):.0f} | {','.join(r.get('reasons', []))} |")


if __name__ == "__main__":
    main()
