"""tools/peers: the gpu-benches L2 comparison (hwprobe's L2 peer method beside gpu-benches' gpu-l2-cache in one
lease): its suite loads and validates, and its table holds the committed leases to the benchmark's own printout."""

from __future__ import annotations

from tests.helpers import load_tool
from tests.refs import H100_L2_GPUBENCHES, H200_L2_GPUBENCHES, ROOT


def test_l2_table_fails_the_old_peer_method_and_passes_the_new(capsys):
    """gpu-benches' own printout in the same lease is the oracle: the first H100 lease (peer method on
    ld.global.cg and log-spaced sets) is 1% under it; the leases after the change are within 0.5%."""
    mod = load_tool("peers/gpubenches_l2_table")
    h100 = H100_L2_GPUBENCHES
    assert mod.main(str(h100 / "lease1")) == 1
    assert "worst 0.990" in capsys.readouterr().out
    assert mod.main(str(h100 / "lease2")) == 0
    out = capsys.readouterr().out
    # Nsight Compute on the benchmark's kernel at its median set: 1.1% L1 hits, 3.1% merged, 8.25 TB/s sent
    assert "     8.0     8.606   1.12%   3.1%   8.249" in out
    assert mod.main(str(H200_L2_GPUBENCHES / "lease1")) == 0


def test_l2_gpubenches_suite_loads():
    from hwprobe import suites

    s = suites.load(str(ROOT / "tools" / "peers" / "gpubenches_l2.toml"))
    suites.validate(s)
    assert [e.probe for e in s.entries] == ["gpu.cache"]
