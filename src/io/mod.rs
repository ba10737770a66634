//! Output for visualisation: [`vtk`] writes unstructured grids with point and cell data for
//! ParaView (legacy `.vtk` or XML `.vtu`) from any mesh of the library.

pub mod vtk;
