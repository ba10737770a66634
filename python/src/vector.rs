//! `galerkin.Vector`: a vector on a backend that speaks DLPack, and `galerkin.from_dlpack`.
//!
//! Export is zero-copy on the CPU and on CUDA: the capsule holds a reference to the Python
//! `Vector`, so the memory lives as long as the consumer's array. Memory that came from a
//! `Vector` comes back without a copy too: `from_dlpack` of a consumer's array that hands
//! back exactly an exported vector's memory (same address, device, length and dtype) returns
//! that vector. Any other memory is copied in (host to host, or device to device on CUDA):
//! cubecl 0.10 allocates every buffer it uses and cannot adopt memory another library
//! allocated.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::Mutex;

use galerkin::{BackendCore, Cpu, Element, Vector};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyWeakrefMethods, PyWeakrefReference};

use crate::{to_py, value_error};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyVector>()?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    Ok(())
}

/// DLPack's device types (`DLDeviceType`).
const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DL_VULKAN: i32 = 7;
/// DLPack's `kDLFloat`.
const DL_FLOAT: u8 = 2;

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

/// DLPack 1.0's `DLManagedTensorVersioned` (flags: read-only, copied; this package only
/// reads an imported tensor).
#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// What an exported capsule owns: the tensor (first, so a pointer to it is a pointer to
/// this), its shape, and the `Vector` whose memory it lends.
#[repr(C)]
struct Export {
    tensor: DlManagedTensor,
    shape: [i64; 1],
    owner: Py<PyAny>,
}

/// The DLPack deleter of an exported tensor: drops the reference to the `Vector`.
unsafe extern "C" fn delete_export(tensor: *mut DlManagedTensor) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: `tensor` came from `Box::<Export>::into_raw` in `__dlpack__` (its first field),
    // and DLPack calls the deleter once.
    let export = unsafe { Box::from_raw(tensor.cast::<Export>()) };
    Python::attach(move |_| drop(export));
}

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The capsule's destructor: deletes the tensor unless a consumer took it (and renamed the
/// capsule).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a capsule; the name is checked before the pointer is
    // used.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let tensor = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr());
            let tensor = tensor.cast::<DlManagedTensor>();
            if let Some(delete) = (*tensor).deleter {
                delete(tensor);
            }
        } else {
            ffi::PyErr_Clear();
        }
    }
}

/// What a capsule lent: the memory's address, DLPack device type, length and bits, and a weak
/// reference to the `Vector` that owns it.
struct Lent {
    address: u64,
    device_type: i32,
    len: usize,
    bits: u8,
    owner: Py<PyWeakrefReference>,
}

/// Every vector exported and still alive (dead entries are dropped as new ones come).
static LENT: Mutex<Vec<Lent>> = Mutex::new(Vec::new());

/// Records an export of `vector`'s memory.
fn lend(vector: &Bound<'_, PyVector>, device: DlDevice, address: u64) -> PyResult<()> {
    let this = vector.get();
    let owner = PyWeakrefReference::new(vector.as_any())?.unbind();
    let py = vector.py();
    let mut lent = LENT.lock().unwrap_or_else(|e| e.into_inner());
    lent.retain(|l| l.owner.bind(py).upgrade().is_some());
    if !lent
        .iter()
        .any(|l| l.address == address && l.device_type == device.device_type)
    {
        lent.push(Lent {
            address,
            device_type: device.device_type,
            len: this.len(),
            bits: this.bits(),
            owner,
        });
    }
    Ok(())
}

/// The live vector whose memory is exactly this, if one was exported.
fn lender<'py>(
    py: Python<'py>,
    address: u64,
    device_type: i32,
    len: usize,
    bits: u8,
) -> Option<Bound<'py, PyAny>> {
    let lent = LENT.lock().unwrap_or_else(|e| e.into_inner());
    lent.iter()
        .filter(|l| (l.address, l.device_type, l.len, l.bits) == (address, device_type, len, bits))
        .find_map(|l| l.owner.bind(py).upgrade())
}

