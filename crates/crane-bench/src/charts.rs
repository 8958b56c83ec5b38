//! SVG charts of a report: F1 and accuracy per group and configuration, and confusion matrices.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::metrics::Metrics;
use crate::report::{Report, RunReport};

#[derive(Debug, thiserror::Error)]
#[error("cannot draw the chart: {0}")]
pub struct ChartError(String);

fn chart_error(error: impl std::fmt::Display) -> ChartError {
    ChartError(error.to_string())
}

/// F1 (top) and accuracy (bottom) per group, one bar per configuration; undefined values have
/// no bar.
pub fn metrics_by_group(report: &Report) -> Result<String, ChartError> {
    let reports = report.reports();
    let mut groups: Vec<&String> = reports.iter().flat_map(|r| r.by_group.keys()).collect();
    groups.sort();
    groups.dedup();
    let width = (140 + groups.len() as u32 * (40 + 18 * reports.len() as u32)).max(640);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 760)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let (top, bottom) = root.split_vertically(380);
        bar_panel(&top, "F1 per group", &groups, reports, |m| m.f1)?;
        bar_panel(&bottom, "Accuracy per group", &groups, reports, |m| {
            m.accuracy
        })?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn bar_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    groups: &[&String],
    reports: &[RunReport],
    metric: fn(&Metrics) -> Option<f64>,
) -> Result<(), ChartError> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(44)
        // Headroom above 1.0 keeps the legend off the bars.
        .build_cartesian_2d(0f64..groups.len().max(1) as f64, 0f64..1.25)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(6)
        .y_label_formatter(&|y| {
            if *y <= 1.0 + 1e-9 {
                format!("{y:.1}")
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(chart_error)?;
    let slot = 0.8 / reports.len() as f64;
    for (position, run) in reports.iter().enumerate() {
        let color = Palette99::pick(position).to_rgba();
        let bars = groups.iter().enumerate().filter_map(|(index, group)| {
            let value = metric(run.by_group.get(*group)?)?;
            let left = index as f64 + 0.1 + slot * position as f64;
            Some(Rectangle::new(
                [(left, 0.0), (left + slot * 0.9, value)],
                color.filled(),
            ))
        });
        chart
            .draw_series(bars)
            .map_err(chart_error)?
            .label(run.info.config.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    if reports.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(chart_error)?;
    }
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    // Backend coordinates are absolute; the area draws relative to its own corner.
    let (base_x, base_y) = area.get_base_pixel();
    for (index, group) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(index as f64 + 0.5, 0.0));
        area.draw(&Text::new(
            group.to_string(),
            (x - base_x, y - base_y + 6),
            style.clone(),
        ))
        .map_err(chart_error)?;
    }
    Ok(())
}

/// One 2×2 confusion matrix per configuration, side by side.
pub fn confusion_matrices(report: &Report) -> Result<String, ChartError> {
    let reports = report.reports();
    let panel = 340u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (panel * reports.len() as u32, 280))
            .into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let panels = root.split_evenly((1, reports.len()));
        for (area, run) in panels.iter().zip(reports) {
            confusion_panel(area, run)?;
        }
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn confusion_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    run: &RunReport,
) -> Result<(), ChartError> {
    let c = run.overall.confusion;
    let cells = [[("TP", c.tp), ("FN", c.fn_)], [("FP", c.fp), ("TN", c.tn)]];
    let largest = c.tp.max(c.fp).max(c.fn_).max(c.tn).max(1) as f64;
    let (left, top, size) = (130i32, 60i32, 95i32);
    let center = |h| Pos::new(h, VPos::Center);
    let label = ("sans-serif", 13).into_font().color(&BLACK);
    area.draw(&Text::new(
        run.info.config.clone(),
        (left + size, 16),
        ("sans-serif", 17)
            .into_font()
            .color(&BLACK)
            .pos(center(HPos::Center)),
    ))
    .map_err(chart_error)?;
    for (column, text) in ["predicted crash", "predicted no crash"].iter().enumerate() {
        let x = left + size * column as i32 + size / 2;
        area.draw(&Text::new(
            *text,
            (x, top - 12),
            label.clone().pos(center(HPos::Center)),
        ))
        .map_err(chart_error)?;
    }
    for (row, text) in ["actual crash", "actual no crash"].iter().enumerate() {
        let y = top + size * row as i32 + size / 2;
        area.draw(&Text::new(
            *text,
            (left - 8, y),
            label.clone().pos(center(HPos::Right)),
        ))
        .map_err(chart_error)?;
        for (column, (name, count)) in cells[row].iter().enumerate() {
            let x = left + size * column as i32;
            let shade = *count as f64 / largest;
            let fill = RGBColor(
                (255.0 - 200.0 * shade) as u8,
                (255.0 - 130.0 * shade) as u8,
                255,
            );
            area.draw(&Rectangle::new(
                [
                    (x, top + size * row as i32),
                    (x + size, top + size * (row as i32 + 1)),
                ],
                ShapeStyle::from(&fill).filled(),
            ))
            .map_err(chart_error)?;
            area.draw(&Rectangle::new(
                [
                    (x, top + size * row as i32),
                    (x + size, top + size * (row as i32 + 1)),
                ],
                BLACK.stroke_width(1),
            ))
            .map_err(chart_error)?;
            let text_color = if shade > 0.6 { &WHITE } else { &BLACK };
            area.draw(&Text::new(
                format!("{name} {count}"),
                (x + size / 2, y),
                ("sans-serif", 18)
                    .into_font()
                    .color(text_color)
                    .pos(center(HPos::Center)),
            ))
            .map_err(chart_error)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{case, info};

    #[test]
    fn charts_name_groups_configs_and_counts() {
        let report = Report::from_reports(vec![
            RunReport::new(
                info("code_only"),
                vec![
                    case("a", "pandas", true, Some(true)),
                    case("b", "numpy", false, Some(true)),
                ],
            ),
            RunReport::new(
                info("with_runtime"),
                vec![
                    case("a", "pandas", true, Some(true)),
                    case("b", "numpy", false, Some(false)),
                ],
            ),
        ])
        .unwrap();
        let bars = metrics_by_group(&report).unwrap();
        assert!(bars.starts_with("<svg"));
        for text in [
            "pandas",
            "numpy",
            "code_only",
            "with_runtime",
            "F1 per group",
        ] {
            assert!(bars.contains(text), "missing {text}");
        }
        let matrices = confusion_matrices(&report).unwrap();
        for text in ["TP 1", "FP 1", "TN 1", "FN 0", "with_runtime"] {
            assert!(matrices.contains(text), "missing {text}");
        }
    }
}
