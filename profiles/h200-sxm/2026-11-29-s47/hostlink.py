"""s47: the host link's second-run lows. H2D/D2H at 256 MiB and 1 GiB from cudaHostAlloc buffers and from 2-MiB
aligned anonymous memory advised MADV_HUGEPAGE then cudaHostRegister'd, alternating; the host's memory state beside
them (THP, buddyinfo, meminfo, NUMA, IOMMU). Usage: hostlink.py LABEL OUT.json"""
import ctypes, json, os, sys, time, glob
import numpy as np
import cupy as cp
import cupyx

label, out = sys.argv[1], sys.argv[2]
rt = cp.cuda.runtime

def read(p):
    try:
        return open(p).read().strip()
    except Exception as e:
        return f"{type(e).__name__}"

state = {"label": label, "time": time.time(),
         "thp_enabled": read("/sys/kernel/mm/transparent_hugepage/enabled"),
         "thp_defrag": read("/sys/kernel/mm/transparent_hugepage/defrag"),
         "buddyinfo": read("/proc/buddyinfo"),
         "meminfo": {l.split(":")[0]: l.split(":")[1].strip() for l in read("/proc/meminfo").splitlines()
                     if l.split(":")[0] in ("MemTotal", "MemFree", "MemAvailable", "Cached", "AnonHugePages",
                                            "HugePages_Total", "HugePages_Free", "Hugepagesize", "Mlocked")},
         "nodes": sorted(os.path.basename(p) for p in glob.glob("/sys/devices/system/node/node*")),
         "iommu": sorted(os.listdir("/sys/class/iommu")) if os.path.isdir("/sys/class/iommu") else None,
         "iommu_groups": len(glob.glob("/sys/kernel/iommu_groups/*")),
         "cmdline": read("/proc/cmdline"), "affinity": sorted(os.sched_getaffinity(0)),
         "cpu": os.sched_getcpu() if hasattr(os, "sched_getcpu") else None}
bus = rt.deviceGetPCIBusId(0).lower()
for cand in (bus, bus[4:] if bus.count(":") == 2 else bus):
    p = f"/sys/bus/pci/devices/{cand}"
    if os.path.isdir(p):
        state["gpu_pci"] = {k: read(f"{p}/{k}") for k in ("numa_node", "local_cpulist", "current_link_speed",
                                                          "current_link_width", "max_link_speed")}
        break
N = 1 << 30
dev = cp.zeros(N // 4, dtype=cp.uint32)

def pinned():
    return cupyx.empty_pinned(N // 4, np.uint32)

class Registered:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def __init__(self):
        self.len = N + (2 << 20)
        self.base = self.libc.mmap(None, self.len, 3, 0x22, -1, 0)    # RW, MAP_PRIVATE | MAP_ANONYMOUS
        if self.base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        self.ptr = (self.base + (2 << 20) - 1) & ~((2 << 20) - 1)
        self.madv = self.libc.madvise(self.ptr, N, 14)                  # MADV_HUGEPAGE
        ctypes.memset(self.ptr, 0x5A, N)
        rt.hostRegister(self.ptr, N, 0)
        self.huge_kb = self._huge()

    def _huge(self):
        lo, hi, tot, cur = self.ptr, self.ptr + N, 0, None
        for line in open("/proc/self/smaps"):
            f = line.split()
            if "-" in f[0] and len(f) >= 5:
                a, b = (int(x, 16) for x in f[0].split("-"))
                cur = (a, b) if a < hi and b > lo else None
            elif cur and f[0] == "AnonHugePages:":
                tot += int(f[1])
        return tot

    def close(self):
        rt.hostUnregister(self.ptr)
        self.libc.munmap(self.base, self.len)

def rate(ptr, size, kind, reps=10):
    s = cp.cuda.Stream(non_blocking=True)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(reps + 2):
        a.record(s)
        if kind == "h2d":
            rt.memcpyAsync(dev.data.ptr, ptr, size, rt.memcpyHostToDevice, s.ptr)
        else:
            rt.memcpyAsync(ptr, dev.data.ptr, size, rt.memcpyDeviceToHost, s.ptr)
        b.record(s)
        b.synchronize()
        out.append(size / (cp.cuda.get_elapsed_time(a, b) * 1e-3) / 1e9)
    return out[2:]

rows = []
for rnd in range(3):
    for src in ("hostalloc", "registered"):
        if src == "hostalloc":
            h = pinned(); h.fill(0x5A5A5A5A); ptr = h.ctypes.data; extra = {}
        else:
            r = Registered(); ptr = r.ptr; extra = {"madvise_rc": r.madv, "anon_huge_kb": r.huge_kb}
        for kind in ("h2d", "d2h"):
            for size in (256 << 20, N):
                v = rate(ptr, size, kind)
                rows.append({"round": rnd, "src": src, "kind": kind, "mib": size >> 20, "median_gbps":
                             round(float(np.median(v)), 2), "min": round(min(v), 2), "max": round(max(v), 2), **extra})
                print(label, rows[-1], flush=True)
        if src == "registered":
            r.close()
        h = None
json.dump({"state": state, "rows": rows}, open(out, "w"), indent=1)
print(label, json.dumps({k: state[k] for k in ("thp_enabled", "thp_defrag", "nodes", "iommu", "iommu_groups",
                                                "gpu_pci", "meminfo")}, default=str))
print(label, "buddyinfo", state["buddyinfo"])
