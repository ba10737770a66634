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

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ash::vk;
use clap::{Parser, ValueEnum};

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

/// One kernel of the log.
struct Logged {
    index: usize,
    /// The kernel type's last path segment (`CholeskyColumnsKernel`).
    short: String,
    /// Its integer and boolean compile-time arguments, `name=value` separated by spaces.
    args: String,
    cube_dim: String,
    /// Launched in cubecl's checked mode (wgpu then bounds its loops).
    checked: bool,
    lang: String,
    source: String,
}

fn parse_log(text: &str) -> Vec<Logged> {
    let mut out = Vec::new();
    for (index, block) in text
        .split("[START_KERNEL_COMPILATION]")
        .skip(1)
        .filter_map(|b| b.split("[END_KERNEL_COMPILATION]").next())
        .enumerate()
    {
        let name = between(block, "name:", "\nid:").unwrap_or("?");
        let base = name.split('<').next().unwrap_or(name).trim();
        let short = base.rsplit("::").next().unwrap_or(base).to_string();
        let id = between(block, "\nid:", "\nsource:").unwrap_or("");
        let cube_dim = id
            .split("cube_dim: CubeDim {")
            .nth(1)
            .and_then(|s| s.split('}').next())
            .map(|s| int_fields(s).join(","))
            .unwrap_or_default();
        let args = id
            .split("\n    info:")
            .nth(1)
            .map(|s| int_fields(s).join(" "))
            .unwrap_or_default();
        let Some(code) = block.split("source:\n```").nth(1) else {
            continue;
        };
        let (lang, rest) = code.split_once('\n').unwrap_or(("", code));
        let source = rest.rsplit_once("```").map_or(rest, |(s, _)| s).to_string();
        out.push(Logged {
            index,
            short,
            args,
            cube_dim,
            checked: id.contains("mode: Checked"),
            lang: lang.trim().to_string(),
            source,
        });
    }
    out
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let to = s[from..].find(end)? + from;
    Some(&s[from..to])
}

/// `name: 12,` and `name: true,` lines as `name=12`, in order (a struct's `x: 256,` too).
fn int_fields(s: &str) -> Vec<String> {
    s.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().trim_end_matches(',').split_once(": ")?;
            let scalar = v == "true" || v == "false" || v.parse::<i64>().is_ok();
            (scalar && k.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .then(|| format!("{k}={v}"))
        })
        .collect()
}

/// `s` with every character but letters and digits as `_`, for a file name.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect()
}

fn file_stem(k: &Logged) -> String {
    format!("{:03}_{}_{}", k.index, k.short, file_safe(&k.args))
}

/// WGSL to SPIR-V as wgpu-hal 29 does for a kernel cubecl creates (`create_shader_module_trusted`
/// with bounds checks off, loops bounded only for `checked` launches, no zero-initialised
/// workgroup memory).
///
/// With `read_only`, the storage buffers the entry point never writes are declared `read`
/// (SPIR-V's `NonWritable`) instead of `read_write`.
fn to_spirv(
    source: &str,
    lang_version: (u8, u8),
    checked: bool,
    read_only: bool,
) -> Result<(Vec<u32>, String, Vec<Binding>), String> {
    use naga::back::spv;
    let validate = |module: &naga::Module| {
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(module)
        .map_err(|e| format!("validation: {e:?}"))
    };
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| format!("WGSL: {e}"))?;
    let mut info = validate(&module)?;
    let index = module
        .entry_points
        .iter()
        .position(|e| e.stage == naga::ShaderStage::Compute)
        .ok_or("no compute entry point")?;
    let entry = module.entry_points[index].name.clone();
    if read_only {
        let uses = info.get_entry_point(index);
        let unwritten: Vec<_> = module
            .global_variables
            .iter()
            .filter(|&(h, g)| {
                matches!(g.space, naga::AddressSpace::Storage { access }
                    if access.contains(naga::StorageAccess::STORE))
                    && !uses[h]
                        .intersects(naga::valid::GlobalUse::WRITE | naga::valid::GlobalUse::ATOMIC)
            })
            .map(|(h, _)| h)
            .collect();
        for h in unwritten {
            module.global_variables.get_mut(h).space = naga::AddressSpace::Storage {
                access: naga::StorageAccess::LOAD,
            };
        }
        info = validate(&module)?;
    }
    let bindings = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| {
            let b = g.binding.as_ref()?;
            let uniform = matches!(g.space, naga::AddressSpace::Uniform);
            let storage = matches!(g.space, naga::AddressSpace::Storage { .. });
            (uniform || storage).then_some(Binding {
                set: b.group,
                binding: b.binding,
                uniform,
            })
        })
        .collect();
    let options = spv::Options {
        lang_version,
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        // wgpu maps each binding to itself here (one set, no binding arrays).
        fake_missing_bindings: true,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Unchecked,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: checked,
        ..Default::default()
    };
    let pipeline = spv::PipelineOptions {
        entry_point: entry.clone(),
        shader_stage: naga::ShaderStage::Compute,
    };
    let words = spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("SPIR-V: {e}"))?;
    Ok((words, entry, bindings))
}

