"""The profile query API, hardened: validated arguments, one exception type, case-insensitive names, paths."""

import math

import pytest

from hwprobe import roofline
from hwprobe.errors import InputError
from hwprobe.profile import Profile
from hwprobe.profile_build import from_measurements
from hwprobe.roofline import RooflineError
from tests.helpers import meas
from tests.refs import H200_FULL

DEVICE = {"kind": "gpu", "name": "NVIDIA H200", "sms": 132}
LIB, INS, BW = 807e12, 907e12, 4.5e12


@pytest.fixture
def prof() -> Profile:
    ms = [
        meas("fp16.tensor_core.cublaslt", LIB, precision="fp16", exec_unit="tensor_core", path="library",
             theory=1.05e15),
        meas("fp16.tensor_core.wgmma", INS, precision="fp16", exec_unit="tensor_core", path="instruction",
             theory=1.05e15),
        meas("fp16.cuda_core.hfma2", 132e12, precision="fp16", exec_unit="cuda_core", path="instruction",
             theory=134e12),
        meas("fp16.sparse", 1.1e15, precision="fp16", exec_unit="tensor_core", path="library", theory=2.1e15,
             params={"sparse": True}),
        meas("dram.read", BW, kind="memory", unit="B/s", level="dram", theory=4.8e12),
    ]
    p = from_measurements(DEVICE, ms)
    # whichever slope rule the profile builder uses, this test knows the DRAM bandwidth it asks for
    p.memory["dram"].bandwidth.value = BW
    return p


def test_paths_choose_library_or_instruction(prof):
    assert roofline.peak(prof, "fp16", "tensor_core", "library").value == LIB
    assert roofline.peak(prof, "fp16", "tensor_core", "instruction").value == INS
    assert roofline.peak(prof, "fp16", "tensor_core", "best").value == INS
    assert roofline.ridge_point(prof, "fp16", unit="tensor_core", path="library") == pytest.approx(LIB / BW)
    assert roofline.ridge_point(prof, "fp16", unit="tensor_core", path="instruction") == pytest.approx(INS / BW)


def test_sparse_never_counts_as_dense_peak(prof):
    assert roofline.peak(prof, "fp16").value == INS          # the 2:4 ceiling (1.1e15) is not a dense peak


def test_case_insensitive_names_and_aliases(prof):
    assert roofline.peak(prof, "FP16", "Tensor_Core", "LIBRARY").value == LIB
    assert roofline.peak(prof, "half", "tensor").value == INS
    assert roofline.bandwidth(prof, "HBM") == BW
    assert roofline.attainable(prof, 1.0, "Fp16", level="DRAM") == pytest.approx(BW)


def test_attainable_is_the_roofline(prof):
    assert roofline.attainable(prof, 10, "fp16", unit="tensor_core", path="library") == pytest.approx(10 * BW)
    assert roofline.attainable(prof, 1e4, "fp16", unit="tensor_core", path="library") == LIB
    assert roofline.attainable(prof, 0, "fp16") == 0.0


@pytest.mark.parametrize("bad", [-1, -0.001, math.nan, math.inf, "10", None, True])
def test_bad_intensity_refused(prof, bad):
    with pytest.raises(RooflineError, match="intensity"):
        roofline.attainable(prof, bad, "fp16")


def test_missing_precision_same_error_everywhere(prof):
    for call in (lambda: roofline.attainable(prof, 1.0, "fp8"), lambda: roofline.ridge_point(prof, "fp8"),
                 lambda: roofline.peak(prof, "fp8"), lambda: prof.attainable(1.0, "fp8"),
                 lambda: prof.ridge_point("fp8")):
        with pytest.raises(RooflineError, match="no measured fp8 ceiling; it has: fp16"):
            call()


