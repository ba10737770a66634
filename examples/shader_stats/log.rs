//! The kernels of a cubecl compilation log.

/// One kernel of the log.
pub(crate) struct Logged {
    pub(crate) index: usize,
    /// The kernel type's last path segment (`CholeskyColumnsKernel`).
    pub(crate) short: String,
    /// Its integer and boolean compile-time arguments, `name=value` separated by spaces.
    pub(crate) args: String,
    pub(crate) cube_dim: String,
    /// Launched in cubecl's checked mode (wgpu then bounds its loops).
    pub(crate) checked: bool,
    pub(crate) lang: String,
    pub(crate) source: String,
}

pub(crate) fn parse_log(text: &str) -> Vec<Logged> {
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

pub(crate) fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let to = s[from..].find(end)? + from;
    Some(&s[from..to])
}

/// `name: 12,` and `name: true,` lines as `name=12`, in order (a struct's `x: 256,` too).
pub(crate) fn int_fields(s: &str) -> Vec<String> {
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
pub(crate) fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect()
}

pub(crate) fn file_stem(k: &Logged) -> String {
    format!("{:03}_{}_{}", k.index, k.short, file_safe(&k.args))
}
