"""Version strings as comparable tuples, tolerant of local tags and junk."""

from __future__ import annotations


def version_tuple(text: str) -> tuple[int, ...]:
    """``"12.8"`` -> ``(12, 8)``; junk parts count as 0 so comparisons never raise."""
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


# The least Linux x86_64 driver of each CUDA toolkit release (its GA), from NVIDIA's CUDA Toolkit release notes,
# table "CUDA Toolkit and Corresponding Driver Versions". A driver at least this new supports that CUDA version
# fully; CUDA minor-version compatibility (any 12.x on a 525.60.13+ driver) runs code but not PTX JIT.
DRIVER_FOR_CUDA: dict[tuple[int, int], str] = {
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 4): "550.54.14",
    (12, 5): "555.42.02",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
    (13, 1): "590.44.01",
}


def driver_for_cuda(cuda: str) -> str:
    """The least driver that fully supports CUDA ``cuda`` ("12.6" -> "560.28.03"); "" when NVIDIA's table has none."""
    return DRIVER_FOR_CUDA.get(tuple((version_tuple(cuda) + (0, 0))[:2]), "")


def cuda_of_driver(driver: str) -> str | None:
    """The newest CUDA version a driver fully supports, by the same table; None when it is older than all."""
    have = version_tuple(driver)
    fits = [cuda for cuda, least in DRIVER_FOR_CUDA.items() if version_tuple(least) <= have]
    return "%d.%d" % max(fits) if fits else None