/// The vector on its backend, in its precision.
pub(crate) enum Inner {
    CpuF64(Vector<Cpu, f64>),
    CpuF32(Vector<Cpu, f32>),
    #[cfg(feature = "wgpu")]
    WgpuF64(Vector<galerkin::Wgpu, f64>),
    #[cfg(feature = "wgpu")]
    WgpuF32(Vector<galerkin::Wgpu, f32>),
    #[cfg(feature = "cuda")]
    CudaF64(Vector<galerkin::Cuda, f64>),
    #[cfg(feature = "cuda")]
    CudaF32(Vector<galerkin::Cuda, f32>),
}

/// Runs `$body` with `$v` bound to the vector, whatever its backend and precision.
macro_rules! each {
    ($inner:expr, $v:ident => $body:expr) => {
        match $inner {
            Inner::CpuF64($v) => $body,
            Inner::CpuF32($v) => $body,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF64($v) => $body,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF32($v) => $body,
            #[cfg(feature = "cuda")]
            Inner::CudaF64($v) => $body,
            #[cfg(feature = "cuda")]
            Inner::CudaF32($v) => $body,
        }
    };
}

/// A vector of float64 or float32 values on a backend (`"cpu"`, `"wgpu"`, `"cuda"`).
///
/// `Vector(array, backend="cpu", dtype="float64")` copies a 1-D array to the backend;
/// `to_numpy()` copies it back. On the CPU and on CUDA the vector speaks DLPack without a
/// copy: `torch.from_dlpack(v)`, `cupy.from_dlpack(v)`, `numpy.from_dlpack(v)` (CPU) see the
/// same memory, kept alive as long as they need it.
#[pyclass(name = "Vector", module = "galerkin", frozen, weakref)]
pub(crate) struct PyVector {
    pub(crate) inner: Inner,
}

fn dtype_bits(dtype: &str) -> PyResult<u8> {
    match dtype {
        "float64" | "f64" | "double" => Ok(64),
        "float32" | "f32" | "single" => Ok(32),
        _ => Err(value_error(
            "dtype",
            format!("unknown dtype `{dtype}`: expected float64 or float32"),
        )),
    }
}

fn make(backend: &str, bits: u8, data: &[f64]) -> galerkin::Result<Inner> {
    fn up<B: BackendCore, T: Element>(b: &B, data: &[f64]) -> galerkin::Result<Vector<B, T>> {
        let v: Vec<T> = data.iter().map(|&x| T::from_f64(x)).collect();
        Vector::from_slice(b, &v)
    }
    let kind: galerkin::BackendKind = backend.parse()?;
    Ok(match (kind, bits) {
        (galerkin::BackendKind::Cpu, 64) => Inner::CpuF64(up(&Cpu::new(), data)?),
        (galerkin::BackendKind::Cpu, _) => Inner::CpuF32(up(&Cpu::new(), data)?),
        #[cfg(feature = "wgpu")]
        (galerkin::BackendKind::Wgpu, 64) => Inner::WgpuF64(up(&galerkin::Wgpu::new()?, data)?),
        #[cfg(feature = "wgpu")]
        (galerkin::BackendKind::Wgpu, _) => Inner::WgpuF32(up(&galerkin::Wgpu::new()?, data)?),
        #[cfg(feature = "cuda")]
        (galerkin::BackendKind::Cuda, 64) => Inner::CudaF64(up(&galerkin::Cuda::new()?, data)?),
        #[cfg(feature = "cuda")]
        (galerkin::BackendKind::Cuda, _) => Inner::CudaF32(up(&galerkin::Cuda::new()?, data)?),
        #[allow(unreachable_patterns)]
        (other, _) => {
            return Err(galerkin::Error::BackendUnavailable {
                backend: other.name().to_string(),
                reason: "not compiled into this build of the Python package".into(),
            })
        }
    })
}

