//! The prolongators of smoothed aggregation on the host (the CPU reference): the tentative
//! one from the aggregates and the near-null space (a QR factorization per aggregate), and
//! its Jacobi smoothing.

use rayon::prelude::*;

use super::host::spgemm;
use crate::backend::Cpu;
use crate::error::Result;
use crate::sparse::csr::Csr;
use crate::sparse::generate::build_csr;

/// The tentative prolongator `T` (orthonormal columns) and the coarse near-null space
/// `B_c` with `T B_c = B`: per aggregate, the modified Gram–Schmidt QR of the aggregate's
/// rows of `B`. A column that is (numerically) dependent on the previous ones is dropped,
/// so an aggregate smaller than `k` or a degenerate `B` gives fewer coarse unknowns; the
/// coarse space keeps `k` vectors (rows of `R`, zero where a column was dropped).
pub(crate) fn tentative(
    agg: &[u32],
    count: usize,
    rows: usize,
    k: usize,
    b: &[f64],
) -> Result<(Csr<Cpu, f64>, Vec<f64>)> {
    let n = agg.len();
    debug_assert_eq!(rows, n);
    let at = |i: usize, c: usize| b[c * rows + i];
    // Members of each aggregate, by a counting sort.
    let mut start = vec![0usize; count + 1];
    for &g in agg {
        start[g as usize + 1] += 1;
    }
    for g in 0..count {
        start[g + 1] += start[g];
    }
    let mut next = start.clone();
    let mut members = vec![0u32; n];
    for (i, &g) in agg.iter().enumerate() {
        members[next[g as usize]] = i as u32;
        next[g as usize] += 1;
    }
    // Per aggregate: Q (members x kept, column-major) and R (kept x k).
    struct Qr {
        q: Vec<f64>,
        r: Vec<f64>,
        kept: usize,
    }
    let qrs: Vec<Qr> = (0..count)
        .into_par_iter()
        .with_min_len(256)
        .map(|g| {
            let members_of = &members[start[g]..start[g + 1]];
            let m = members_of.len();
            let mut q = Vec::with_capacity(m * k);
            let mut r = vec![0.0; k * k];
            let mut kept = 0;
            for c in 0..k {
                let mut v: Vec<f64> = members_of.iter().map(|&i| at(i as usize, c)).collect();
                let norm0 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                let mut coef = vec![0.0; kept];
                for (p, coef) in coef.iter_mut().enumerate() {
                    let qp = &q[p * m..(p + 1) * m];
                    *coef = qp.iter().zip(&v).map(|(a, b)| a * b).sum::<f64>();
                    v.iter_mut().zip(qp).for_each(|(x, y)| *x -= *coef * y);
                }
                let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                // R is kept x k: row p, column c.
                for (p, &cf) in coef.iter().enumerate() {
                    r[p * k + c] = cf;
                }
                if norm > 1e-10 * norm0 && norm > 0.0 {
                    r[kept * k + c] = norm;
                    q.extend(v.iter().map(|x| x / norm));
                    kept += 1;
                }
            }
            r.truncate(kept * k);
            Qr { q, r, kept }
        })
        .collect();
    // Coarse unknowns: the kept columns of each aggregate, in aggregate order.
    let mut offset = vec![0usize; count + 1];
    for g in 0..count {
        offset[g + 1] = offset[g] + qrs[g].kept;
    }
    let nc = offset[count];
    // The position of each node within its aggregate.
    let mut local = vec![0u32; n];
    for g in 0..count {
        for (l, &i) in members[start[g]..start[g + 1]].iter().enumerate() {
            local[i as usize] = l as u32;
        }
    }
    let t = build_csr(
        n,
        nc,
        1,
        |i| qrs[agg[i] as usize].kept,
        |rows, cols, vals: &mut [f64]| {
            let mut at = 0;
            for i in rows {
                let g = agg[i] as usize;
                let (qr, m) = (&qrs[g], start[g + 1] - start[g]);
                for p in 0..qr.kept {
                    cols[at] = (offset[g] + p) as u32;
                    vals[at] = qr.q[p * m + local[i] as usize];
                    at += 1;
                }
            }
        },
    )?;
    let mut bc = vec![0.0; nc * k];
    for g in 0..count {
        for p in 0..qrs[g].kept {
            for c in 0..k {
                bc[c * nc + offset[g] + p] = qrs[g].r[p * k + c];
            }
        }
    }
    Ok((t, bc))
}

/// `P = T − ω D⁻¹ A T`: the tentative prolongator smoothed by one damped Jacobi step
/// (`ω = 4 / (3 ρ(D⁻¹A))` from the caller). Every row of `T` lies in the pattern of `A T`
/// (the diagonal of `A` is nonzero), so `P` has the pattern of `A T`.
pub(crate) fn smooth(
    a: &Csr<Cpu, f64>,
    t: &Csr<Cpu, f64>,
    diag: &[f64],
    omega: f64,
) -> Result<Csr<Cpu, f64>> {
    let mut p = spgemm(a, t)?;
    let row_ptr = p.row_ptr().to_vec();
    let cols = p.col_idx().to_vec();
    // Row by row: scale, then add T's entries (binary search in the row's sorted columns).
    let vals = p.values_mut();
    let mut rows: Vec<&mut [f64]> = Vec::with_capacity(row_ptr.len() - 1);
    let mut rest = vals;
    for i in 0..row_ptr.len() - 1 {
        let (head, tail) = rest.split_at_mut((row_ptr[i + 1] - row_ptr[i]) as usize);
        rows.push(head);
        rest = tail;
    }
    rows.par_iter_mut()
        .enumerate()
        .with_min_len(1024)
        .for_each(|(i, row)| {
            let s = -omega / diag[i];
            row.iter_mut().for_each(|v| *v *= s);
            let rc = &cols[row_ptr[i] as usize..row_ptr[i + 1] as usize];
            let (tc, tv) = t.row(i);
            for (&c, &v) in tc.iter().zip(tv) {
                if let Ok(k) = rc.binary_search(&c) {
                    row[k] += v;
                }
            }
        });
    Ok(p)
}
