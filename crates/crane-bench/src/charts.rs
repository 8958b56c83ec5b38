//! SVG charts of a report: F1 and accuracy per group and per root cause for each
//! configuration, and confusion matrices; every chart is titled with the detector, model,
//! dataset and configurations it shows.

use std::collections::BTreeMap;

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

/// Height of the title band above the panels.
const TITLE_HEIGHT: u32 = 44;

/// What a bar chart breaks the metrics down by.
#[derive(Debug, Clone, Copy)]
enum Breakdown {
    Group,
    RootCause,
}

impl Breakdown {
    fn rows(self, run: &RunReport) -> &BTreeMap<String, Metrics> {
        match self {
            Breakdown::Group => &run.by_group,
            Breakdown::RootCause => &run.by_root_cause,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Breakdown::Group => "group",
            Breakdown::RootCause => "root cause",
        }
    }
}

/// F1 (top) and accuracy (bottom) per group, one bar per configuration, each bar labelled with
/// its value and its number of cases; an undefined value is labelled `n/a` and has no bar, a
/// zero has a hairline bar and `0.00`.
pub fn metrics_by_group(report: &Report) -> Result<String, ChartError> {
    bar_chart(report, Breakdown::Group)
}

/// The same per root cause (API misuse, data confusion, ...).
pub fn metrics_by_root_cause(report: &Report) -> Result<String, ChartError> {
    bar_chart(report, Breakdown::RootCause)
}

fn bar_chart(report: &Report, breakdown: Breakdown) -> Result<String, ChartError> {
    let reports = report.reports();
    let mut groups: Vec<&String> = reports
        .iter()
        .flat_map(|r| breakdown.rows(r).keys())
        .collect();
    groups.sort();
    groups.dedup();
    let width = (160 + groups.len() as u32 * (48 + 24 * reports.len() as u32)).max(720);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (width, 800 + TITLE_HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let (head, body) = root.split_vertically(TITLE_HEIGHT);
        draw_title(
            &head,
            &format!(
                "F1 and accuracy per {}: {}",
                breakdown.name(),
                crate::render::title(report)
            ),
        )?;
        let (top, bottom) = body.split_vertically(400);
        let panel = |area, metric_name, metric: fn(&Metrics) -> Option<f64>| {
            bar_panel(
                area,
                &format!("{metric_name} per {}", breakdown.name()),
                metric_name,
                &groups,
                reports,
                breakdown,
                metric,
            )
        };
        panel(&top, "F1", |m| m.f1)?;
        panel(&bottom, "Accuracy", |m| m.accuracy)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn draw_title(area: &DrawingArea<SVGBackend<'_>, Shift>, text: &str) -> Result<(), ChartError> {
    let (width, height) = area.dim_in_pixel();
    area.draw(&Text::new(
        text.to_owned(),
        (width as i32 / 2, height as i32 / 2),
        ("sans-serif", 17)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(chart_error)
}

fn bar_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    metric_name: &str,
    groups: &[&String],
    reports: &[RunReport],
    breakdown: Breakdown,
    metric: fn(&Metrics) -> Option<f64>,
) -> Result<(), ChartError> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(56)
        // Headroom above 1.0 holds the value labels and the legend.
        .build_cartesian_2d(0f64..groups.len().max(1) as f64, 0f64..1.5)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(7)
        .x_desc(breakdown.name())
        .y_desc(metric_name)
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
    // Backend coordinates are absolute; the area draws relative to its own corner.
    let (base_x, base_y) = area.get_base_pixel();
    let value_style = ("sans-serif", 11)
        .into_font()
        .transform(FontTransform::Rotate270)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (position, run) in reports.iter().enumerate() {
        let color = Palette99::pick(position).to_rgba();
        let mut labels = Vec::new();
        let bars: Vec<Rectangle<(f64, f64)>> = groups
            .iter()
            .enumerate()
            .filter_map(|(index, group)| {
                let metrics = breakdown.rows(run).get(*group)?;
                let left = index as f64 + 0.1 + slot * position as f64;
                let value = metric(metrics);
                let label = match value {
                    Some(value) => format!("{value:.2} n={}", metrics.n),
                    None => format!("n/a n={}", metrics.n),
                };
                let height = value.unwrap_or(0.0);
                labels.push((left + slot * 0.45, height, label));
                // A zero is drawn as a hairline so it reads as measured, unlike n/a.
                let drawn = match value {
                    Some(value) => value.max(0.004),
                    None => return None,
                };
                Some(Rectangle::new(
                    [(left, 0.0), (left + slot * 0.9, drawn)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(chart_error)?
            .label(run.info.config.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        for (x, y, label) in labels {
            let (px, py) = chart.backend_coord(&(x, y));
            area.draw(&Text::new(
                label,
                (px - base_x, py - base_y - 4),
                value_style.clone(),
            ))
            .map_err(chart_error)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(chart_error)?;
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
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
        let width = (panel * reports.len() as u32).max(720);
        let root =
            SVGBackend::with_string(&mut svg, (width, 280 + TITLE_HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let (head, body) = root.split_vertically(TITLE_HEIGHT);
        draw_title(
            &head,
            &format!("Confusion matrices: {}", crate::render::title(report)),
        )?;
        let panels = body.split_evenly((1, reports.len()));
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
        format!("{} (n={})", run.info.config, run.overall.n),
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
            // The title names detector, model, dataset and configurations.
            "llm (replay:gpt_5) on cases",
            // Axis labels.
            ">\ngroup\n<",
            ">\nAccuracy\n<",
            // Value and count per bar; a zero is a measured 0, an undefined F1 is n/a.
            "1.00 n=1",
            "0.00 n=1",
            "n/a n=1",
        ] {
            assert!(bars.contains(text), "missing {text}");
        }
        let causes = metrics_by_root_cause(&report).unwrap();
        assert!(causes.contains("F1 per root cause") && causes.contains("data confusion"));
        let matrices = confusion_matrices(&report).unwrap();
        for text in [
            "TP 1",
            "FP 1",
            "TN 1",
            "FN 0",
            "with_runtime (n=2)",
            "Confusion matrices: llm",
        ] {
            assert!(matrices.contains(text), "missing {text}");
        }
    }
}