impl PyVector {
    fn bits(&self) -> u8 {
        match &self.inner {
            Inner::CpuF64(_) => 64,
            Inner::CpuF32(_) => 32,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF64(_) => 64,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF32(_) => 32,
            #[cfg(feature = "cuda")]
            Inner::CudaF64(_) => 64,
            #[cfg(feature = "cuda")]
            Inner::CudaF32(_) => 32,
        }
    }

    pub(crate) fn dtype_name(&self) -> &'static str {
        if self.bits() == 64 {
            "float64"
        } else {
            "float32"
        }
    }

    pub(crate) fn backend_name(&self) -> &'static str {
        each!(&self.inner, v => v.backend().info().kind.name())
    }

    fn len(&self) -> usize {
        each!(&self.inner, v => v.len())
    }

    /// The device and the address of the values, for DLPack.
    fn device_and_pointer(&self) -> PyResult<(DlDevice, u64)> {
        let cpu = |p: *const c_void| {
            (
                DlDevice {
                    device_type: DL_CPU,
                    device_id: 0,
                },
                p as u64,
            )
        };
        match &self.inner {
            Inner::CpuF64(v) => Ok(cpu(v.buffer().map_err(to_py)?.as_ptr().cast())),
            Inner::CpuF32(v) => Ok(cpu(v.buffer().map_err(to_py)?.as_ptr().cast())),
            #[cfg(feature = "cuda")]
            Inner::CudaF64(v) => Ok((
                cuda_device(v.backend()),
                v.cuda_device_pointer().map_err(to_py)?,
            )),
            #[cfg(feature = "cuda")]
            Inner::CudaF32(v) => Ok((
                cuda_device(v.backend()),
                v.cuda_device_pointer().map_err(to_py)?,
            )),
            #[allow(unreachable_patterns)]
            _ => Err(PyBufferError::new_err(format!(
                "a {} vector has no DLPack export (its buffers are not addressable by other \
                 libraries): use to_numpy()",
                self.backend_name()
            ))),
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_device(_: &galerkin::Cuda) -> DlDevice {
    // The package's cuda backend is `Cuda::new()`: device 0.
    DlDevice {
        device_type: DL_CUDA,
        device_id: 0,
    }
}

#[pymethods]
impl PyVector {
    #[new]
    #[pyo3(signature = (data, backend="cpu", dtype="float64"))]
    fn new(py: Python<'_>, data: &Bound<'_, PyAny>, backend: &str, dtype: &str) -> PyResult<Self> {
        let bits = dtype_bits(dtype)?;
        let array = py
            .import("numpy")?
            .call_method1("ascontiguousarray", (data, "float64"))?;
        let array = array
            .cast::<PyArray1<f64>>()
            .map_err(|_| value_error("data", "a vector needs a 1-D array of real numbers"))?;
        let data = array.readonly().as_slice()?.to_vec();
        let inner = py.detach(|| make(backend, bits, &data)).map_err(to_py)?;
        Ok(PyVector { inner })
    }

    /// The values, copied to a NumPy array of the vector's dtype.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.bits() == 64 {
            let v: Vec<f64> = py
                .detach(|| each!(&self.inner, v => v.to_vec().map(|x| x.iter().map(|e| e.as_f64()).collect())))
                .map_err(to_py)?;
            Ok(PyArray1::from_vec(py, v).into_any())
        } else {
            let v: Vec<f32> = py
                .detach(|| each!(&self.inner, v => v.to_vec().map(|x| x.iter().map(|e| e.as_f64() as f32).collect())))
                .map_err(to_py)?;
            Ok(PyArray1::from_vec(py, v).into_any())
        }
    }

    /// `"cpu"`, `"wgpu"` or `"cuda"`.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend_name()
    }

    /// `"float64"` or `"float32"`.
    #[getter]
    fn dtype(&self) -> &'static str {
        if self.bits() == 64 {
            "float64"
        } else {
            "float32"
        }
    }

    /// `(len,)`.
    #[getter]
    fn shape(&self) -> (usize,) {
        (self.len(),)
    }

    /// The address of the values (host or CUDA device), after the device has finished the
    /// work queued on it: what a DLPack consumer sees.
    #[getter]
    fn data_ptr(&self) -> PyResult<u64> {
        Ok(self.device_and_pointer()?.1)
    }

    fn __len__(&self) -> usize {
        self.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "galerkin.Vector(len={}, dtype={}, backend={})",
            self.len(),
            self.dtype(),
            self.backend_name()
        )
    }

    /// `(device_type, device_id)` of DLPack: `(1, 0)` CPU, `(2, id)` CUDA, `(7, 0)` wgpu.
    fn __dlpack_device__(&self) -> (i32, i32) {
        match &self.inner {
            Inner::CpuF64(_) | Inner::CpuF32(_) => (DL_CPU, 0),
            #[cfg(feature = "cuda")]
            Inner::CudaF64(v) => (DL_CUDA, cuda_device(v.backend()).device_id),
            #[cfg(feature = "cuda")]
            Inner::CudaF32(v) => (DL_CUDA, cuda_device(v.backend()).device_id),
            #[allow(unreachable_patterns)]
            _ => (DL_VULKAN, 0),
        }
    }

    /// A DLPack capsule of the values, without a copy (CPU and CUDA). The device has
    /// finished the library's work on the vector when it returns, so any consumer stream may
    /// read it. `copy=True` is refused (use `to_numpy()`), as is a `dl_device` other than
    /// the vector's.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = (stream, max_version);
        let py = slf.py();
        let this = slf.get();
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "galerkin.Vector exports without a copy only: use to_numpy() for a copy",
            ));
        }
        let (device, pointer) = this.device_and_pointer()?;
        if let Some((t, id)) = dl_device {
            if (t, id) != (device.device_type, device.device_id) {
                return Err(PyBufferError::new_err(format!(
                    "the vector lives on DLPack device ({}, {}), not ({t}, {id})",
                    device.device_type, device.device_id
                )));
            }
        }
        if this.len() > 0 {
            lend(slf, device, pointer)?;
        }
        let export = Box::new(Export {
            tensor: DlManagedTensor {
                dl_tensor: DlTensor {
                    data: pointer as *mut c_void,
                    device,
                    ndim: 1,
                    dtype: DlDataType {
                        code: DL_FLOAT,
                        bits: this.bits(),
                        lanes: 1,
                    },
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_export),
            },
            shape: [this.len() as i64],
            owner: slf.clone().into_any().unbind(),
        });
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is a live Box; the shape lives in it as long as the tensor does.
        unsafe {
            (*raw).tensor.dl_tensor.shape = (*raw).shape.as_mut_ptr();
        }
        let tensor = NonNull::new(raw.cast::<c_void>()).expect("Box::into_raw is not null");
        // SAFETY: the capsule holds the tensor; `capsule_destructor` frees it unless a
        // consumer renamed the capsule (and then calls the deleter itself).
        let capsule = unsafe {
            PyCapsule::new_with_pointer_and_destructor(
                py,
                tensor,
                DLTENSOR,
                Some(capsule_destructor),
            )
        };
        if capsule.is_err() {
            // SAFETY: no capsule owns the tensor.
            unsafe { delete_export(raw.cast()) };
        }
        capsule
    }
}

