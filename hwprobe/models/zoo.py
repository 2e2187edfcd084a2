"""Built-in architectures, built from their papers' layer configurations (no weights, 224x224 RGB input).

VGG (Simonyan & Zisserman 2014, configurations D and E), ResNet (He et al. 2015, Table 1; projection
shortcuts where the shape changes, stride on the first 1x1 of a bottleneck as in the paper), MobileNet v1
(Howard et al. 2017, Table 1), MobileNet v2 (Sandler et al. 2018, Table 2), GoogLeNet (Szegedy et al. 2014,
Table 1; LRN and auxiliary classifiers left out) and DenseNet (Huang et al. 2017, Table 1; BC, k=32/48).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hwprobe.errors import InputError
from hwprobe.models.builder import Net, Shape
from hwprobe.models.layers import Model

INPUT = Shape(3, 224, 224)


def _cbr(n: Net, x: Shape, cout: int, k: int, stride: int = 1, groups: int = 1, name: str = "",
         act: str = "relu") -> Shape:
    x = n.conv(x, cout, k, stride, groups=groups, name=f"{name}.conv")
    x = n.bn(x, name=f"{name}.bn")
    return n.act(x, act, name=f"{name}.{act}") if act else x


# ------------------------------------------------------------------------------------------------ VGG
VGG_CFG = {"vgg16": [2, 2, 3, 3, 3], "vgg19": [2, 2, 4, 4, 4]}


def vgg(name: str, batch: int) -> Model:
    n, x = Net(name, batch), INPUT
    for i, (reps, c) in enumerate(zip(VGG_CFG[name], (64, 128, 256, 512, 512), strict=True), 1):
        for j in range(1, reps + 1):
            x = n.conv(x, c, 3, bias=True, name=f"conv{i}_{j}")
            x = n.act(x, name=f"relu{i}_{j}")
        x = n.pool(x, 2, 2, name=f"pool{i}")
    for i, c in enumerate((4096, 4096), 6):
        x = n.fc(x, c, name=f"fc{i}")
        x = n.act(x, name=f"relu{i}")
    x = n.fc(x, 1000, name="fc8")
    n.softmax(x, name="prob")
    return n.model()


# ------------------------------------------------------------------------------------------------ ResNet
RESNET_CFG = {"resnet18": ("basic", [2, 2, 2, 2]), "resnet34": ("basic", [3, 4, 6, 3]),
              "resnet50": ("bottleneck", [3, 4, 6, 3]), "resnet101": ("bottleneck", [3, 4, 23, 3]),
              "resnet152": ("bottleneck", [3, 8, 36, 3])}


def _block(n: Net, x: Shape, width: int, stride: int, kind: str, name: str) -> Shape:
    expansion = 4 if kind == "bottleneck" else 1
    out = width * expansion
    short = x
    if stride != 1 or x.c != out:
        short = n.conv(x, out, 1, stride, name=f"{name}.downsample.conv")
        short = n.bn(short, name=f"{name}.downsample.bn")
    if kind == "basic":
        y = _cbr(n, x, width, 3, stride, name=f"{name}.1")
        y = _cbr(n, y, width, 3, name=f"{name}.2", act="")
    else:
        y = _cbr(n, x, width, 1, stride, name=f"{name}.1")
        y = _cbr(n, y, width, 3, name=f"{name}.2")
        y = _cbr(n, y, out, 1, name=f"{name}.3", act="")
    y = n.add([y, short], name=f"{name}.add")
    return n.act(y, name=f"{name}.relu")


def resnet(name: str, batch: int) -> Model:
    kind, reps = RESNET_CFG[name]
    n = Net(name, batch)
    x = _cbr(n, INPUT, 64, 7, 2, name="conv1")
    x = n.pool(x, 3, 2, 1, name="maxpool")
    for stage, (r, width) in enumerate(zip(reps, (64, 128, 256, 512), strict=True), 1):
        for b in range(r):
            x = _block(n, x, width, 2 if (b == 0 and stage > 1) else 1, kind, f"layer{stage}.{b}")
    x = n.global_pool(x, name="avgpool")
    n.fc(x, 1000, name="fc")
    return n.model(["ResNet v1 as in the paper: the stride sits on the first 1x1 of a bottleneck "
                    "(torchvision's v1.5 moves it to the 3x3: +0.3 GMAC for ResNet-50)"])


# ------------------------------------------------------------------------------------------------ MobileNets
def mobilenet_v1(name: str, batch: int) -> Model:
    n = Net(name, batch)
    x = _cbr(n, INPUT, 32, 3, 2, name="conv1")
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (c, s) in enumerate(plan, 2):
        x = _cbr(n, x, x.c, 3, s, groups=x.c, name=f"conv{i}.dw")
        x = _cbr(n, x, c, 1, name=f"conv{i}.pw")
    x = n.global_pool(x, name="avgpool")
    n.fc(x, 1000, name="fc")
    return n.model()


def mobilenet_v2(name: str, batch: int) -> Model:
    n = Net(name, batch)
    x = _cbr(n, INPUT, 32, 3, 2, name="conv1", act="relu6")
    blocks = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
              (6, 320, 1, 1)]
    idx = 0
    for t, c, reps, s in blocks:
        for r in range(reps):
            idx += 1
            stride, inp, y = (s if r == 0 else 1), x, x
            if t != 1:
                y = _cbr(n, y, x.c * t, 1, name=f"block{idx}.expand", act="relu6")
            y = _cbr(n, y, y.c, 3, stride, groups=y.c, name=f"block{idx}.dw", act="relu6")
            y = _cbr(n, y, c, 1, name=f"block{idx}.project", act="")
            x = n.add([y, inp], name=f"block{idx}.add") if stride == 1 and inp.c == c else y
    x = _cbr(n, x, 1280, 1, name="conv_last", act="relu6")
    x = n.global_pool(x, name="avgpool")
    n.fc(x, 1000, name="fc")
    return n.model()


# ------------------------------------------------------------------------------------------------ GoogLeNet
INCEPTION = {  # 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj (Table 1)
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64), "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64), "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}


def _conv_relu(n: Net, x: Shape, c: int, k: int, stride: int = 1, name: str = "") -> Shape:
    return n.act(n.conv(x, c, k, stride, bias=True, name=f"{name}.conv"), name=f"{name}.relu")


def googlenet(name: str, batch: int) -> Model:
    n = Net(name, batch)
    x = _conv_relu(n, INPUT, 64, 7, 2, name="conv1")
    x = n.pool(x, 3, 2, ceil=True, name="pool1")
    x = _conv_relu(n, x, 64, 1, name="conv2_reduce")
    x = _conv_relu(n, x, 192, 3, name="conv2")
    x = n.pool(x, 3, 2, ceil=True, name="pool2")
    for key, (c1, r3, c3, r5, c5, pp) in INCEPTION.items():
        m = f"inception{key}"
        b1 = _conv_relu(n, x, c1, 1, name=f"{m}.1x1")
        b3 = _conv_relu(n, _conv_relu(n, x, r3, 1, name=f"{m}.3x3_reduce"), c3, 3, name=f"{m}.3x3")
        b5 = _conv_relu(n, _conv_relu(n, x, r5, 1, name=f"{m}.5x5_reduce"), c5, 5, name=f"{m}.5x5")
        bp = _conv_relu(n, n.pool(x, 3, 1, 1, name=f"{m}.pool"), pp, 1, name=f"{m}.pool_proj")
        x = n.concat([b1, b3, b5, bp], name=f"{m}.concat")
        if key in ("3b", "4e"):
            x = n.pool(x, 3, 2, ceil=True, name=f"pool{key[0]}")
    x = n.global_pool(x, name="avgpool")
    x = n.fc(x, 1000, name="fc")
    n.softmax(x, name="prob")
    return n.model(["LRN layers and the two auxiliary classifiers (training only) are left out"])


# ------------------------------------------------------------------------------------------------ DenseNet
DENSENET_CFG = {"densenet121": (32, 64, [6, 12, 24, 16]), "densenet161": (48, 96, [6, 12, 36, 24]),
                "densenet169": (32, 64, [6, 12, 32, 32]), "densenet201": (32, 64, [6, 12, 48, 32])}


def densenet(name: str, batch: int) -> Model:
    k, init, reps = DENSENET_CFG[name]
    n = Net(name, batch)
    x = _cbr(n, INPUT, init, 7, 2, name="conv0")
    x = n.pool(x, 3, 2, 1, name="pool0")
    for b, r in enumerate(reps, 1):
        feats = [x]
        for i in range(1, r + 1):
            m = f"block{b}.layer{i}"
            y = n.concat(feats, name=f"{m}.concat") if len(feats) > 1 else feats[0]
            y = n.act(n.bn(y, name=f"{m}.bn1"), name=f"{m}.relu1")
            y = n.conv(y, 4 * k, 1, name=f"{m}.conv1")
            y = n.act(n.bn(y, name=f"{m}.bn2"), name=f"{m}.relu2")
            feats.append(n.conv(y, k, 3, name=f"{m}.conv2"))
        x = n.concat(feats, name=f"block{b}.concat")
        if b < len(reps):
            t = f"transition{b}"
            x = n.act(n.bn(x, name=f"{t}.bn"), name=f"{t}.relu")
            x = n.conv(x, x.c // 2, 1, name=f"{t}.conv")
            x = n.pool(x, 2, 2, kind="avg", name=f"{t}.pool")
    x = n.act(n.bn(x, name="norm5"), name="relu5")
    x = n.global_pool(x, name="avgpool")
    n.fc(x, 1000, name="classifier")
    return n.model(["each dense layer reads the concatenation of all earlier outputs (counted as a concat)"])


@dataclass(frozen=True)
class Arch:
    name: str
    build: Callable[[str, int], Model]
    paper: str


ARCHS = {a.name: a for a in [
    Arch("vgg16", vgg, "Simonyan & Zisserman 2014, configuration D"),
    Arch("vgg19", vgg, "Simonyan & Zisserman 2014, configuration E"),
    *[Arch(k, resnet, "He et al. 2015, Table 1") for k in RESNET_CFG],
    Arch("mobilenet_v1", mobilenet_v1, "Howard et al. 2017, Table 1 (width 1.0, 224)"),
    Arch("mobilenet_v2", mobilenet_v2, "Sandler et al. 2018, Table 2 (width 1.0, 224)"),
    Arch("googlenet", googlenet, "Szegedy et al. 2014, Table 1"),
    *[Arch(k, densenet, "Huang et al. 2017, Table 1 (DenseNet-BC)") for k in DENSENET_CFG],
]}
ALIASES = {"mobilenet": "mobilenet_v1", "mobilenetv1": "mobilenet_v1", "mobilenetv2": "mobilenet_v2",
           "inception_v1": "googlenet", "inceptionv1": "googlenet"}


def find(name: str) -> Arch | None:
    """The architecture named ``name``, ignoring case, '-' and '_' (ResNet-50, mobilenet_v2, MobileNetV2)."""
    key = name.strip().lower().replace("-", "").replace("_", "")
    squashed = {k.replace("_", ""): k for k in ARCHS}
    return ARCHS.get(ALIASES.get(key) or squashed.get(key, ""))


def build(name: str, batch: int = 1) -> Model:
    arch = find(name)
    if arch is None:
        raise InputError(f"unknown built-in model {name!r}; models: {', '.join(ARCHS)} (hwprobe list models)")
    return arch.build(arch.name, batch)


def listing() -> list[tuple[str, str, str, str]]:
    """(name, parameters, conv/FC multiply-adds at 224x224 and batch 1, source) per built-in model."""
    out = []
    for a in ARCHS.values():
        m = a.build(a.name, 1)
        out.append((a.name, f"{m.params / 1e6:.2f} M", f"{m.gemm_macs / 1e9:.3f} G multiply-adds", a.paper))
    return out
