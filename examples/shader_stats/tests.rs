//! The log parser and the SPIR-V path (no Vulkan device needed).

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