/// A `galerkin.Vector` from any object with `__dlpack__` (NumPy, PyTorch, CuPy, JAX): the
/// same object for a `galerkin.Vector`, else a copy — host memory to `backend` (default
/// `"cpu"`), CUDA memory device to device on the `"cuda"` backend. 1-D contiguous float32 or
/// float64 only.
#[pyfunction]
#[pyo3(signature = (obj, backend=None))]
fn from_dlpack<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(v) = obj.cast::<PyVector>() {
        if backend.is_none_or(|b| b == v.get().backend_name()) {
            return Ok(v.clone().into_any());
        }
    }
    if !obj.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "{} has no __dlpack__",
            obj.get_type().name()?
        )));
    }
    // CUDA producers make the data ready for the legacy default stream (DLPack's `1`), on
    // which the device-to-device copy runs.
    let cuda = obj.hasattr("__dlpack_device__")?
        && obj
            .call_method0("__dlpack_device__")?
            .extract::<(i32, i32)>()
            .is_ok_and(|(t, _)| t == DL_CUDA);
    // DLPack 1.0 first (NumPy exports read-only arrays only so), the legacy protocol if the
    // producer does not take `max_version`.
    let kwargs = pyo3::types::PyDict::new(py);
    if cuda {
        kwargs.set_item("stream", 1)?;
    }
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__dlpack__ did not return a capsule"))?;
    let raw = capsule.as_ptr();
    // SAFETY: the capsule's name is checked before its pointer is read: a "dltensor" capsule
    // holds a DLManagedTensor, a "dltensor_versioned" one a DLManagedTensorVersioned, by the
    // DLPack protocol. Renamed, the capsule's destructor leaves the tensor to us, and we
    // delete it once, after the copy.
    let result = unsafe {
        if ffi::PyCapsule_IsValid(raw, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let tensor = ffi::PyCapsule_GetPointer(raw, DLTENSOR_VERSIONED.as_ptr())
                .cast::<DlManagedTensorVersioned>();
            ffi::PyCapsule_SetName(raw, USED_DLTENSOR_VERSIONED.as_ptr());
            let result = if (*tensor).version.major == 1 {
                import(py, &(*tensor).dl_tensor, backend)
            } else {
                Err(value_error(
                    "from_dlpack",
                    format!("DLPack version {} is not 1.x", (*tensor).version.major),
                ))
            };
            if let Some(delete) = (*tensor).deleter {
                delete(tensor);
            }
            result
        } else if ffi::PyCapsule_IsValid(raw, DLTENSOR.as_ptr()) == 1 {
            let tensor =
                ffi::PyCapsule_GetPointer(raw, DLTENSOR.as_ptr()).cast::<DlManagedTensor>();
            ffi::PyCapsule_SetName(raw, USED_DLTENSOR.as_ptr());
            let result = import(py, &(*tensor).dl_tensor, backend);
            if let Some(delete) = (*tensor).deleter {
                delete(tensor);
            }
            result
        } else {
            ffi::PyErr_Clear();
            return Err(PyTypeError::new_err(
                "__dlpack__ returned a capsule that is not an unused \"dltensor\"",
            ));
        }
    };
    match result? {
        Imported::Same(v) => Ok(v),
        Imported::New(v) => Ok(Bound::new(py, v)?.into_any()),
    }
}

