"""What the GPU could do at best: dense tensor-core and CUDA-core TFLOP/s per dtype, memory
bandwidth and the host link, from NVIDIA's datasheets, looked up by the name CUDA reports.

Why a table: "% of peak", MFU and the roofline all divide a measured number by what the
hardware can do, and CUDA exposes no peak FLOP/s. Every number below is the datasheet's *dense*
figure (datasheets print tensor-core peaks "with sparsity", twice the dense rate; those are
halved here and the comment says so). ``fp32`` is the CUDA-core (non-tensor) rate: what an fp32
matmul gets unless TF32 is enabled. A dtype the GPU has no tensor-core path for is absent, and
an unknown GPU gets no peaks: reports then say so instead of guessing (``--peak-tflops``
overrides).

The host link is the per-direction bandwidth of the GPU's link to the CPU (PCIe or NVLink-C2C;
datasheets give both directions together, halved here): the last-resort basis of the
pinned-memory suggestion when the run itself measured no pinned copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["DevicePeaks", "DTYPE_KEYS", "lookup", "dtype_key", "TABLE"]

#: The dtype keys of :attr:`DevicePeaks.tflops`, in the order reports list them.
DTYPE_KEYS = ("fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(frozen=True)
class DevicePeaks:
    """One GPU model's datasheet numbers (dense TFLOP/s per dtype key, GB/s)."""

    name: str
    tflops: dict[str, float]
    mem_gbs: float
    link: str
    link_gbs: float  # per direction
    source: str = field(default="", compare=False)

    def peak(self, key: str | None) -> float | None:
        """Dense TFLOP/s for a dtype key (see :func:`dtype_key`), None if the GPU has none."""
        return self.tflops.get(key) if key else None


def _p(
    fp32: float, tf32: float | None, fp16: float, bf16: float | None, fp8: float | None
) -> dict[str, float]:
    out = {"fp32": fp32, "tf32": tf32, "fp16": fp16, "bf16": bf16, "fp8": fp8}
    return {k: v for k, v in out.items() if v is not None}


_PCIE3, _PCIE4, _PCIE5 = 16.0, 32.0, 64.0  # x16, per direction (datasheets: 32/64/128 GB/s both ways)

