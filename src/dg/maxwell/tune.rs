//! [`Maxwell::autotune`]: the launch parameters timed on the device, cached per device,
//! order and precision for the process.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::backend::core::BackendKind;
use crate::bundle::Backend;
use crate::dg::ops::DgOps;
use crate::error::Result;
use crate::scalar::{DType, Scalar};

use super::super::ops::DgParams;
use super::Maxwell;

/// Autotuned parameters by (device, order, precision).
type TuneKey = (String, usize, DType);

fn tune_cache() -> &'static Mutex<HashMap<TuneKey, DgParams>> {
    static CACHE: OnceLock<Mutex<HashMap<TuneKey, DgParams>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

impl<B: Backend + DgOps, T: Scalar> Maxwell<B, T> {
    /// Times the candidate launch parameters (elements per cube; fused with 1, 2 or 4
    /// elements per unit, the operators read through the cache or from shared memory where
    /// they fit, or four kernels) on the device with stages of `dt = 0` (the fields
    /// do not change), keeps the fastest and caches it per device, order and precision: a
    /// second call (or another `Maxwell` of the same order and precision on the same device)
    /// returns the cached choice.
    ///
    /// # Errors
    /// Device errors.
    pub fn autotune(&mut self) -> Result<DgParams> {
        let key = (
            format!("{}", self.backend.info()),
            self.mesh.shape.order,
            T::DTYPE,
        );
        let cached = tune_cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some(p) = cached.filter(|&p| self.backend.dg_params_fit::<T>(self.mesh.shape, p)) {
            self.params = p;
            return Ok(p);
        }
        if self.backend.kind() == BackendKind::Cpu {
            // The CPU kernels take no launch parameters: nothing to time.
            return Ok(self.params);
        }
        let saved = self.params;
        self.res.fill(T::from_f64(0.0))?;
        let mut best: Option<(f64, DgParams)> = None;
        let candidates = [
            (true, 1, false),
            (true, 2, false),
            (true, 4, false),
            (true, 1, true),
            (true, 2, true),
            (true, 4, true),
            (false, 1, false),
        ];
        for (fused, epu, shared_operators) in candidates {
            for epc in [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64] {
                let p = DgParams {
                    elements_per_cube: epc,
                    elements_per_unit: epu,
                    fused,
                    shared_operators,
                };
                if !self.backend.dg_params_fit::<T>(self.mesh.shape, p) {
                    continue;
                }
                self.params = p;
                self.stage([0.0, 1.0, 0.0])?;
                self.backend.synchronize()?;
                let start = Instant::now();
                let reps = 5;
                for _ in 0..reps {
                    self.stage([0.0, 1.0, 0.0])?;
                }
                self.backend.synchronize()?;
                let t = start.elapsed().as_secs_f64() / reps as f64;
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, p));
                }
            }
        }
        let p = best.map(|b| b.1).unwrap_or(saved);
        self.params = p;
        tune_cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, p);
        Ok(p)
    }
}
