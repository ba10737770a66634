//! Unit tests of the pipeline on the CPU.

use std::f64::consts::PI;

use crate::backend::Cpu;
use crate::hdg::{Hdg, Problem, TraceSolverParams};
use crate::mesh::tri::{Diagonal, TriMesh};

#[test]
fn sampled_fields_match_the_exact_solution() {
    let cpu = Cpu::new();
    let mesh = TriMesh::unit_square(4, Diagonal::Alternating, 0.1, 3).unwrap();
    let hdg = Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, crate::hdg::HdgParams::new(4), &[]).unwrap();
    let f = |x: f64, y: f64| 2.0 * PI * PI * (PI * x).sin() * (PI * y).sin();
    let ex = |x: f64, y: f64| (PI * x).sin() * (PI * y).sin();
    let problem = Problem {
        rhs: &f,
        dirichlet: &ex,
        flux: None,
    };
    let sol = hdg
        .run(&problem, &TraceSolverParams::for_precision::<f64>(), true)
        .unwrap();
    let grid = hdg.sample(&sol.fields, 3).unwrap();
    assert_eq!(grid.num_points(), 32 * 10);
    assert_eq!(grid.num_cells(), 32 * 9);
    let text = grid.to_legacy_ascii().unwrap();
    assert!(text.contains("u_star") && text.contains("element"));
    let names: Vec<_> = grid.point_data().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["u", "q", "u_star"]);
    // The samples are the fields: u and u* against the exact solution at every point.
    for field in [&grid.point_data()[0], &grid.point_data()[2]] {
        let worst = grid
            .points()
            .iter()
            .zip(&field.values)
            .map(|(p, v)| (v - ex(p[0], p[1])).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-3, "{}: max error {worst}", field.name);
    }
    assert!(hdg.sample(&sol.fields, 0).is_err());
}

#[test]
fn post_processing_by_blocks_matches_the_direct_solve() {
    let cpu = Cpu::new();
    let mesh = TriMesh::unit_square(3, Diagonal::Alternating, 0.2, 5).unwrap();
    let f = |x: f64, y: f64| (3.0 * x).exp() * (2.0 * y).sin();
    for p in [1, 3, 6] {
        let params = crate::hdg::HdgParams::new(p);
        let direct = Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, params, &[]).unwrap();
        let mut split = Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, params, &[]).unwrap();
        split.force_split_post_process().unwrap();
        let problem = Problem {
            rhs: &f,
            dirichlet: &f,
            flux: None,
        };
        let solver = TraceSolverParams::for_precision::<f64>();
        let a = direct.run(&problem, &solver, true).unwrap();
        let b = split.run(&problem, &solver, true).unwrap();
        let (ua, ub) = (
            a.fields.u_star.unwrap().to_vec().unwrap(),
            b.fields.u_star.unwrap().to_vec().unwrap(),
        );
        assert_eq!(ua.len(), ub.len());
        let scale = ua.iter().map(|v| v * v).sum::<f64>().sqrt();
        let err = ua
            .iter()
            .zip(&ub)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt()
            / scale;
        assert!(err < 1e-11, "P = {p}: relative difference {err:e}");
    }
}
