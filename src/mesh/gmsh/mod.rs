//! Reader for Gmsh MSH files: versions 2.x and 4.1, ASCII, plain or gzip-compressed.
//!
//! ```text
//!  $MeshFormat            version, file type (0 = ASCII), data size
//!  $PhysicalNames         dim tag "name"                         (optional)
//!  $Entities              physical tags of each geometric entity (4.1 only)
//!  $Nodes                 2.x: tag x y z
//!                         4.1: blocks of tags, then their coordinates
//!  $Elements              2.x: tag type ntags tags... nodes...
//!                         4.1: blocks per entity and type: tag nodes...
//! ```
//!
//! Node tags may be any non-negative integers, in any order and with gaps: they are mapped
//! to 0-based point indices in file order. Cells keep Gmsh's node order. In 4.1 files a
//! cell's physical tag is the first physical tag of its entity (from `$Entities`); in 2.x
//! files it is the first tag of the element line and the elementary tag the second.
//! Other sections (`$Periodic`, `$NodeData`, `$Comments`, ...) are skipped. A 2.x file lists
//! an element once per physical group it belongs to; such repeats are kept as written.
//! The file is read line by line; compressed files are recognised by the gzip magic bytes.
//!
//! ```no_run
//! let mesh = galerkin::mesh::gmsh::read("bar.msh.gz")?;
//! println!("{} points, {} tetrahedra", mesh.points.len(), mesh.tets().len());
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};
use crate::mesh::Mesh;

/// Reads a Gmsh MSH file (2.x or 4.1 ASCII, optionally gzip-compressed).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Parse`] with the line number if it is
/// malformed, binary, of another MSH version, or has an element type other than Gmsh's
/// types 1-19.
pub fn read(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = File::open(path).map_err(|source| Error::Io {
        path: name.clone(),
        source,
    })?;
    read_from(file, &name)
}

/// Reads a Gmsh MSH file from `reader`; `name` is the path errors report.
///
/// # Errors
/// As [`read`].
pub fn read_from<R: Read>(reader: R, name: &str) -> Result<Mesh> {
    let mut reader = BufReader::new(reader);
    let head = reader.fill_buf().map_err(|source| Error::Io {
        path: name.to_string(),
        source,
    })?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let inflated = BufReader::new(flate2::bufread::MultiGzDecoder::new(reader));
        Parser::new(inflated, name).run()
    } else {
        Parser::new(reader, name).run()
    }
}

mod parser;
#[cfg(test)]
mod tests;

use parser::Parser;