/// What `from_dlpack` found: an exported vector's own memory, or a copy.
enum Imported<'py> {
    Same(Bound<'py, PyAny>),
    New(PyVector),
}

/// The vector whose memory the tensor is, or a copy of the tensor in a new vector.
///
/// # Safety
/// `t` is a live DLPack tensor (its deleter has not run).
unsafe fn import<'py>(
    py: Python<'py>,
    t: &DlTensor,
    backend: Option<&str>,
) -> PyResult<Imported<'py>> {
    if t.ndim != 1 {
        return Err(value_error(
            "from_dlpack",
            format!("{} dimensions: only 1-D arrays", t.ndim),
        ));
    }
    // SAFETY: `shape` holds `ndim` entries; `strides` too where it is not null.
    let (len, stride) = unsafe { (*t.shape, (!t.strides.is_null()).then(|| *t.strides)) };
    if len < 0 {
        return Err(value_error("from_dlpack", format!("length {len}")));
    }
    if stride.is_some_and(|s| s != 1) && len > 1 {
        return Err(value_error(
            "from_dlpack",
            format!("stride {}: only contiguous arrays", stride.unwrap_or(1)),
        ));
    }
    if t.dtype.code != DL_FLOAT || t.dtype.lanes != 1 || !matches!(t.dtype.bits, 32 | 64) {
        return Err(value_error(
            "from_dlpack",
            format!(
                "dtype code {} with {} bits: only float32 and float64",
                t.dtype.code, t.dtype.bits
            ),
        ));
    }
    let len = len as usize;
    let bits = t.dtype.bits;
    let address = (t.data as u64).wrapping_add(t.byte_offset);
    if len > 0 {
        if let Some(v) = lender(py, address, t.device.device_type, len, bits) {
            if backend.is_none_or(|b| {
                v.cast::<PyVector>()
                    .is_ok_and(|v| v.get().backend_name() == b)
            }) {
                return Ok(Imported::Same(v));
            }
        }
    }
    match t.device.device_type {
        DL_CPU => {
            // SAFETY: a CPU tensor of `len` contiguous values of the given width.
            let values: Vec<f64> = unsafe {
                if bits == 64 {
                    std::slice::from_raw_parts(address as *const f64, len).to_vec()
                } else {
                    std::slice::from_raw_parts(address as *const f32, len)
                        .iter()
                        .map(|&v| v as f64)
                        .collect()
                }
            };
            let backend = backend.unwrap_or("cpu");
            let inner = py.detach(|| make(backend, bits, &values)).map_err(to_py)?;
            Ok(Imported::New(PyVector { inner }))
        }
        DL_CUDA => {
            import_cuda(py, address, len, bits, t.device.device_id, backend).map(Imported::New)
        }
        other => Err(value_error(
            "from_dlpack",
            format!("DLPack device type {other}: only CPU (1) and CUDA (2) memory"),
        )),
    }
}

