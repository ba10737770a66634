from typing import Any, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import batched as batched

Backend = Literal["cpu", "wgpu", "cuda"]
Precision = Literal["f64", "f32", "mixed"]
Format = Literal["auto", "csr", "coo", "ell", "sell", "staircase", "bell", "dia"]
Solver = Literal["cg", "pcg", "bicgstab", "gmres", "fgmres", "refine"]
Precond = Literal["none", "jacobi", "block-jacobi", "chebyshev", "amg"]

__version__: str

def backends() -> list[str]:
    """The backends whose device answers here: ``"cpu"``, then ``"wgpu"``, ``"cuda"``."""

def compiled_backends() -> list[str]:
    """The backends compiled into this build, whether or not a device answers."""

class Vector:
    """A float64 or float32 vector on a backend; DLPack without a copy on CPU and CUDA."""

    def __init__(
        self, data: npt.ArrayLike, backend: Backend = "cpu", dtype: Literal["float64", "float32"] = "float64"
    ) -> None: ...
    def to_numpy(self) -> npt.NDArray[np.floating[Any]]: ...
    @property
    def backend(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> Tuple[int]: ...
    @property
    def data_ptr(self) -> int: ...
    def __len__(self) -> int: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[Any] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...

class SparseMatrix:
    """A sparse matrix moved to a backend once; ``M @ v`` keeps a Vector on its device."""

    def __init__(
        self, A: Any, backend: Backend = "cpu", format: Format = "auto", dtype: Literal["float64", "float32"] = "float64"
    ) -> None: ...
    @property
    def shape(self) -> Tuple[int, int]: ...
    @property
    def nnz(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    def __matmul__(self, x: Union[Vector, npt.ArrayLike]) -> Any: ...

def from_dlpack(obj: Any, backend: Optional[Backend] = None) -> Vector:
    """A Vector from any ``__dlpack__`` object (a copy; the same object for a Vector)."""

def spmv(
    A: Any,
    x: Union[npt.ArrayLike, Vector],
    backend: Backend = "cpu",
    format: Format = "auto",
    precision: Precision = "f64",
) -> npt.NDArray[np.float64]: ...
def solve(
    A: Any,
    b: Union[npt.ArrayLike, Vector],
    solver: Solver = "cg",
    precond: Precond = "jacobi",
    precision: Precision = "f64",
    tol: float = 1e-8,
    max_iter: int = 1000,
    backend: Backend = "cpu",
    *,
    format: Format = "auto",
    restart: int = 30,
    block_size: int = 4,
    inner_tol: float = 1e-3,
    inner_max_iter: int = 200,
    amg_theta: float = 0.0,
    amg_smoother: Literal["chebyshev", "chebyshev4", "l1-jacobi"] = "chebyshev",
    amg_degree: int = 3,
    amg_cycle: Literal["v", "w"] = "v",
    amg_max_coarse: int = 500,
    amg_precision: Literal["same", "f32"] = "same",
    amg_improve_candidates: int = 2,
    warmup: bool = False,
) -> Tuple[npt.NDArray[np.float64], dict[str, Any]]: ...
def hdg_poisson(
    mesh: str = "square:16",
    degree: int = 3,
    *,
    tau: float = 1.0,
    lambda_: float = 0.0,
    rhs: Optional[str] = None,
    dirichlet: Optional[str] = None,
    exact: Optional[str] = None,
    flux: Optional[str] = None,
    neumann: Sequence[int] = (),
    diagonal: Literal["up", "down", "alternating"] = "up",
    seed: int = 1,
    untagged_as: Optional[int] = None,
    precision: Precision = "f64",
    precond: Literal["auto", "block-jacobi", "chebyshev", "amg"] = "auto",
    rtol: Optional[float] = None,
    max_iter: int = 20000,
    post_process: bool = True,
    backend: Backend = "cpu",
) -> dict[str, Any]: ...
def poisson_mg(
    dim: int = 2,
    degree: int = 3,
    levels: int = 5,
    *,
    solver: Literal["fmg", "cg", "gmres"] = "fmg",
    smoother: Literal["patch", "chebyshev"] = "patch",
    precision: Precision = "f64",
    rhs: Literal["sine", "one"] = "sine",
    tol: float = 1e-9,
    max_iter: int = 100,
    restart: int = 10,
    scatter: Literal["auto", "atomic", "colour"] = "auto",
    keep_solution: bool = True,
    backend: Backend = "cpu",
    patch_form: Literal["auto", "fused", "split"] = "auto",
) -> dict[str, Any]: ...
def maxwell(
    mesh: str = "box:4",
    order: int = 3,
    *,
    mode: Tuple[int, int, int] = (1, 1, 0),
    final_time: float = 0.5,
    cfl: float = 0.5,
    flux: Literal["upwind", "central"] = "upwind",
    precision: Literal["f64", "f32"] = "f64",
    perturbation: float = 0.0,
    absorbing: Sequence[int] = (),
    block: int = 256,
    energy_samples: int = 10,
    max_steps: int = 1000000,
    autotune: bool = False,
    keep_fields: bool = True,
    backend: Backend = "cpu",
) -> dict[str, Any]: ...
