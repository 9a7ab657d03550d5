"""RoI kernels size their work from attributes: untrusted values are refused before anything is allocated
(issue 29: MaxRoiPool asked np.arange(10^12), RoiAlign built a 3.6 TiB sampling grid)."""

from __future__ import annotations

import numpy as np
import pytest

from onnxcore import kernels
from onnxcore.errors import EvaluationError, LimitError

X = np.ones((1, 2, 8, 8), np.float32)


def test_max_roi_pool_refuses_a_zero_bin_count() -> None:
    rois = np.array([[0, 0, 0, 4, 4]], np.float32)
    with pytest.raises(EvaluationError, match=r"pooled_shape must be positive, got \[1000000000000, 0\]"):
        kernels.run("MaxRoiPool", 22, X, rois, pooled_shape=[10**12, 0])
    (y,) = kernels.run("MaxRoiPool", 22, X, rois, pooled_shape=[2, 2])
    assert y.shape == (1, 2, 2, 2) and np.all(y == 1)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_refuses_a_sampling_grid_beyond_the_limits(mode: str) -> None:
    rois = np.array([[0, 0, 4, 4]], np.float32)
    idx = np.array([0], np.int64)
    with pytest.raises(LimitError, match="RoiAlign"):
        kernels.run(
            "RoiAlign", 16, X, rois, idx, mode=mode, output_height=10**6, output_width=10**6, sampling_ratio=10**6
        )
    with pytest.raises(LimitError, match="RoiAlign sampling grid"):
        kernels.run("RoiAlign", 16, X, rois, idx, mode=mode, output_height=2, output_width=2, sampling_ratio=10**12)
    with pytest.raises(EvaluationError, match="must be positive"):
        kernels.run("RoiAlign", 16, X, rois, idx, mode=mode, output_height=0, output_width=2)
    (y,) = kernels.run("RoiAlign", 16, X, rois, idx, mode=mode, output_height=2, output_width=2, sampling_ratio=2)
    assert y.shape == (1, 2, 2, 2) and np.allclose(y, 1)
