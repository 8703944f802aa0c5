"""Layer chains of CNNs for the ``scope`` problem: ResNet-50/152 shapes and seeded synthetic chains.

A chain layer carries what the Scope cost model needs (see :mod:`coopt.problems.scope`):
MACs, weight bytes, input and output bytes per sample, the bytes of residual shortcut tensors
that stay alive across a cut placed right after it, its output channels (split by the
input-shared partition) and output rows (split by the weight-shared partition) and the halo
bytes a spatial slab must fetch from its neighbours.

ResNet shapes follow He et al., "Deep Residual Learning for Image Recognition" (CVPR 2016),
Table 1, on a 224x224x3 input, with the stride of each down-sampling bottleneck on its 3x3
convolution (the torchvision "v1.5" placement). Simplifications, all stated here once:

* the 3x3/2 max-pool is folded into conv1 (its output is the pooled 56x56x64 tensor);
* a block's 1x1 projection shortcut reads the same tensor as the block's first 1x1 conv, so it
  is folded into that conv (MACs and weights added; its output is the shortcut that stays alive
  until the block's add); the chain therefore has 152 (ResNet-152) or 50 (ResNet-50) layers;
* global average pooling is folded into the FC layer (its input is the pooled 2048 vector);
* activations and weights are ``bytes_per_element`` wide (int8 inference by default).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

RESNET_STAGES = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}
#: (mid channels, out channels, output rows) of the four bottleneck stages.
STAGE_SHAPES = ((64, 256, 56), (128, 512, 28), (256, 1024, 14), (512, 2048, 7))


@dataclass(frozen=True)
class ChainLayer:
    """One layer of the chain, per sample, in MACs and bytes."""

    name: str
    macs: int
    weight_bytes: int
    input_bytes: int
    output_bytes: int
    shortcut_bytes: int
    out_channels: int
    out_rows: int
    halo_bytes: int


def conv(
    name: str,
    in_channels: int,
    out_channels: int,
    in_rows: int,
    out_rows: int,
    kernel: int,
    *,
    shortcut_bytes: int = 0,
    bytes_per_element: int = 1,
) -> ChainLayer:
    """A square convolution on a square feature map (no bias)."""
    macs = out_rows * out_rows * out_channels * kernel * kernel * in_channels
    return ChainLayer(
        name=name,
        macs=macs,
        weight_bytes=kernel * kernel * in_channels * out_channels * bytes_per_element,
        input_bytes=in_rows * in_rows * in_channels * bytes_per_element,
        output_bytes=out_rows * out_rows * out_channels * bytes_per_element,
        shortcut_bytes=shortcut_bytes,
        out_channels=out_channels,
        out_rows=out_rows,
        # A slab of rows needs (kernel - 1) extra input rows from its neighbours.
        halo_bytes=(kernel - 1) * in_rows * in_channels * bytes_per_element,
    )


def resnet(depth: int, bytes_per_element: int = 1) -> list[ChainLayer]:
    """The layer chain of ResNet-``depth`` (50, 101 or 152) on 224x224x3 images."""
    if depth not in RESNET_STAGES:
        raise ValueError(f"ResNet depth must be one of {sorted(RESNET_STAGES)}, got {depth}")
    beta = bytes_per_element
    stem = conv("conv1", 3, 64, 224, 112, 7, bytes_per_element=beta)
    # The max-pool folded into conv1 leaves a 56x56x64 output.
    layers = [ChainLayer(**{**stem.__dict__, "output_bytes": 56 * 56 * 64 * beta})]
    in_channels, in_rows = 64, 56
    stages = zip(RESNET_STAGES[depth], STAGE_SHAPES, strict=True)
    for stage, (blocks, (mid, out, rows)) in enumerate(stages, start=2):
        for block in range(blocks):
            tag = f"conv{stage}_{block + 1}"
            shortcut = rows * rows * out * beta  # identity (same shape as the output) or projection
            first = conv(f"{tag}a", in_channels, mid, in_rows, in_rows, 1,
                         shortcut_bytes=shortcut, bytes_per_element=beta)
            if block == 0:
                projection = conv("proj", in_channels, out, in_rows, rows, 1, bytes_per_element=beta)
                first = ChainLayer(**{
                    **first.__dict__,
                    "macs": first.macs + projection.macs,
                    "weight_bytes": first.weight_bytes + projection.weight_bytes,
                })
            layers.append(first)
            layers.append(conv(f"{tag}b", mid, mid, in_rows, rows, 3,
                               shortcut_bytes=shortcut, bytes_per_element=beta))
            layers.append(conv(f"{tag}c", mid, out, rows, rows, 1, bytes_per_element=beta))
            in_channels, in_rows = out, rows
    fc = ChainLayer(
        name="fc",
        macs=in_channels * 1000,
        weight_bytes=in_channels * 1000 * beta,
        input_bytes=in_channels * beta,
        output_bytes=1000 * beta,
        shortcut_bytes=0,
        out_channels=1000,
        out_rows=1,
        halo_bytes=0,
    )
    return layers + [fc]


def synthetic_chain(rng: random.Random, length: int, bytes_per_element: int = 1) -> list[ChainLayer]:
    """A seeded CNN-like chain: channels double as rows halve, kernels 1 or 3, some shortcuts."""
    channels, rows = rng.choice((64, 128, 256)), rng.choice((7, 14, 28))
    layers = []
    for i in range(length):
        kernel = rng.choice((1, 3, 3))
        out_channels, out_rows = channels, rows
        if rows > 7 and rng.random() < 0.25:
            out_channels, out_rows = channels * 2, rows // 2
        shortcut = out_rows * out_rows * out_channels * bytes_per_element if rng.random() < 0.4 else 0
        layers.append(conv(f"l{i}", channels, out_channels, rows, out_rows, kernel,
                           shortcut_bytes=shortcut if i < length - 1 else 0,
                           bytes_per_element=bytes_per_element))
        channels, rows = out_channels, out_rows
    return layers
