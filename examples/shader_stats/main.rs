//! What a Vulkan driver makes of the library's wgpu kernels: registers, spills, instructions.
//!
//! ```text
//! CUBECL_DEBUG_LOG=/tmp/kernels.log cargo run --release --features wgpu --example bench -- \
//!     --suite batched --backend wgpu --only cholesky --log2 24,32
//! cargo run --release --features shader-stats --example shader_stats -- /tmp/kernels.log
//! ```
//!
//! cubecl writes every kernel it compiles to a log when `CUBECL_DEBUG_LOG=FILE` is set. This
//! program reads such a log, compiles each WGSL kernel as wgpu 29 does on Vulkan (naga's SPIR-V
//! writer with the bounds checks off and the loops bounded only in checked launches, as cubecl
//! asks, SPIR-V 1.6 on a Vulkan 1.3 device) and creates it on a Vulkan device with `VK_KHR_pipeline_executable_properties`,
//! then prints the statistics the driver reports for it (NVIDIA: registers, binary size, shared
//! and local memory; its `Local Memory Size` reads 2^36 plus the bytes a unit spills, driver
//! 580; Mesa: instruction and spill counts). The kernel is compiled twice: on a device with
//! robust buffer access on (`robustBufferAccess` and `robustBufferAccess2`, as wgpu opens every
//! device that has them) and on one with it off. `--access read-only` (or `both`) declares the
//! buffers a kernel never writes `read` (SPIR-V's `NonWritable`) where cubecl binds every
//! buffer `read_write`: what that binding costs the driver's code. `--cuda-dir` writes the
//! log's CUDA kernels out as `.cu` files for `nvcc -Xptxas -v`, the same numbers for the CUDA
//! runtime.

mod log;
mod spirv;
mod vulkan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use log::{file_safe, file_stem, parse_log, Logged};
use spirv::to_spirv;
use vulkan::{compile, Vk};

/// Compile the WGSL kernels of a cubecl compilation log on a Vulkan device and print what the
/// driver reports for each (registers, spills, instructions), with robust buffer access on
/// and off.
#[derive(Parser, Debug)]
#[command(name = "shader_stats", version)]
struct Args {
    /// A cubecl compilation log: run any program with `CUBECL_DEBUG_LOG=FILE`.
    log: PathBuf,
    /// Only the kernels whose name or compile-time arguments contain this text.
    #[arg(long)]
    filter: Option<String>,
    /// The Vulkan device, by its index in the instance's list (default: the first GPU, else
    /// the first device).
    #[arg(long)]
    device: Option<usize>,
    /// Robust buffer access of the devices the kernels are compiled on.
    #[arg(long, value_enum, default_value_t = Robust::Both)]
    robust: Robust,
    /// Write each kernel's SPIR-V here (`INDEX_NAME.spv`).
    #[arg(long)]
    spv_dir: Option<PathBuf>,
    /// Write the driver's internal representations here, where it gives any.
    #[arg(long)]
    ir_dir: Option<PathBuf>,
    /// Write the log's CUDA kernels here as `.cu` files (for `nvcc -Xptxas -v`).
    #[arg(long)]
    cuda_dir: Option<PathBuf>,
    /// Storage buffers a kernel never writes, bound as cubecl binds them (`logged`: every one
    /// `read_write`, as cubecl 0.10 does without its `exclusive-memory-only` feature), as
    /// `read` (`read-only`: SPIR-V's `NonWritable`), or each kernel both ways.
    #[arg(long, value_enum, default_value_t = Access::Logged)]
    access: Access,
    /// One JSON object a line (keys: index, kernel, args, cube_dim, robust, read_only,
    /// statistics).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Access {
    Logged,
    ReadOnly,
    Both,
}