#[derive(Debug)]
struct Binding {
    set: u32,
    binding: u32,
    uniform: bool,
}

/// A logical device on the chosen physical device.
struct Dev {
    robust: bool,
    device: ash::Device,
    /// `None` where the driver lacks `VK_KHR_pipeline_executable_properties`: the kernels are
    /// still compiled (the driver accepts them), with no statistics.
    exec: Option<ash::khr::pipeline_executable_properties::Device>,
}

struct Vk {
    _entry: ash::Entry,
    instance: ash::Instance,
    name: String,
    lang_version: (u8, u8),
    devs: Vec<Dev>,
}

impl Vk {
    fn new(choice: Option<usize>, robust: Robust) -> Result<Self, String> {
        // SAFETY: loads the system's Vulkan loader; every call below follows the spec's
        // valid usage for the handles it creates.
        unsafe {
            let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let instance = entry
                .create_instance(
                    &vk::InstanceCreateInfo::default().application_info(&app),
                    None,
                )
                .map_err(|e| format!("vkCreateInstance: {e}"))?;
            // Owned from here: an error below destroys what was made (`Drop`).
            let mut out = Vk {
                _entry: entry,
                instance,
                name: String::new(),
                lang_version: (1, 6),
                devs: Vec::new(),
            };
            let instance = out.instance.clone();
            let pds = instance
                .enumerate_physical_devices()
                .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))?;
            let props: Vec<_> = pds
                .iter()
                .map(|&p| instance.get_physical_device_properties(p))
                .collect();
            let pick = match choice {
                Some(i) if i < pds.len() => i,
                Some(i) => {
                    return Err(format!(
                        "--device {i}: the instance has {} devices",
                        pds.len()
                    ))
                }
                None => props
                    .iter()
                    .position(|p| p.device_type != vk::PhysicalDeviceType::CPU)
                    .unwrap_or(0),
            };
            let (pd, prop) = (*pds.get(pick).ok_or("no Vulkan device")?, props[pick]);
            let name = prop
                .device_name_as_c_str()
                .map_or("?".into(), |s| s.to_string_lossy().into_owned());
            let api = prop.api_version;
            if vk::api_version_minor(api) < 2 && vk::api_version_major(api) == 1 {
                return Err(format!("{name}: Vulkan 1.2 or later needed"));
            }
            let lang_version = if vk::api_version_minor(api) >= 3 {
                (1, 6)
            } else {
                (1, 5)
            };
            let exts = instance
                .enumerate_device_extension_properties(pd)
                .map_err(|e| format!("vkEnumerateDeviceExtensionProperties: {e}"))?;
            let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
            let exec_name = ash::khr::pipeline_executable_properties::NAME;
            let has_exec = has(exec_name);
            let has_r2 = has(ash::ext::robustness2::NAME);
            let family = instance
                .get_physical_device_queue_family_properties(pd)
                .iter()
                .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .ok_or_else(|| format!("{name} has no compute queue"))?
                as u32;

