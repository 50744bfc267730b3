//! The SVG plots of `kdop paper` (plotters, SVG backend: text is left to the viewer's
//! fonts, so no font library is needed).

use plotters::prelude::*;
use std::path::Path;

/// Colours of the series, in order.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err(e: impl std::fmt::Display) -> kdop::Error {
    kdop::Error::Io(format!("plot: {e}"))
}

/// Tables 6–7 as a log-log plot: Nv against α, one line per bounding volume.
pub fn spheres(
    path: &Path,
    faces: usize,
    alphas: &[f64],
    rows: &[(String, Vec<u64>)],
) -> kdop::Result<()> {
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let max = rows
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(1)
        .max(10) as f64;
    let (amin, amax) = alphas.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &a| {
        (lo.min(a), hi.max(a))
    });
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Nested spheres, {faces} faces: overlap tests Nv against α"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (amin * 0.8..amax * 1.25).log_scale(),
            (1.0..max * 2.0).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("α (gap between the spheres)")
        .y_desc("Nv")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    for (i, (name, nv)) in rows.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let pts: Vec<(f64, f64)> = alphas
            .iter()
            .zip(nv)
            .map(|(&a, &n)| (a, (n as f64).max(1.0)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Figure 3: the time of each check along a flight, one line per bounding volume.
pub fn flight_times(path: &Path, runs: &[(String, Vec<f64>)]) -> kdop::Result<()> {
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let steps = runs.iter().map(|(_, t)| t.len()).max().unwrap_or(1);
    let max = runs
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1.0)
        / 1e3;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Pipes flight: time of each collision check",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0usize..steps, 0.0..max * 1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("ms per check")
        .draw()
        .map_err(err)?;
    for (i, (name, t)) in runs.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                t.iter().enumerate().map(|(s, us)| (s, us / 1e3)),
                c.stroke_width(1),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    legend_and_present(&mut chart, &root)
}

/// A square heat map of ratios (`cells[row * n + col]`, rows down), each cell coloured on a
/// log scale (green below 1, red above) and labelled with its value.
pub fn heat_map(path: &Path, title: &str, names: &[String], cells: &[f64]) -> kdop::Result<()> {
    let n = names.len();
    let side = 70 * n as u32 + 200;
    let root = SVGBackend::new(path, (side, side)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(90)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..n as f64, n as f64..0.0)
        .map_err(err)?;
    let label = |v: &f64| {
        let i = v.floor() as usize;
        if (v - v.floor() - 0.5).abs() < 1e-9 && i < n {
            names[i].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(2 * n + 1)
        .y_labels(2 * n + 1)
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .x_desc("flying object")
        .y_desc("environment")
        .draw()
        .map_err(err)?;
    let colour = |r: f64| -> RGBColor {
        if !r.is_finite() {
            return RGBColor(220, 220, 220);
        }
        // log2 of the ratio, clamped: -4 (16x faster) deep green .. +4 deep red.
        let t = (r.log2() / 4.0).clamp(-1.0, 1.0);
        let mix = |a: u8, b: u8, t: f64| (f64::from(a) + (f64::from(b) - f64::from(a)) * t) as u8;
        if t <= 0.0 {
            let t = -t;
            RGBColor(mix(255, 26, t), mix(255, 152, t), mix(255, 80, t))
        } else {
            RGBColor(mix(255, 215, t), mix(255, 48, t), mix(255, 39, t))
        }
    };
    chart
        .draw_series((0..n * n).map(|i| {
            let (row, col) = ((i / n) as f64, (i % n) as f64);
            Rectangle::new(
                [(col, row), (col + 1.0, row + 1.0)],
                colour(cells[i]).filled(),
            )
        }))
        .map_err(err)?;
    chart
        .draw_series((0..n * n).map(|i| {
            let (row, col) = ((i / n) as f64, (i % n) as f64);
            let text = if cells[i].is_finite() {
                format!("{:.2}", cells[i])
            } else {
                "-".into()
            };
            Text::new(text, (col + 0.22, row + 0.4), ("sans-serif", 14))
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

/// One sampled frame of `kdop demo --edits`.
#[derive(Clone, Copy, Debug)]
pub struct EditSample {
    pub frame: u64,
    /// The part tree's cost over a fresh build's.
    pub cost_ratio: f64,
    /// The step's time.
    pub step_us: f64,
    /// The time of the frame's edits (world calls alone).
    pub edit_us: f64,
}

/// `kdop demo --edits` over its frames: the part tree's cost against a fresh build's
/// (above), the step's and the edits' time (below).
pub fn edit_frames(path: &Path, samples: &[EditSample]) -> kdop::Result<()> {
    let root = SVGBackend::new(path, (900, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (top, bottom) = root.split_vertically(300);
    let last = samples.last().map_or(1, |s| s.frame + 1);
    let cost_max = samples.iter().map(|s| s.cost_ratio).fold(1.2f64, f64::max);
    let mut chart = ChartBuilder::on(&top)
        .caption(
            "Live edits: the part tree's cost against a fresh build's",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..last, 0.9..cost_max * 1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("cost / fresh build")
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            samples.iter().map(|s| (s.frame, s.cost_ratio)),
            COLOURS[0].stroke_width(2),
        ))
        .map_err(err)?;
    let t_max = samples
        .iter()
        .map(|s| s.step_us.max(s.edit_us))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&bottom)
        .caption("Time per frame", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..last, 0.0..t_max * 1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("microseconds")
        .draw()
        .map_err(err)?;
    for (i, name) in ["world step", "the frame's edits"].into_iter().enumerate() {
        let c = COLOURS[i + 1];
        chart
            .draw_series(LineSeries::new(
                samples
                    .iter()
                    .map(|s| (s.frame, if i == 0 { s.step_us } else { s.edit_us })),
                c.stroke_width(1),
            ))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    legend_and_present(&mut chart, &root)
}

/// Draws the series' legend in a framed box and writes the file.
fn legend_and_present<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> kdop::Result<()>
where
    DB: DrawingBackend + 'a,
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}
