"""Built-in architectures against their papers' parameter counts and multiply-adds (224x224, batch 1)."""

import pytest

from hwprobe.errors import InputError
from hwprobe.models import zoo

# (parameters, conv/FC multiply-adds, relative tolerance on each, where the figures come from)
PAPERS = {
    # VGG: Table 2 "number of parameters (in millions)": D 138, E 144
    "vgg16": (138e6, None, 0.005, "Simonyan & Zisserman, Table 2"),
    "vgg19": (144e6, None, 0.005, "Simonyan & Zisserman, Table 2"),
    # ResNet: Table 1 FLOPs (multiply-adds) 1.8, 3.6, 3.8, 7.6, 11.3 x 1e9; parameters from the reference
    # implementation (11.7 M, 21.8 M, 25.6 M, 44.5 M, 60.2 M), which the paper's Table 1 does not list
    "resnet18": (11.7e6, 1.8e9, 0.01, "He et al., Table 1"),
    "resnet34": (21.8e6, 3.6e9, 0.02, "He et al., Table 1"),
    "resnet50": (25.6e6, 3.8e9, 0.02, "He et al., Table 1"),
    "resnet101": (44.5e6, 7.6e9, 0.01, "He et al., Table 1"),
    "resnet152": (60.2e6, 11.3e9, 0.01, "He et al., Table 1"),
    # MobileNet v1: Table 8, 1.0 MobileNet-224: 569 M mult-adds, 4.2 M parameters
    "mobilenet_v1": (4.2e6, 569e6, 0.01, "Howard et al., Table 8"),
    # MobileNet v2: Table 4, 300 M MAdds, 3.4 M parameters
    "mobilenet_v2": (3.4e6, 300e6, 0.035, "Sandler et al., Table 4"),
    # GoogLeNet: Table 1 totals 6.8 M parameters and 1.5 G ops; its conv1 row (2.7 K params, 34 M ops) is
    # smaller than a 7x7x3x64 convolution (9.4 K, 118 M), so the sums agree within 3% and 6%
    "googlenet": (6.8e6, 1.5e9, 0.06, "Szegedy et al., Table 1"),
    # DenseNet-121 (k=32, BC): 8.0 M parameters, 2.9 GFLOPs (Huang et al., Fig. 3 / reference implementation)
    "densenet121": (8.0e6, 2.9e9, 0.025, "Huang et al."),
}


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_parameters_and_multiply_adds_match_the_paper(name):
    params, macs, tol, _ = PAPERS[name]
    m = zoo.build(name)
    assert m.params == pytest.approx(params, rel=tol)
    if macs:
        assert m.gemm_macs == pytest.approx(macs, rel=tol)


def test_exact_counts_of_well_known_builds():
    # torchvision's reference counts: exact when the architecture is the same
    assert zoo.build("vgg16").params == 138_357_544
    assert zoo.build("resnet18").params == 11_689_512
    assert zoo.build("densenet121").params == 7_978_856
    assert zoo.build("mobilenet_v2").params == 3_504_872


def test_every_seed_model_is_built_in():
    for name in ("vgg16", "vgg19", "resnet18", "resnet34", "resnet50", "resnet101", "mobilenet_v1", "mobilenet_v2",
                 "googlenet", "densenet121"):
        assert zoo.find(name) is not None


def test_names_and_aliases():
    assert zoo.find("MobileNet").name == "mobilenet_v1"
    assert zoo.find("ResNet-50").name == "resnet50"
    with pytest.raises(InputError, match="unknown built-in model 'resnet9'"):
        zoo.build("resnet9")


def test_batch_scales_activations_not_weights():
    one, four = zoo.build("resnet18", 1), zoo.build("resnet18", 4)
    assert four.params == one.params and four.macs == 4 * one.macs
    assert four.layers[0].outputs == 4 * one.layers[0].outputs


def test_shapes_follow_the_papers():
    r50 = {x.name: x for x in zoo.build("resnet50").layers}
    assert r50["conv1.conv"].out_hw == (112, 112)
    assert r50["layer4.2.3.conv"].out_hw == (7, 7) and r50["layer4.2.3.conv"].cout == 2048
    mb = {x.name: x for x in zoo.build("mobilenet_v1").layers}
    assert mb["conv2.dw.conv"].depthwise and not mb["conv2.dw.conv"].tensor_core_capable
    g = {x.name: x for x in zoo.build("googlenet").layers}
    assert g["inception5b.concat"].cout == 1024


def test_listing_names_every_model():
    lines = zoo.listing()
    assert len(lines) == len(zoo.ARCHS) and lines[0][0] == "vgg16"