            // The features the device has (1.1, 1.2, 1.3 where it is 1.3, robustness2).
            let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
            let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
            let mut fex = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
            let is13 = lang_version == (1, 6);
            {
                let mut f = vk::PhysicalDeviceFeatures2::default()
                    .push_next(&mut f11)
                    .push_next(&mut f12);
                if is13 {
                    f = f.push_next(&mut f13);
                }
                if has_r2 {
                    f = f.push_next(&mut r2);
                }
                if has_exec {
                    f = f.push_next(&mut fex);
                }
                instance.get_physical_device_features2(pd, &mut f);
                let core = f.features;
                f11.p_next = std::ptr::null_mut();
                f12.p_next = std::ptr::null_mut();
                f13.p_next = std::ptr::null_mut();
                r2.p_next = std::ptr::null_mut();
                let has_exec = has_exec && fex.pipeline_executable_info != 0;
                if !has_exec {
                    eprintln!(
                        "shader_stats: {name} lacks {}: the kernels are compiled, with no statistics",
                        exec_name.to_string_lossy()
                    );
                }
                let modes: &[bool] = match robust {
                    Robust::On => &[true],
                    Robust::Off => &[false],
                    Robust::Both => &[true, false],
                };
                for &on in modes {
                    // Every feature the device has, robust buffer access as asked.
                    let mut core = core;
                    core.robust_buffer_access = (on && core.robust_buffer_access != 0) as u32;
                    let (mut e11, mut e12, mut e13) = (f11, f12, f13);
                    let mut er2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default()
                        .robust_buffer_access2(r2.robust_buffer_access2 != 0)
                        .robust_image_access2(r2.robust_image_access2 != 0);
                    let mut ex =
                        vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                            .pipeline_executable_info(true);
                    let mut names = Vec::new();
                    let prio = [1.0f32];
                    let queues = [vk::DeviceQueueCreateInfo::default()
                        .queue_family_index(family)
                        .queue_priorities(&prio)];
                    let mut ci = vk::DeviceCreateInfo::default()
                        .queue_create_infos(&queues)
                        .enabled_features(&core)
                        .push_next(&mut e11)
                        .push_next(&mut e12);
                    if is13 {
                        ci = ci.push_next(&mut e13);
                    }
                    if has_exec {
                        names.push(exec_name.as_ptr());
                        ci = ci.push_next(&mut ex);
                    }
                    if on && has_r2 {
                        names.push(ash::ext::robustness2::NAME.as_ptr());
                        ci = ci.push_next(&mut er2);
                    }
                    let ci = ci.enabled_extension_names(&names);
                    let device = instance
                        .create_device(pd, &ci, None)
                        .map_err(|e| format!("vkCreateDevice (robust {on}): {e}"))?;
                    let exec = has_exec.then(|| {
                        ash::khr::pipeline_executable_properties::Device::new(&instance, &device)
                    });
                    out.devs.push(Dev {
                        robust: on,
                        device,
                        exec,
                    });
                }
                out.name = name;
                out.lang_version = lang_version;
                Ok(out)
            }
        }
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        // SAFETY: every object made on these devices was destroyed in `compile`.
        unsafe {
            for d in &self.devs {
                d.device.destroy_device(None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// The driver's statistics of one compute pipeline (name, value), and its internal
/// representations (name, whether text, bytes).
type Stats = (Vec<(String, String)>, Vec<(String, bool, Vec<u8>)>);

/// The objects [`compile`] makes on a device, destroyed on every path out of it.
struct Made<'a> {
    d: &'a ash::Device,
    module: vk::ShaderModule,
    sets: Vec<vk::DescriptorSetLayout>,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        // SAFETY: each handle is null or was made on `d` and is no longer in use (nothing
        // was submitted).
        unsafe {
            self.d.destroy_pipeline(self.pipeline, None);
            self.d.destroy_pipeline_layout(self.layout, None);
            for &l in &self.sets {
                self.d.destroy_descriptor_set_layout(l, None);
            }
            self.d.destroy_shader_module(self.module, None);
        }
    }
}

fn compile(
    dev: &Dev,
    words: &[u32],
    entry: &str,
    bindings: &[Binding],
    irs: bool,
) -> Result<Stats, String> {
    let name = std::ffi::CString::new(entry).map_err(|_| "entry point with a NUL")?;
    let sets = bindings.iter().map(|b| b.set + 1).max().unwrap_or(0);
    let mut made = Made {
        d: &dev.device,
        module: vk::ShaderModule::null(),
        sets: Vec::new(),
        layout: vk::PipelineLayout::null(),
        pipeline: vk::Pipeline::null(),
    };
    let d = &dev.device;
    // SAFETY: the create infos and the slices they point to outlive each call; `made`
    // destroys what was made; the SPIR-V was validated by naga.
    unsafe {
        made.module = d
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None)
            .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
        for s in 0..sets {
            let entries: Vec<_> = bindings
                .iter()
                .filter(|b| b.set == s)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(if b.uniform {
                            vk::DescriptorType::UNIFORM_BUFFER
                        } else {
                            vk::DescriptorType::STORAGE_BUFFER
                        })
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&entries);
            made.sets.push(
                d.create_descriptor_set_layout(&info, None)
                    .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?,
            );
        }
        made.layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&made.sets),
                None,
            )
            .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(made.module)
            .name(&name);
        let mut flags = vk::PipelineCreateFlags::empty();
        if dev.exec.is_some() {
            flags |= vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
            if irs {
                flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
            }
        }
        let ci = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(made.layout);
        made.pipeline = d
            .create_compute_pipelines(vk::PipelineCache::null(), &[ci], None)
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
        read_stats(dev, made.pipeline, irs)
    }
}

