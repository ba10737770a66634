from typing import Literal, Optional, Tuple

import numpy as np
import numpy.typing as npt

Backend = Literal["cpu", "wgpu", "cuda"]
Precision = Literal["f64", "f32", "mixed"]
F64 = npt.NDArray[np.float64]
Status = npt.NDArray[np.int32]

def gemm(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    c: Optional[npt.ArrayLike] = None,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    trans_a: bool = False,
    trans_b: bool = False,
    backend: Backend = "cpu",
    precision: Precision = "f64",
) -> F64: ...
def lu_factor(
    a: npt.ArrayLike, *, backend: Backend = "cpu", precision: Precision = "f64"
) -> Tuple[F64, npt.NDArray[np.int64], Status]: ...
def lu_solve(
    lu_and_piv: Tuple[npt.ArrayLike, npt.ArrayLike],
    b: npt.ArrayLike,
    *,
    backend: Backend = "cpu",
    precision: Precision = "f64",
) -> F64: ...
def cholesky(a: npt.ArrayLike, *, backend: Backend = "cpu", precision: Precision = "f64") -> Tuple[F64, Status]: ...
def solve(
    a: npt.ArrayLike, b: npt.ArrayLike, *, backend: Backend = "cpu", precision: Precision = "f64"
) -> Tuple[F64, Status]: ...
def inv(a: npt.ArrayLike, *, backend: Backend = "cpu", precision: Precision = "f64") -> Tuple[F64, Status]: ...
