//! The device-to-device exchange a halo route can take ([`DeviceHalo`], implemented by the
//! CUDA backend's NCCL communicator), apart from the communicator that caches it and the
//! routes that choose it.

use std::any::Any;

use crate::error::Result;

pub(crate) use crate::backend::Run;

/// A device-to-device exchange between the ranks' devices (NCCL on CUDA).
pub(crate) trait DeviceHalo {
    /// Posts the sends of `send`'s runs and the receives into `recv`'s runs (device vectors
    /// of the backend the exchange was made for, `Vector<B, S>` as `dyn Any`), after the work
    /// queued so far; returns at once.
    fn start(
        &self,
        send: Option<&dyn Any>,
        sends: &[Run],
        recv: Option<&dyn Any>,
        recvs: &[Run],
    ) -> Result<()>;
    /// Waits for the exchange posted by `start`.
    fn finish(&self) -> Result<()>;
    /// What carries the exchange (`"NCCL 2.28.3 (libnccl.so.2)"`).
    fn describe(&self) -> String;
}