/// SAFETY: `p` is a live pipeline of `dev`, created with the statistics captured where `dev`
/// has the extension, and its internal representations where `irs`.
unsafe fn read_stats(dev: &Dev, p: vk::Pipeline, irs: bool) -> Result<Stats, String> {
    let Some(exec) = &dev.exec else {
        return Ok((Vec::new(), Vec::new()));
    };
    let execs = exec
        .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(p))
        .map_err(|e| format!("vkGetPipelineExecutablePropertiesKHR: {e}"))?;
    let (mut stats, mut reps_out) = (Vec::new(), Vec::new());
    for i in 0..execs.len() as u32 {
        let info = vk::PipelineExecutableInfoKHR::default()
            .pipeline(p)
            .executable_index(i);
        let list = exec
            .get_pipeline_executable_statistics(&info)
            .map_err(|e| format!("vkGetPipelineExecutableStatisticsKHR: {e}"))?;
        for s in list {
            let name = s
                .name_as_c_str()
                .map_or("?".into(), |c| c.to_string_lossy().into_owned());
            let value = match s.format {
                vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
                vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => format!("{:.3}", s.value.f64),
                _ => "?".into(),
            };
            stats.push((name, value));
        }
        if !irs {
            continue;
        }
        // One call for the count, one for the sizes, one for the data.
        let get = exec
            .fp()
            .get_pipeline_executable_internal_representations_khr;
        let h = exec.device();
        let mut n = 0u32;
        let r = get(h, &info, &mut n, std::ptr::null_mut());
        if r != vk::Result::SUCCESS {
            return Err(format!(
                "vkGetPipelineExecutableInternalRepresentationsKHR: {r}"
            ));
        }
        let mut reps = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); n as usize];
        let r = get(h, &info, &mut n, reps.as_mut_ptr());
        if r != vk::Result::SUCCESS {
            return Err(format!(
                "vkGetPipelineExecutableInternalRepresentationsKHR: {r}"
            ));
        }
        let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, b) in reps.iter_mut().zip(bufs.iter_mut()) {
            r.p_data = b.as_mut_ptr().cast();
        }
        let r = get(h, &info, &mut n, reps.as_mut_ptr());
        if r != vk::Result::SUCCESS {
            return Err(format!(
                "vkGetPipelineExecutableInternalRepresentationsKHR: {r}"
            ));
        }
        for (r, mut b) in reps.iter().zip(bufs) {
            let name = r
                .name_as_c_str()
                .map_or("ir".into(), |c| c.to_string_lossy().into_owned());
            let text = r.is_text != 0;
            b.truncate(r.data_size);
            if text {
                // Text ends at its NUL.
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                b.truncate(end);
            }
            reps_out.push((name, text, b));
        }
    }
    Ok((stats, reps_out))
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
mod tests {
    use super::*;

