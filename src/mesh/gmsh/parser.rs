//! The line-by-line MSH parser behind [`read`](super::read): header, physical names, nodes
//! and elements of MSH 2.2 and 4.1, with line-numbered errors.

use std::collections::HashMap;
use std::io::BufRead;
use std::str::{FromStr, SplitAsciiWhitespace};

use crate::error::{Error, Result};
use crate::mesh::{CellBlock, CellKind, Mesh, PhysicalName};

/// Points reserved at most before the nodes are read, whatever the header declares.
const POINT_PREALLOCATION_CAP: u64 = 1 << 24;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V2,
    V41,
}

/// Maps Gmsh node tags to 0-based point indices: a table for small tags, a hash map for
/// the rest, so that sparse huge tags cost no memory and dense ones no hashing.
struct NodeMap {
    dense: Vec<u32>,
    dense_limit: u64,
    sparse: HashMap<u64, u32>,
}

impl NodeMap {
    const NONE: u32 = u32::MAX;

    fn new() -> Self {
        NodeMap {
            dense: Vec::new(),
            dense_limit: 0,
            sparse: HashMap::new(),
        }
    }

    fn expect(&mut self, count: u64) {
        self.dense_limit = self
            .dense_limit
            .max(count.saturating_mul(2).saturating_add(1024));
    }

    /// Inserts; returns false if the tag was already present. A tag goes into the dense
    /// table only while the table stays within twice the nodes inserted so far (plus 2²⁰):
    /// a header that declares billions of nodes, or one huge tag, must not allocate
    /// gigabytes for a file that holds a few.
    fn insert(&mut self, tag: u64, index: u32) -> bool {
        let earned = 2 * u64::from(index) + (1 << 20);
        if tag < self.dense_limit.min(earned) {
            if self.sparse.contains_key(&tag) {
                return false;
            }
            let t = tag as usize;
            if t >= self.dense.len() {
                self.dense.resize(t + 1, Self::NONE);
            }
            std::mem::replace(&mut self.dense[t], index) == Self::NONE
        } else {
            self.sparse.insert(tag, index).is_none()
        }
    }

    fn get(&self, tag: u64) -> Option<u32> {
        match self.dense.get(tag as usize) {
            Some(&i) if i != Self::NONE => Some(i),
            _ => self.sparse.get(&tag).copied(),
        }
    }
}

/// At most 60 characters of `s`, for messages.
fn truncate(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(60).collect::<String>())
    }
}

pub(super) struct Parser<R> {
    reader: R,
    path: String,
    line: u64,
    buf: String,
    version: Option<Version>,
    mesh: Mesh,
    nodes: NodeMap,
    /// First physical tag of each entity `(dim, tag)` (4.1 `$Entities`).
    entity_physical: HashMap<(u8, i32), i32>,
    /// Index into `mesh.blocks` of each kind's block.
    block_of: HashMap<CellKind, usize>,
    seen: Vec<String>,
}