def test_unknown_names_blame_the_right_argument(prof):
    with pytest.raises(RooflineError, match="unknown precision 'fp4'"):
        roofline.ridge_point(prof, "fp4")
    with pytest.raises(RooflineError, match="unknown unit 'tensorcorez'"):
        roofline.peak(prof, "fp16", unit="tensorcorez")
    with pytest.raises(RooflineError, match="unknown path 'fastest'"):
        roofline.peak(prof, "fp16", path="fastest")
    with pytest.raises(RooflineError, match="no measured l3 bandwidth"):
        roofline.bandwidth(prof, "l3")


def test_missing_slot_lists_what_exists(prof):
    with pytest.raises(RooflineError, match="on cuda_core, path library; fp16 has: cuda_core/instruction, "
                                            "tensor_core/instruction, tensor_core/library"):
        roofline.peak(prof, "fp16", unit="cuda_core", path="library")


def test_one_exception_type_is_input_error_and_key_error(prof):
    with pytest.raises(InputError):
        roofline.attainable(prof, 1.0, "int8")
    with pytest.raises(KeyError) as e:                     # old callers caught KeyError
        roofline.attainable(prof, 1.0, "int8")
    assert str(e.value).startswith("this profile")         # no KeyError quoting in the message


def test_profile_lookups_return_none_computations_raise(prof):
    assert prof.peak("fp8") is None and prof.bandwidth("l3") is None
    assert prof.peak("FP16", "tensor_core", "library").value == LIB
    with pytest.raises(RooflineError):
        prof.peak("fp4")                                   # an unknown name is an error, not "absent"
    assert prof.ridge_point("fp16", path="library") == pytest.approx(LIB / BW)


def test_datasheet_roof_beside_the_measured_one(prof):
    ds = roofline.datasheet_roof(prof, "fp16", "tensor_core", "library")
    assert ds.peak == pytest.approx(1.05e15 * 1.05)        # helpers.meas: datasheet = theory x 1.05
    assert ds.bandwidth == pytest.approx(4.8e12 * 1.05)
    assert ds.ridge == pytest.approx(ds.peak / ds.bandwidth)


def test_ridge_needs_positive_numbers():
    assert roofline.ridge(10.0, 2.0) == 5.0
    with pytest.raises(RooflineError):
        roofline.ridge(0.0, 1.0)


def test_committed_profile_library_vs_instruction_ridge():
    from hwprobe.profile_build import load_profile

    p = load_profile(H200_FULL / "profile.json")
    lib = roofline.ridge_point(p, "fp16", unit="tensor_core", path="library")
    ins = roofline.ridge_point(p, "fp16", unit="tensor_core", path="instruction")
    assert lib < ins                                       # cuBLAS reaches less than wgmma
    assert roofline.peak(p, "fp16", "tensor_core", "library").metric.startswith("fp16.tensor_core.cublas")


def test_is_measured_reads_either_flag():
    """Issue 35 (mutation run): the committed spec-derived runs set both flags, so a check of one alone passed."""
    from types import SimpleNamespace as NS

    assert roofline.is_measured(NS(environment=None, device={}))
    assert roofline.is_measured(NS(environment={"measured": True}, device={"measured": True}))
    assert not roofline.is_measured(NS(environment={"measured": False}, device={}))
    assert not roofline.is_measured(NS(environment={}, device={"measured": False}))


def test_the_defaults_are_any_unit_best_path_and_dram(prof):
    """Issue 35 (mutation run): every query's defaults, spelled out, give the same answer."""
    assert roofline.peak(prof, "fp16") == roofline.peak(prof, "fp16", None, "best")
    assert roofline.peak_ceiling(prof, "fp16") == roofline.peak_ceiling(prof, "fp16", None, "best")
    assert roofline.roof(prof, "fp16") == roofline.roof(prof, "fp16", None, "best", "dram")
    assert roofline.bandwidth(prof) == roofline.bandwidth(prof, "dram")
    assert roofline.attainable(prof, 8, "fp16") == roofline.attainable(prof, 8, "fp16", "dram", None, "best")
    assert roofline.ridge_point(prof, "fp16") == roofline.ridge_point(prof, "fp16", "dram", None, "best")
    assert roofline.datasheet_roof(prof, "fp16") == roofline.datasheet_roof(prof, "fp16", None, "best", "dram")