impl Access {
    /// The forms to compile: `false` as logged, `true` with never-written buffers read-only.
    fn forms(self) -> &'static [bool] {
        match self {
            Access::Logged => &[false],
            Access::ReadOnly => &[true],
            Access::Both => &[false, true],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Robust {
    On,
    Off,
    Both,
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(args: &Args) -> Result<(), String> {
    let text =
        std::fs::read_to_string(&args.log).map_err(|e| format!("{}: {e}", args.log.display()))?;
    let kernels: Vec<Logged> = parse_log(&text)
        .into_iter()
        .filter(|k| {
            args.filter
                .as_deref()
                .is_none_or(|f| k.short.contains(f) || k.args.contains(f))
        })
        .collect();
    if kernels.is_empty() {
        return Err(format!(
            "{}: no kernel{} in this log (write one with CUBECL_DEBUG_LOG=FILE)",
            args.log.display(),
            args.filter
                .as_ref()
                .map_or(String::new(), |f| format!(" matching `{f}`"))
        ));
    }
    if let Some(dir) = &args.cuda_dir {
        for k in kernels.iter().filter(|k| k.lang != "wgsl") {
            write(dir, &format!("{}.cu", file_stem(k)), k.source.as_bytes())?;
        }
    }
    let wgsl: Vec<&Logged> = kernels.iter().filter(|k| k.lang == "wgsl").collect();
    if wgsl.is_empty() {
        if args.cuda_dir.is_some() {
            eprintln!("shader_stats: no WGSL kernel in the log; its CUDA kernels were written");
            return Ok(());
        }
        return Err(format!(
            "{}: no WGSL kernel among its {} kernels (the CUDA ones: --cuda-dir)",
            args.log.display(),
            kernels.len()
        ));
    }
    let vk = Vk::new(args.device, args.robust)?;
    if !args.json {
        println!(
            "# {} (SPIR-V {}.{}), {}",
            vk.name,
            vk.lang_version.0,
            vk.lang_version.1,
            args.log.display()
        );
        println!(
            "{:>4} {:<28} {:<34} {:<10} {:<6} {:<9} statistics",
            "#", "kernel", "args", "cube", "robust", "bindings"
        );
    }
    let mut failed = 0;
    for k in wgsl {
        for &read_only in args.access.forms() {
            let (words, entry, bindings) =
                match to_spirv(&k.source, vk.lang_version, k.checked, read_only) {
                    Ok(x) => x,
                    Err(e) => {
                        eprintln!("shader_stats: kernel {} ({}): {e}", k.index, k.short);
                        failed += 1;
                        continue;
                    }
                };
            let form = if read_only { "_read_only" } else { "" };
            if let Some(dir) = &args.spv_dir {
                write(
                    dir,
                    &format!("{}{form}.spv", file_stem(k)),
                    bytemuck::cast_slice(&words),
                )?;
            }
            for dev in &vk.devs {
                let (stats, irs) =
                    match compile(dev, &words, &entry, &bindings, args.ir_dir.is_some()) {
                        Ok(x) => x,
                        Err(e) => {
                            eprintln!("shader_stats: kernel {} ({}): {e}", k.index, k.short);
                            failed += 1;
                            continue;
                        }
                    };
                if let Some(dir) = &args.ir_dir {
                    for (i, (name, text, bytes)) in irs.iter().enumerate() {
                        let tag = if dev.robust { "robust" } else { "plain" };
                        let ext = if *text { "txt" } else { "bin" };
                        let file =
                            format!("{}{form}_{tag}_{i}_{}.{ext}", file_stem(k), file_safe(name));
                        write(dir, &file, bytes)?;
                    }
                }
                if args.json {
                    let statistics: BTreeMap<&str, &str> = stats
                        .iter()
                        .map(|(a, b)| (a.as_str(), b.as_str()))
                        .collect();
                    let row = serde_json::json!({
                        "index": k.index,
                        "kernel": k.short,
                        "args": k.args,
                        "cube_dim": k.cube_dim,
                        "robust": dev.robust,
                        "read_only": read_only,
                        "statistics": statistics,
                    });
                    println!("{row}");
                } else {
                    let s: Vec<String> = stats.iter().map(|(a, b)| format!("{a}={b}")).collect();
                    println!(
                        "{:>4} {:<28} {:<34} {:<10} {:<6} {:<9} {}",
                        k.index,
                        k.short,
                        k.args,
                        k.cube_dim,
                        if dev.robust { "on" } else { "off" },
                        if read_only { "read" } else { "logged" },
                        s.join("; ")
                    );
                }
            }
        }
    }
    if failed > 0 {
        return Err(format!("{failed} kernel compilations failed (above)"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shader_stats: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests;
