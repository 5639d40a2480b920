from __future__ import annotations

import numpy as np

from grad_check import check_op


def test_mul_broadcast() -> None:
    rng = np.random.default_rng(0)
    check_op("Mul", [rng.standard_normal((2, 3)), rng.standard_normal((3,))])