#[cfg(feature = "cuda")]
fn import_cuda(
    py: Python<'_>,
    address: u64,
    len: usize,
    bits: u8,
    device_id: i32,
    backend: Option<&str>,
) -> PyResult<PyVector> {
    if backend.is_some_and(|b| b != "cuda") {
        return Err(value_error(
            "backend",
            "CUDA memory goes to the cuda backend (copy it to the host first for another)",
        ));
    }
    py.detach(|| -> galerkin::Result<PyVector> {
        let cuda = galerkin::Cuda::new()?;
        if device_id != cuda_device(&cuda).device_id {
            return Err(galerkin::Error::InvalidArgument {
                op: "from_dlpack",
                name: "obj",
                reason: format!(
                    "memory on CUDA device {device_id}, but the cuda backend runs on device 0"
                ),
            });
        }
        // SAFETY: the producer's tensor: `len` values on this device, ready for the legacy
        // default stream (DLPack's contract for a consumer that passes no stream).
        let inner = if bits == 64 {
            let mut v = Vector::<galerkin::Cuda, f64>::zeros(&cuda, len)?;
            unsafe { v.copy_from_cuda_pointer(address)? };
            Inner::CudaF64(v)
        } else {
            let mut v = Vector::<galerkin::Cuda, f32>::zeros(&cuda, len)?;
            unsafe { v.copy_from_cuda_pointer(address)? };
            Inner::CudaF32(v)
        };
        Ok(PyVector { inner })
    })
    .map_err(to_py)
}

#[cfg(not(feature = "cuda"))]
fn import_cuda(
    _: Python<'_>,
    _: u64,
    _: usize,
    _: u8,
    _: i32,
    _: Option<&str>,
) -> PyResult<PyVector> {
    Err(pyo3::exceptions::PyRuntimeError::new_err(
        "CUDA memory needs the cuda backend: build the package with --features cuda",
    ))
}