impl<R: BufRead> Parser<R> {
    pub(super) fn new(reader: R, path: &str) -> Self {
        Parser {
            reader,
            path: path.to_string(),
            line: 0,
            buf: String::new(),
            version: None,
            mesh: Mesh::default(),
            nodes: NodeMap::new(),
            entity_physical: HashMap::new(),
            block_of: HashMap::new(),
            seen: Vec::new(),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::Parse {
            path: self.path.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    /// Reads the next line into `buf`; false at the end of the file. Lines are at most
    /// [`MAX_LINE_BYTES`](crate::limits::MAX_LINE_BYTES) long.
    fn advance(&mut self) -> Result<bool> {
        use crate::limits::{read_line, LineError, MAX_LINE_BYTES};
        self.buf.clear();
        let mut bytes = std::mem::take(&mut self.buf).into_bytes();
        match read_line(&mut self.reader, &mut bytes, MAX_LINE_BYTES) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line += 1;
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        self.buf = text;
                        Ok(true)
                    }
                    Err(_) => Err(self.error("the line is not valid UTF-8 text (a binary file?)")),
                }
            }
            Err(LineError::TooLong) => {
                self.line += 1;
                Err(self.error(format!(
                    "the line is longer than {MAX_LINE_BYTES} bytes (not a Gmsh file?)"
                )))
            }
            Err(LineError::Io(source)) => Err(Error::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// The current line without surrounding whitespace.
    fn text(&self) -> &str {
        self.buf.trim()
    }

    /// Reads the next line, or fails saying the file ends while reading `what`.
    fn expect_line(&mut self, what: &str) -> Result<()> {
        if self.advance()? {
            Ok(())
        } else {
            Err(self.error(format!("the file ends while reading {what}")))
        }
    }

    /// Reads the next line and checks it is not a section marker (which means a count
    /// in the section's header was larger than its contents).
    fn expect_data(&mut self, what: &str) -> Result<()> {
        self.expect_line(what)?;
        if self.text().starts_with('$') {
            return Err(self.error(format!(
                "expected {what}, found `{}`: the section has fewer entries than its header declares",
                self.text()
            )));
        }
        Ok(())
    }

    pub(super) fn run(mut self) -> Result<Mesh> {
        while self.advance()? {
            let text = self.text();
            if text.is_empty() {
                continue;
            }
            let Some(section) = text.strip_prefix('$') else {
                return Err(self.error(format!(
                    "expected a section header such as `$Nodes`, found `{}`",
                    truncate(text)
                )));
            };
            let section = section.to_string();
            if self.version.is_none() && section != "MeshFormat" {
                return Err(self.error(format!(
                    "expected `$MeshFormat` first, found `${section}`: not a Gmsh MSH file"
                )));
            }
            // Sections parsed here; any other (including 2.x `$Entities`) is skipped.
            let known = match section.as_str() {
                "MeshFormat" | "PhysicalNames" | "Nodes" | "Elements" => true,
                "Entities" => self.version == Some(Version::V41),
                _ => false,
            };
            if known && self.seen.contains(&section) {
                return Err(self.error(format!("a second `${section}` section")));
            }
            let start = self.line;
            match section.as_str() {
                _ if !known => {}
                "MeshFormat" => self.format()?,
                "PhysicalNames" => self.physical_names()?,
                "Entities" => self.entities()?,
                "Nodes" => self.read_nodes()?,
                _ => self.elements()?,
            }
            if known {
                self.seen.push(section.clone());
            }
            self.end_of(&section, start, known)?;
        }
        if self.version.is_none() {
            return Err(self.error("no `$MeshFormat` section: not a Gmsh MSH file"));
        }
        Ok(self.mesh)
    }

    /// Consumes the rest of section `name` up to `$End<name>`: nothing may remain in a
    /// known section; unknown sections are skipped.
    fn end_of(&mut self, name: &str, start: u64, known: bool) -> Result<()> {
        let end = format!("$End{name}");
        loop {
            if !self.advance()? {
                return Err(self.error(format!(
                    "the file ends inside `${name}` (opened at line {start}): `{end}` is missing"
                )));
            }
            let text = self.text();
            if text == end {
                return Ok(());
            }
            if known && !text.is_empty() {
                return Err(self.error(format!(
                    "expected `{end}`, found `{}`: the section has more entries than its header declares",
                    truncate(text)
                )));
            }
        }
    }

    fn format(&mut self) -> Result<()> {
        self.expect_data("the format line `version file-type data-size`")?;
        let mut tokens = self.text().split_ascii_whitespace();
        let version = tokens.next().unwrap_or("").to_string();
        let file_type: u32 = self.parse(tokens.next(), "the file type (0 = ASCII)")?;
        let _data_size: u32 = self.parse(tokens.next(), "the data size")?;
        if file_type != 0 {
            return Err(self.error(
                "binary MSH files are not supported: save the mesh as ASCII \
                 (Gmsh option Mesh.Binary = 0)",
            ));
        }
        self.version = Some(match version.as_str() {
            "2" | "2.0" | "2.1" | "2.2" => Version::V2,
            "4.1" => Version::V41,
            v => {
                return Err(self.error(format!(
                    "MSH version {v} is not supported: only 2.x and 4.1 (ASCII) are"
                )))
            }
        });
        Ok(())
    }

    fn physical_names(&mut self) -> Result<()> {
        let count = self.count_line("the number of physical names")?;
        for _ in 0..count {
            self.expect_data("a physical name `dim tag \"name\"`")?;
            let text = self.text();
            let mut tokens = text.splitn(3, |c: char| c.is_ascii_whitespace());
            let dim: u8 = self.parse(tokens.next(), "the dimension of a physical name")?;
            let tag: i32 = self.parse(tokens.next(), "the tag of a physical name")?;
            let name = tokens.next().unwrap_or("").trim();
            let name = name.strip_prefix('"').unwrap_or(name);
            let name = name.strip_suffix('"').unwrap_or(name).to_string();
            self.mesh
                .physical_names
                .push(PhysicalName { dim, tag, name });
        }
        Ok(())
    }

    /// 4.1 `$Entities`: only the physical tags are kept.
    fn entities(&mut self) -> Result<()> {
        self.expect_data("the entity counts")?;
        let mut tokens = self.text().split_ascii_whitespace();
        let mut counts = [0u64; 4];
        for c in &mut counts {
            *c = self.parse(tokens.next(), "an entity count")?;
        }
        self.no_more(tokens)?;
        for (dim, &count) in counts.iter().enumerate() {
            for _ in 0..count {
                self.expect_data("an entity")?;
                let mut tokens = self.text().split_ascii_whitespace();
                let tag: i32 = self.parse(tokens.next(), "the entity tag")?;
                // Points have x y z; curves, surfaces and volumes a bounding box.
                let coords = if dim == 0 { 3 } else { 6 };
                for _ in 0..coords {
                    let _: f64 = self.parse(tokens.next(), "an entity coordinate")?;
                }
                let nphysical: usize = self.parse(tokens.next(), "the number of physical tags")?;
                let mut first = None;
                for _ in 0..nphysical {
                    let physical: i32 = self.parse(tokens.next(), "a physical tag")?;
                    first = first.or(Some(physical));
                }
                if dim > 0 {
                    let nbounding: usize =
                        self.parse(tokens.next(), "the number of bounding entities")?;
                    for _ in 0..nbounding {
                        let _: i32 = self.parse(tokens.next(), "a bounding entity tag")?;
                    }
                }
                self.no_more(tokens)?;
                if let Some(physical) = first {
                    self.entity_physical.insert((dim as u8, tag), physical);
                }
            }
        }
        Ok(())
    }

    fn read_nodes(&mut self) -> Result<()> {
        match self.version {
            Some(Version::V2) => {
                let count = self.count_line("the number of nodes")?;
                self.reserve_points(count)?;
                for _ in 0..count {
                    self.expect_data("a node `tag x y z`")?;
                    let mut tokens = self.text().split_ascii_whitespace();
                    let tag: u64 = self.parse(tokens.next(), "a node tag")?;
                    let point = self.coordinates(&mut tokens)?;
                    self.no_more(tokens)?;
                    self.add_node(tag, point)?;
                }
            }
            _ => {
                self.expect_data("the node counts `blocks nodes min-tag max-tag`")?;
                let mut tokens = self.text().split_ascii_whitespace();
                let blocks: u64 = self.parse(tokens.next(), "the number of node blocks")?;
                let count: u64 = self.parse(tokens.next(), "the number of nodes")?;
                let _min: u64 = self.parse(tokens.next(), "the smallest node tag")?;
                let max: u64 = self.parse(tokens.next(), "the largest node tag")?;
                self.no_more(tokens)?;
                self.reserve_points(count)?;
                if max <= count.saturating_mul(2) {
                    self.nodes.expect(max);
                }
                let mut read = 0u64;
                let mut tags = Vec::new();
                for _ in 0..blocks {
                    self.expect_data("a node block header `dim entity parametric count`")?;
                    let mut tokens = self.text().split_ascii_whitespace();
                    let _dim: u8 = self.parse(tokens.next(), "the entity dimension")?;
                    let _entity: i32 = self.parse(tokens.next(), "the entity tag")?;
                    let _parametric: u8 = self.parse(tokens.next(), "the parametric flag")?;
                    let n: u64 = self.parse(tokens.next(), "the number of nodes in the block")?;
                    self.no_more(tokens)?;
                    read = self.block_total(read, n, count, "node")?;
                    tags.clear();
                    for _ in 0..n {
                        self.expect_data("a node tag")?;
                        let mut tokens = self.text().split_ascii_whitespace();
                        tags.push(self.parse(tokens.next(), "a node tag")?);
                        self.no_more(tokens)?;
                    }
                    for &tag in &tags {
                        self.expect_data("node coordinates `x y z`")?;
                        // Parametric nodes carry u, v, w after x y z: ignored.
                        let point = self.coordinates(&mut self.text().split_ascii_whitespace())?;
                        self.add_node(tag, point)?;
                    }
                }
                if read != count {
                    return Err(self.error(format!(
                        "the node blocks hold {read} nodes but the header declares {count}"
                    )));
                }
            }
        }
        Ok(())
    }

    fn elements(&mut self) -> Result<()> {
        if self.version == Some(Version::V2) {
            let count = self.count_line("the number of elements")?;
            let mut nodes = Vec::new();
            for _ in 0..count {
                self.expect_data("an element `tag type ntags tags... nodes...`")?;
                let mut tokens = self.text().split_ascii_whitespace();
                let tag: u64 = self.parse(tokens.next(), "an element tag")?;
                let kind = self.kind(tokens.next())?;
                let ntags: usize = self.parse(tokens.next(), "the number of element tags")?;
                let mut tags = [0i32; 2];
                // Physical, elementary, then partition tags (ignored).
                for k in 0..ntags {
                    let t: i32 = self.parse(tokens.next(), "an element tag")?;
                    if let Some(slot) = tags.get_mut(k) {
                        *slot = t;
                    }
                }
                self.element_nodes(tag, kind, &mut tokens, &mut nodes)?;
                self.add_cell(kind, &nodes, tags[0], tags[1]);
            }
            return Ok(());
        }
        self.expect_data("the element counts `blocks elements min-tag max-tag`")?;
        let mut tokens = self.text().split_ascii_whitespace();
        let blocks: u64 = self.parse(tokens.next(), "the number of element blocks")?;
        let count: u64 = self.parse(tokens.next(), "the number of elements")?;
        let _min: u64 = self.parse(tokens.next(), "the smallest element tag")?;
        let _max: u64 = self.parse(tokens.next(), "the largest element tag")?;
        self.no_more(tokens)?;
        let mut read = 0u64;
        let mut nodes = Vec::new();
        for _ in 0..blocks {
            self.expect_data("an element block header `dim entity type count`")?;
            let mut tokens = self.text().split_ascii_whitespace();
            let dim: u8 = self.parse(tokens.next(), "the entity dimension")?;
            let entity: i32 = self.parse(tokens.next(), "the entity tag")?;
            let kind = self.kind(tokens.next())?;
            let n: u64 = self.parse(tokens.next(), "the number of elements in the block")?;
            self.no_more(tokens)?;
            read = self.block_total(read, n, count, "element")?;
            let physical = self
                .entity_physical
                .get(&(dim, entity))
                .copied()
                .unwrap_or(0);
            for _ in 0..n {
                self.expect_data("an element `tag nodes...`")?;
                let mut tokens = self.text().split_ascii_whitespace();
                let tag: u64 = self.parse(tokens.next(), "an element tag")?;
                self.element_nodes(tag, kind, &mut tokens, &mut nodes)?;
                self.add_cell(kind, &nodes, physical, entity);
            }
        }
        if read != count {
            return Err(self.error(format!(
                "the element blocks hold {read} elements but the header declares {count}"
            )));
        }
        Ok(())
    }

    /// Parses the node tags of element `tag` into point indices.
    fn element_nodes(
        &self,
        tag: u64,
        kind: CellKind,
        tokens: &mut SplitAsciiWhitespace<'_>,
        nodes: &mut Vec<u32>,
    ) -> Result<()> {
        nodes.clear();
        for _ in 0..kind.nodes() {
            let node: u64 = self.parse(tokens.next(), "a node tag of the element")?;
            let Some(index) = self.nodes.get(node) else {
                return Err(self.error(format!(
                    "element {tag} refers to node {node}, which is not in `$Nodes`"
                )));
            };
            nodes.push(index);
        }
        if tokens.next().is_some() {
            return Err(self.error(format!(
                "element {tag} ({kind:?}) has more than {} nodes",
                kind.nodes()
            )));
        }
        Ok(())
    }

    fn add_cell(&mut self, kind: CellKind, nodes: &[u32], physical: i32, elementary: i32) {
        let blocks = &mut self.mesh.blocks;
        let b = *self.block_of.entry(kind).or_insert_with(|| {
            blocks.push(CellBlock::new(kind));
            blocks.len() - 1
        });
        let block = &mut self.mesh.blocks[b];
        block.connectivity.extend_from_slice(nodes);
        block.physical.push(physical);
        block.elementary.push(elementary);
    }

    fn add_node(&mut self, tag: u64, point: [f64; 3]) -> Result<()> {
        let index = self.mesh.points.len();
        if index >= u32::MAX as usize {
            return Err(self.error("more than 2^32 - 1 nodes"));
        }
        if !self.nodes.insert(tag, index as u32) {
            return Err(self.error(format!("node tag {tag} is defined twice")));
        }
        self.mesh.points.push(point);
        Ok(())
    }

    /// Prepares for `count` declared nodes: a count whose points the host cannot hold is
    /// refused; at most [`POINT_PREALLOCATION_CAP`] points are reserved up front (a corrupt
    /// count must not allocate unbounded memory before the data runs out; beyond the cap,
    /// the points grow).
    fn reserve_points(&mut self, count: u64) -> Result<()> {
        crate::limits::check_host_items(
            format_args!(
                "the {count} nodes declared on line {} of {}",
                self.line, self.path
            ),
            count,
            std::mem::size_of::<[f64; 3]>() as u64,
        )?;
        self.nodes.expect(count);
        // At most the cap, which fits `usize`.
        self.mesh
            .points
            .reserve(count.min(POINT_PREALLOCATION_CAP) as usize);
        Ok(())
    }

    fn coordinates(&self, tokens: &mut SplitAsciiWhitespace<'_>) -> Result<[f64; 3]> {
        let mut p = [0.0f64; 3];
        for (c, axis) in p.iter_mut().zip(["x", "y", "z"]) {
            *c = self.parse(tokens.next(), &format!("the {axis} coordinate"))?;
            if !c.is_finite() {
                return Err(self.error(format!("the {axis} coordinate is not finite")));
            }
        }
        Ok(p)
    }

    fn kind(&self, token: Option<&str>) -> Result<CellKind> {
        let id: u32 = self.parse(token, "an element type")?;
        CellKind::from_gmsh(id).ok_or_else(|| {
            self.error(format!(
                "element type {id} is not supported (Gmsh types 1-19 are: points, lines, \
                 triangles, quadrilaterals, tetrahedra, hexahedra, prisms and pyramids up to order 2)"
            ))
        })
    }

    /// Reads a line holding one count.
    fn count_line(&mut self, what: &str) -> Result<u64> {
        self.expect_data(what)?;
        let mut tokens = self.text().split_ascii_whitespace();
        let count = self.parse(tokens.next(), what)?;
        self.no_more(tokens)?;
        Ok(count)
    }

    fn parse<T: FromStr>(&self, token: Option<&str>, what: &str) -> Result<T> {
        match token {
            None => Err(self.error(format!("missing {what}"))),
            Some(t) => t
                .parse()
                .map_err(|_| self.error(format!("expected {what}, found `{}`", truncate(t)))),
        }
    }

    /// The `what`s of the blocks read so far (`read`) and of the next block (`n`): at most
    /// the `count` the section's header declares (no sum past 2⁶⁴ either).
    fn block_total(&self, read: u64, n: u64, count: u64, what: &str) -> Result<u64> {
        match read.checked_add(n) {
            Some(total) if total <= count => Ok(total),
            _ => Err(self.error(format!(
                "the {what} blocks hold more than the {count} {what}s the header declares"
            ))),
        }
    }

    fn no_more(&self, mut tokens: SplitAsciiWhitespace<'_>) -> Result<()> {
        match tokens.next() {
            None => Ok(()),
            Some(t) => Err(self.error(format!(
                "unexpected `{}` at the end of the line",
                truncate(t)
            ))),
        }
    }
}