    /// A WGSL kernel as cubecl 0.10 logs it (the library's `ZeroKernel`), a profiling line,
    /// and a CUDA kernel.
    const LOG: &str = r#"[START_KERNEL_COMPILATION]
name: galerkin::backend::cube::zero_kernel::ZeroKernel<
    i32,
    cubecl_wgpu::runtime::WgpuRuntime,
>
id: KernelId {
    type: galerkin::backend::cube::zero_kernel::ZeroKernel<i32, cubecl_wgpu::runtime::WgpuRuntime>,
    address_type: U32,
    cube_dim: CubeDim {
        x: 256,
        y: 1,
        z: 1,
    },
    mode: Unchecked,
    info: ZeroKernelInfo {
        n: 4,
        x: ArrayCompilationArg {
            inplace: None,
        },
    },
}
source:
```wgsl
@group(0)
@binding(0)
var<storage, read_write> buffer_0_global: array<vec4<i32>>;

struct info_st {
   static_meta: array<u32, 2>,
}

@group(0)
@binding(1)
var<storage, read> info: info_st;

const WORKGROUP_SIZE_X = 256u;
const WORKGROUP_SIZE_Y = 1u;
const WORKGROUP_SIZE_Z = 1u;

@compute
@workgroup_size(256, 1, 1)
fn zero_kernel_t_i32_n_4(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
let workgroup_size_no_axis = WORKGROUP_SIZE_X * WORKGROUP_SIZE_Y * WORKGROUP_SIZE_Z;
let num_workgroups_no_axis = u32(num_workgroups.x) * u32(num_workgroups.y) * u32(num_workgroups.z);
let id = (u32(global_id.z) * u32(num_workgroups.x) * u32(WORKGROUP_SIZE_X) * u32(num_workgroups.y) * u32(WORKGROUP_SIZE_Y)) + (u32(global_id.y) * u32(num_workgroups.x) * u32(WORKGROUP_SIZE_X)) + u32(global_id.x);

var l_mut_1: u32;
let l_0 = num_workgroups_no_axis * workgroup_size_no_axis;
l_mut_1 = id;
loop {
let l_2 = info.static_meta[u32(1)];
let l_3 = l_mut_1 < l_2;
let l_4 = !l_3;
if l_4 {
break;
}
let l_5 = vec4<i32>(i32(0));
buffer_0_global[l_mut_1] = l_5;
l_mut_1 = l_mut_1 + l_0;
}
}
```
[END_KERNEL_COMPILATION]
| 16.429492ms | ZeroKernel | i32 | WgpuRuntime
[START_KERNEL_COMPILATION]
name: galerkin::vector::CopyKernel<
    f32,
    cubecl_cuda::runtime::CudaRuntime,
>
id: KernelId {
    cube_dim: CubeDim {
        x: 128,
        y: 1,
        z: 1,
    },
    mode: Unchecked,
    info: CopyKernelInfo {
        n: 2,
        x: ArrayCompilationArg {
            inplace: None,
        },
        fused: true,
    },
}
source:
```cpp
extern "C" __global__ void copy_kernel(float* x) { x[0] = 1.0f; }
```
[END_KERNEL_COMPILATION]
"#;

