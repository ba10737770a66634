//! A Vulkan device that compiles the kernels and reports the driver's statistics.

use std::ffi::CStr;

use ash::vk;

use crate::spirv::Binding;
use crate::Robust;

/// A logical device on the chosen physical device.
pub(crate) struct Dev {
    pub(crate) robust: bool,
    pub(crate) device: ash::Device,
    /// `None` where the driver lacks `VK_KHR_pipeline_executable_properties`: the kernels are
    /// still compiled (the driver accepts them), with no statistics.
    pub(crate) exec: Option<ash::khr::pipeline_executable_properties::Device>,
}

pub(crate) struct Vk {
    pub(crate) _entry: ash::Entry,
    pub(crate) instance: ash::Instance,
    pub(crate) name: String,
    pub(crate) lang_version: (u8, u8),
    pub(crate) devs: Vec<Dev>,
}

impl Vk {
    pub(crate) fn new(choice: Option<usize>, robust: Robust) -> Result<Self, String> {
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

pub(crate) fn compile(
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
