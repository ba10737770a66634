//! Launching kernels: the launch configuration of the grid-stride kernels
//! ([`LaunchConfig`]), and [`Cube::launch`], which validates the first launch of each site.

use std::any::TypeId;
use std::hash::{Hash, Hasher};

use cubecl::prelude::*;

use crate::backend::core::BackendInfo;
use crate::backend::cube::{failures, Cube, CubeRuntime};
use crate::error::{Error, Result};

/// Launch parameters of the vector kernels. [`LaunchConfig::default_for`] picks them per
/// device; the bench example times alternatives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Units per cube (a power of two, at most the device limit).
    pub cube_dim: u32,
    /// Most cubes of an element-wise launch; larger vectors are covered by a grid-stride loop.
    pub max_cubes: u32,
    /// Most cubes of the first reduction pass (each writes one partial sum; a second
    /// one-cube pass adds the partials on the device).
    pub reduce_cubes: u32,
}

impl LaunchConfig {
    /// Defaults for a device with the given information.
    pub fn default_for(info: &BackendInfo) -> Self {
        let cube_dim = 256.min(info.max_units_per_cube.max(1)).next_power_of_two();
        LaunchConfig {
            cube_dim,
            max_cubes: info.max_cube_count.0.clamp(1, 65535),
            reduce_cubes: 8192,
        }
    }

    /// Cube count and dim of a grid-stride launch over `units` units (at most
    /// [`max_cubes`](Self::max_cubes) cubes; the kernel loops over the rest).
    pub(crate) fn grid(&self, units: usize) -> (CubeCount, CubeDim) {
        let cubes = units
            .div_ceil(self.cube_dim as usize)
            .clamp(1, self.max_cubes as usize);
        (
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(self.cube_dim),
        )
    }

    /// The first pass of a reduction over `units` units: the number of cubes (one partial
    /// each, at most [`reduce_cubes`](Self::reduce_cubes)), their count and dim.
    pub(crate) fn reduce(&self, units: usize) -> (usize, CubeCount, CubeDim) {
        let cubes = units
            .div_ceil(self.cube_dim as usize)
            .clamp(1, self.reduce_cubes as usize);
        (
            cubes,
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(self.cube_dim),
        )
    }
}

impl<R: CubeRuntime> Cube<R> {
    /// Submits queued work and reports any launch or compilation error since the last
    /// wait: the ones cubecl returns, and the expansion panics it only logs.
    pub(crate) fn flush(&self) -> Result<()> {
        let flushed = self.inner.client.flush().map_err(|e| self.device_error(e));
        self.expansion_panics()?;
        flushed
    }

    /// The kernel-expansion panics cubecl only logged since the last call, as an error.
    pub(super) fn expansion_panics(&self) -> Result<()> {
        let panics = failures::take();
        if !panics.is_empty() {
            return Err(Error::KernelCompilation {
                backend: self.info.to_string(),
                message: panics.join("; "),
            });
        }
        Ok(())
    }

    /// Runs `launch` (one kernel launch). The first time this launch site (the caller's
    /// source location) runs with the generic types `G` and the configuration `key`, the
    /// device is flushed right after and a failure to expand or compile the kernel is
    /// returned here; afterwards the launch only queues (a failure would be reported by the
    /// next wait, as any device error).
    ///
    /// # Errors
    /// [`Error::KernelCompilation`] or [`Error::Device`] on the validating launch.
    #[track_caller]
    pub(crate) fn launch<G: 'static>(&self, key: impl Hash, launch: impl FnOnce()) -> Result<()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::panic::Location::caller().hash(&mut hasher);
        TypeId::of::<G>().hash(&mut hasher);
        key.hash(&mut hasher);
        let id = hasher.finish();
        let known = self
            .inner
            .validated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id);
        launch();
        if known {
            return Ok(());
        }
        self.flush()?;
        self.inner
            .validated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id);
        Ok(())
    }
}

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tests {
    use super::*;
    use crate::backend::core::BackendCore;
    #[cfg(feature = "cuda")]
    use crate::backend::cube::Cuda;
    #[cfg(feature = "wgpu")]
    use crate::backend::cube::Wgpu;
    use crate::backend::cube::{on_test_device, CubeBuffer};

    /// Writes 1 everywhere, or (`broken`) panics while being expanded — as a kernel with a
    /// comptime error would.
    #[cube(launch_unchecked)]
    fn maybe_broken_kernel(out: &mut Array<f32>, #[comptime] broken: bool) {
        if broken {
            panic!("a deliberately broken kernel");
        }
        if ABSOLUTE_POS < out.len() {
            out[ABSOLUTE_POS] = 1.0;
        }
    }

    fn launch_maybe_broken<R: CubeRuntime>(
        backend: &Cube<R>,
        out: &mut CubeBuffer<f32>,
        broken: bool,
    ) -> Result<()> {
        backend.launch::<()>(broken, || {
            // SAFETY: one unit per padded element; the kernel checks the length.
            unsafe {
                maybe_broken_kernel::launch_unchecked::<R>(
                    backend.client(),
                    CubeCount::Static(1, 1, 1),
                    CubeDim::new_1d(out.padded_len() as u32),
                    out.arg(),
                    broken,
                )
            }
        })
    }

    /// A kernel whose expansion panics is an error of the launch, its output is left as it
    /// was, and the device goes on working.
    fn compile_failure_is_an_error<R: CubeRuntime>(backend: Cube<R>) {
        let mut out = backend.upload(&[7.0f32; 5]).unwrap();
        let err = launch_maybe_broken(&backend, &mut out, true).unwrap_err();
        assert!(
            matches!(&err, Error::KernelCompilation { message, .. }
                if message.contains("deliberately broken")),
            "{err}"
        );
        assert_eq!(backend.download(&out).unwrap(), [7.0; 5]);
        // Not cached as valid: a second try is an error again.
        assert!(launch_maybe_broken(&backend, &mut out, true).is_err());
        launch_maybe_broken(&backend, &mut out, false).unwrap();
        assert_eq!(backend.download(&out).unwrap(), [1.0; 5]);
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_compile_failure_is_an_error() {
        on_test_device("wgpu", Wgpu::new(), compile_failure_is_an_error);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn cuda_compile_failure_is_an_error() {
        on_test_device("cuda", Cuda::new(), compile_failure_is_an_error);
    }
}