    #[test]
    fn parses_the_wgsl_and_cuda_kernels_of_a_log() {
        let k = parse_log(LOG);
        assert_eq!(k.len(), 2);
        assert_eq!((k[0].index, k[0].short.as_str()), (0, "ZeroKernel"));
        assert_eq!(k[0].args, "n=4");
        assert_eq!(k[0].cube_dim, "x=256,y=1,z=1");
        assert_eq!(k[0].lang, "wgsl");
        assert!(!k[0].checked);
        assert!(k[0].source.starts_with("@group(0)"), "{}", k[0].source);
        assert!(k[0].source.trim_end().ends_with('}'), "{}", k[0].source);
        assert_eq!((k[1].index, k[1].short.as_str()), (1, "CopyKernel"));
        assert_eq!(k[1].args, "n=2 fused=true");
        assert_eq!(k[1].cube_dim, "x=128,y=1,z=1");
        assert_eq!(k[1].lang, "cpp");
        assert_eq!(
            k[1].source.trim(),
            r#"extern "C" __global__ void copy_kernel(float* x) { x[0] = 1.0f; }"#
        );
        assert_eq!(file_stem(&k[1]), "001_CopyKernel_n_2_fused_true");
        assert!(parse_log("no kernel here").is_empty());
    }

    #[test]
    fn a_logged_kernel_becomes_spirv_with_its_bindings() {
        let k = parse_log(LOG);
        let (words, entry, bindings) = to_spirv(&k[0].source, (1, 6), k[0].checked, false).unwrap();
        assert_eq!(words[0], 0x0723_0203, "SPIR-V magic");
        assert_eq!(words[1], 0x0001_0600, "SPIR-V 1.6");
        assert_eq!(entry, "zero_kernel_t_i32_n_4");
        let b: Vec<_> = bindings
            .iter()
            .map(|b| (b.set, b.binding, b.uniform))
            .collect();
        assert_eq!(b, [(0, 0, false), (0, 1, false)]);
        assert!(to_spirv("fn broken(", (1, 6), false, false)
            .unwrap_err()
            .starts_with("WGSL"));
    }

    /// The `Binding` numbers of the variables a SPIR-V module decorates `NonWritable`.
    fn non_writable_bindings(words: &[u32]) -> Vec<u32> {
        // OpDecorate (opcode 71): target, decoration, literals. NonWritable is decoration 24,
        // Binding 33.
        let (mut at, mut non_writable, mut binding) = (5, Vec::new(), BTreeMap::new());
        while at < words.len() {
            let (len, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
            if op == 71 {
                match words.get(at + 2) {
                    Some(24) => non_writable.push(words[at + 1]),
                    Some(33) => {
                        binding.insert(words[at + 1], words[at + 3]);
                    }
                    _ => {}
                }
            }
            at += len.max(1);
        }
        let mut bound: Vec<u32> = non_writable
            .iter()
            .filter_map(|id| binding.get(id).copied())
            .collect();
        bound.sort_unstable();
        bound
    }

    #[test]
    fn read_only_marks_only_the_buffers_never_written() {
        // `a` is only read; `b` written, `c` read and written, `d` updated atomically and `e`
        // written by a function the entry point calls: only `a` becomes read-only.
        let source = r#"
@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> d: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> e: array<f32>;
fn put(i: u32, v: f32) {
    e[i] = v;
}
@compute @workgroup_size(64, 1, 1)
fn k(@builtin(global_invocation_id) id: vec3<u32>) {
    b[id.x] = a[id.x] + 1.0;
    c[id.x] = c[id.x] * 2.0;
    atomicAdd(&d[0], 1u);
    put(id.x, a[0]);
}
"#;
        let (logged, ..) = to_spirv(source, (1, 6), false, false).unwrap();
        let (read_only, entry, bindings) = to_spirv(source, (1, 6), false, true).unwrap();
        assert_eq!(entry, "k");
        assert_eq!(bindings.len(), 5);
        assert_eq!(non_writable_bindings(&logged), Vec::<u32>::new());
        assert_eq!(non_writable_bindings(&read_only), [0]);
    }
}
