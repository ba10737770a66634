//! WGSL to SPIR-V as wgpu does.

/// WGSL to SPIR-V as wgpu-hal 29 does for a kernel cubecl creates (`create_shader_module_trusted`
/// with bounds checks off, loops bounded only for `checked` launches, no zero-initialised
/// workgroup memory).
///
/// With `read_only`, the storage buffers the entry point never writes are declared `read`
/// (SPIR-V's `NonWritable`) instead of `read_write`.
pub(crate) fn to_spirv(
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
pub(crate) struct Binding {
    pub(crate) set: u32,
    pub(crate) binding: u32,
    pub(crate) uniform: bool,
}
