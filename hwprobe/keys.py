"""The params keys that cross module boundaries: written by a probe, the runner or the judge, read by the judge,
the profile, the report, the export or the fleet. Each is named here once with its type, unit and meaning (as
pyperf's metadata table does); params stay a plain dict and a key is its own string, so the JSON is unchanged.

    m.params[keys.KERNEL_SM_MHZ] = 1980.0         # written and read through the constant, never a bare string
"""

from __future__ import annotations


class Key(str):
    """A params key: the string itself (``params[KEY]`` and JSON as before) with what its value is."""

    type: type
    unit: str
    meaning: str

    def __new__(cls, name: str, type_: type, unit: str, meaning: str) -> Key:
        k = super().__new__(cls, name)
        k.type, k.unit, k.meaning = type_, unit, meaning
        return k

    def __reduce__(self):       # copies and pickles (dataclasses.asdict, multiprocessing) are the plain string
        return (str, (str(self),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# Clocks and theory (probes and the sentinel write the clocks; the judge writes the rest; profile and report read)
KERNEL_SM_MHZ = Key("kernel_sm_mhz", float, "MHz",
                    "the SM clock the timed kernel ran at, its clock64 cycles over %globaltimer (scalar or per launch)")
SENTINEL_SM_MHZ = Key("sentinel_sm_mhz", list, "MHz",
                      "the SM clock of a sentinel kernel run just before and after a library call, both edges")
SENTINEL_BEFORE = Key("sentinel_sm_mhz_before", dict, "MHz",
                      "the sentinel's reading just before the window: median mhz, with min/max over the SMs")
SENTINEL_AFTER = Key("sentinel_sm_mhz_after", dict, "MHz",
                     "the sentinel's reading just after the window: median mhz, with min/max over the SMs")
CPU_MHZ_AROUND = Key("cpu_mhz_around", list, "MHz",
                     "a CPU core's clock timed on a dependent add chain just before and after the timed window")
THEORY_CLOCK_SOURCE = Key("theory_clock_source", str, "",
                          "which clock theory was computed at: kernel, sentinel, nvml, memory, l2_spec, max or "
                          "measured (a CPU's clock timed around the window, where it ran above the max recorded)")
CLOCKS_MHZ = Key("clocks_mhz", dict, "MHz", "every SM clock reading of the record by source: {source: MHz}")
PCT_AT = Key("pct_at", dict, "fraction", "the figure over theory at each clock there is: {source: value/theory}")
# How a record is filed (probes write; hwprobe.profile_build reads)
CEILING = Key("ceiling", bool, "", "false: a comparison figure, never a level's slope nor invalidated by theory")
SPARSE = Key("sparse", bool, "", "a 2:4 sparse rate (dense-equivalent operations): filed beside the dense ceiling")
EXEC_UNIT_INFERRED = Key("exec_unit_inferred", bool, "",
                         "the unit was inferred from the rate, not seen in the kernel: never fills a measured slot")
PRIMARY = Key("primary", bool, "", "the capacity estimate that becomes the level's capacity (others stay beside)")
MAP = Key("map", dict, "", "a map record's table (e.g. L2 latency per SM), stored whole under the level's maps")
CYCLES = Key("cycles", float, "cycles", "a latency in SM clock cycles, beside the seconds")
# Links (interconnect probes write; the profile's links read)
CEILING_KEY = Key("ceiling_key", str, "", "the name a link figure is filed under: links[link].ceilings[key]")
LINK_KIND = Key("link_kind", str, "", "p2p, collective or host")
ENDPOINTS = Key("endpoints", list, "", "the link's ends: GPU indices, or host:rank:gpu strings")
LINK_TYPE = Key("link_type", str, "", "what the link is, e.g. NVLink4 x18, PCIe Gen5 x16")
SIZE_AT_90PCT = Key("size_at_90pct", int, "B", "the smallest message size reaching 90% of the link's best rate")
# The run (the runner writes)
ROUND = Key("round", int, "", "which round of a multi-round suite (1-based) the record is from")
START_STATE = Key("start_state", dict, "", "the GPU state a compute probe started from (hwprobe.timing.settle)")
WALL_S = Key("wall_s", float, "s", "wall time from the probe's previous record (or its start) to this one: what making "
             "the record cost, setup, warm-up, samples and checks together (tools/suite_speed.py costs)")

# Figures' own data (a probe writes; the report's plots, the analysis, the gap and the profile read)
POINTS = Key("points", list, "", "the points a summary record was made from (per size: rates, ratios, clocks)")
BYTES = Key("bytes", int, "B", "a point's size: a message, a buffer or an array moved")
VARIANT = Key("variant", str, "", "which variant of the measurement: in_place or out_of_place, a cache's path, ...")
CURVE = Key("curve", list, "", "a sweep's points: [size, rate] pairs, or {bytes, ns|bps} dicts (latency, cache)")
CANDIDATES = Key("candidates", list, "", "the points a library ceiling was the best of (cublas.candidate_row: metric, "
                 "n, layout, algo, api, rate, valid, sm_mhz, sentinel_sm_mhz); validate's causes read them")
INTENSITY = Key("intensity", float, "FLOP/B", "a roofline point's arithmetic intensity")
ROOF = Key("roof", float, "FLOP/s", "the compute roof the roofline fit found")
FLOP_PER_S = Key("flop_per_s", dict, "FLOP/s", "a pipe experiment's rate per instruction: {instr: FLOP/s}")
POWER_LIMIT_W = Key("power_limit_w", float, "W", "the board power limit a sustained GEMM ran under")
PROMISED = Key("promised", float, "x", "the speed-up the datasheet promises (2:4 sparse: 2)")
BEST_VS_BEST = Key("best_vs_best", float, "x", "the best sparse rate over the best dense rate, each at its size")
SPARSITY = Key("sparsity", str, "", "the structured sparsity of a sparse GEMM, e.g. 2:4 (A)")
REPORTED_BYTES = Key("reported_bytes", int, "B", "a cache's size as the driver reports it")
SPLIT_BYTES = Key("split_bytes", int, "B", "where a split L2's near part ends (the latency step)")
WORKING_SET_BYTES = Key("working_set_bytes", int, "B", "the bytes a memory sweep point touches")
KERNEL_EVIDENCE = Key("kernel_evidence", str, "", "the kernel name the library ran, as the profiler saw it")
KERNEL_TENSOR_CORE = Key("kernel_tensor_core", bool, "", "the library's kernel runs on the tensor cores")
# Collectives and ranks (gpu.nccl and the launcher write; hwprobe.collective, distributed and the fleet read)
OP = Key("op", str, "", "the collective: all_reduce, all_gather, reduce_scatter, ...")
RANKS = Key("ranks", int, "", "how many ranks a collective ran over")
HOSTS = Key("hosts", list, "", "the hosts a collective ran over")
BUSBW = Key("busbw", float, "B/s", "a collective's bus bandwidth as nccl-tests defines it")
CURVES = Key("curves", dict, "", "a collective's points per variant: {variant: [[bytes, busbw, algbw, time_s, cv]]}")
SCOPE = Key("scope", str, "", "world: made once for all ranks, merged once (else per rank, or a cache's scope)")
RANK = Key("rank", int, "", "the rank that made the record (the launcher sets it on merging)")
HOST = Key("host", str, "", "the host of the rank that made the record")
GPU = Key("gpu", int, "", "the GPU index of the rank that made the record")
DELEGATED_TO = Key("delegated_to", int, "", "the rank that measures this figure for the world (this one skipped)")
HEALTH = Key("health", dict, "", "a health verdict record's verdict (hwprobe.health.verdict.Verdict)")

KEYS: dict[str, Key] = {k: k for k in list(globals().values()) if isinstance(k, Key)}   # every key declared above