# (pattern on the normalised CUDA device name, peaks). First match wins: specific names first.
TABLE: list[tuple[str, DevicePeaks]] = [
    (
        r"\bGH200\b",
        # GH200 Grace Hopper datasheet: H100-class GPU, 96 GB HBM3 at 4 TB/s; NVLink-C2C 900 GB/s
        # both ways. Tensor peaks "with sparsity" halved.
        DevicePeaks("GH200", _p(67, 494.5, 989.5, 989.5, 1979), 4000, "NVLink-C2C", 450.0, "GH200 datasheet"),
    ),
    (
        r"\bH200\b.*\bNVL\b",
        # H200 datasheet, H200 NVL column: FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*
        # (* with sparsity, halved), 4.8 TB/s, PCIe Gen5 128 GB/s.
        DevicePeaks(
            "H200 NVL", _p(60, 417.5, 835.5, 835.5, 1670.5), 4800, "PCIe Gen5", _PCIE5, "H200 datasheet"
        ),
    ),
    (
        r"\bH200\b",
        # H200 datasheet, H200 SXM column: FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958*, 4.8 TB/s.
        DevicePeaks(
            "H200 SXM", _p(67, 494.5, 989.5, 989.5, 1979), 4800, "PCIe Gen5", _PCIE5, "H200 datasheet"
        ),
    ),
    (
        r"\bH100\b.*\bNVL\b",
        # H100 datasheet, H100 NVL column: FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*, 3.9 TB/s.
        DevicePeaks(
            "H100 NVL", _p(60, 417.5, 835.5, 835.5, 1670.5), 3900, "PCIe Gen5", _PCIE5, "H100 datasheet"
        ),
    ),
    (
        r"\bH100\b.*\bPCIE\b",
        # H100 datasheet, H100 PCIe column: FP32 51, TF32 756*, BF16/FP16 1,513*, FP8 3,026*, 2 TB/s.
        DevicePeaks(
            "H100 PCIe", _p(51, 378, 756.5, 756.5, 1513), 2000, "PCIe Gen5", _PCIE5, "H100 datasheet"
        ),
    ),
    (
        r"\bH100\b",
        # H100 datasheet, H100 SXM column ("NVIDIA H100 80GB HBM3"): FP32 67, TF32 989*,
        # BF16/FP16 1,979*, FP8 3,958*, 3.35 TB/s, PCIe Gen5 128 GB/s.
        DevicePeaks(
            "H100 SXM", _p(67, 494.5, 989.5, 989.5, 1979), 3350, "PCIe Gen5", _PCIE5, "H100 datasheet"
        ),
    ),
    (
        r"\bB200\b",
        # HGX B200 datasheet, per GPU (1,000 W): FP32 75, TF32 2.2 PF*, BF16/FP16 4.5 PF*, FP8 9 PF*
        # (* with sparsity, halved), 7.7 TB/s, PCIe Gen5 128 GB/s.
        DevicePeaks("B200", _p(75, 1100, 2250, 2250, 4500), 7700, "PCIe Gen5", _PCIE5, "HGX B200 datasheet"),
    ),
    (
        r"\bA100\b.*\bPCIE\b.*\b40GB\b|\bA100\b.*\b40GB\b.*\bPCIE\b",
        # A100 datasheet, 40GB PCIe: FP32 19.5, TF32 156, BF16/FP16 312 (dense), 1,555 GB/s, Gen4.
        DevicePeaks(
            "A100 PCIe 40GB", _p(19.5, 156, 312, 312, None), 1555, "PCIe Gen4", _PCIE4, "A100 datasheet"
        ),
    ),
    (
        r"\bA100\b.*\bPCIE\b",
        # A100 datasheet, 80GB PCIe: same peaks, 1,935 GB/s.
        DevicePeaks(
            "A100 PCIe 80GB", _p(19.5, 156, 312, 312, None), 1935, "PCIe Gen4", _PCIE4, "A100 datasheet"
        ),
    ),
    (
        r"\bA100\b.*\b40GB\b",
        # A100 datasheet, 40GB SXM: 1,555 GB/s.
        DevicePeaks(
            "A100 SXM 40GB", _p(19.5, 156, 312, 312, None), 1555, "PCIe Gen4", _PCIE4, "A100 datasheet"
        ),
    ),
    (
        r"\bA100\b",
        # A100 datasheet, 80GB SXM ("NVIDIA A100-SXM4-80GB"): 2,039 GB/s.
        DevicePeaks(
            "A100 SXM 80GB", _p(19.5, 156, 312, 312, None), 2039, "PCIe Gen4", _PCIE4, "A100 datasheet"
        ),
    ),
    (
        r"\bV100S\b",
        # V100S datasheet (PCIe): FP32 16.4, tensor (FP16) 130, 1,134 GB/s, PCIe Gen3 32 GB/s.
        DevicePeaks(
            "V100S PCIe", _p(16.4, None, 130, None, None), 1134, "PCIe Gen3", _PCIE3, "V100S datasheet"
        ),
    ),
    (
        r"\bV100\b.*\bPCIE\b",
        # V100 datasheet, PCIe column: FP32 14, tensor (FP16) 112, 900 GB/s.
        DevicePeaks("V100 PCIe", _p(14, None, 112, None, None), 900, "PCIe Gen3", _PCIE3, "V100 datasheet"),
    ),
    (
        r"\bV100\b",
        # V100 datasheet, SXM2 column: FP32 15.7, tensor (FP16) 125, 900 GB/s. No bf16 or TF32.
        DevicePeaks("V100 SXM2", _p(15.7, None, 125, None, None), 900, "PCIe Gen3", _PCIE3, "V100 datasheet"),
    ),
    (
        r"\bL40S\b",
        # L40S datasheet: FP32 91.6, TF32 366*, BF16/FP16 733*, FP8 1,466* (halved), 864 GB/s, Gen4.
        DevicePeaks("L40S", _p(91.6, 183, 366.5, 366.5, 733), 864, "PCIe Gen4", _PCIE4, "L40S datasheet"),
    ),
    (
        r"\bL4\b",
        # L4 datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485* (halved), 300 GB/s, Gen4.
        DevicePeaks("L4", _p(30.3, 60, 121, 121, 242.5), 300, "PCIe Gen4", _PCIE4, "L4 datasheet"),
    ),
    (
        r"\bRTX 4090\b(?! D\b)",
        # Ada (AD102) architecture whitepaper, GeForce RTX 4090 column, dense, FP32 accumulate
        # (what PyTorch uses): FP32 82.6, TF32 82.6, FP16/BF16 165.2, FP8 330.3; 1,008 GB/s, Gen4.
        DevicePeaks(
            "RTX 4090", _p(82.6, 82.6, 165.2, 165.2, 330.3), 1008, "PCIe Gen4", _PCIE4, "Ada whitepaper"
        ),
    ),
]


def _normalise(name: str) -> str:
    """ "NVIDIA A100-SXM4-80GB" -> "A100 SXM4 80GB": dashes and underscores are separators."""
    return re.sub(r"[\s_\-]+", " ", name.upper()).strip()


def lookup(device_name: str) -> DevicePeaks | None:
    """The datasheet peaks of the GPU CUDA calls ``device_name``; None when it is not in the table."""
    norm = _normalise(device_name)
    for pattern, peaks in TABLE:
        if re.search(pattern, norm):
            return peaks
    return None


_DTYPES = {
    "Float": "fp32",
    "BFloat16": "bf16",
    "Half": "fp16",
    "Float8_e4m3fn": "fp8",
    "Float8_e5m2": "fp8",
    "Float8_e4m3fnuz": "fp8",
    "Float8_e5m2fnuz": "fp8",
}


def dtype_key(aten_dtype: str | None, tf32: bool = False) -> str | None:
    """The peak key of a tensor dtype as the native core names it ("Float", "BFloat16", ...):
    fp32 work counts against the TF32 peak only when its kernels ran on TF32 tensor cores."""
    key = _DTYPES.get(aten_dtype or "")
    return "tf32" if key == "fp32" and tf32 else key
