//! SVG plots for `ethlink run`: latency CDFs, port utilisation over time and collective bus
//! bandwidth against message size.
//!
//! Plain data in, an SVG document out: the module does no I/O, and the same input always gives
//! the byte-identical document (no clocks, no randomness, no hash-map ordering). Text is written
//! as SVG `<text>` elements for the viewer to render, so no font files are needed.
//!
//! Points that cannot be placed are skipped rather than reported: NaN and infinite coordinates,
//! coordinates beyond ±1e150 (whose axis arithmetic would overflow), and zero or negative values
//! on a logarithmic axis. A series left without points still gets its legend entry, marked
//! "(no data)"; a series with a single point is drawn as a marker; an axis whose values are all
//! equal is widened around them; a plot without any point says "no data".

use std::ops::Range;

use anyhow::Result;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line: a name and its points (x, y).
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// Shown in the legend.
    pub name: &'a str,
    /// The points, in drawing order.
    pub points: &'a [(f64, f64)],
}

/// Width of every plot, in pixels.
const WIDTH: u32 = 800;
/// Height of every plot, in pixels.
const HEIGHT: u32 = 500;
/// Up to this many lines, a plot has a legend; beyond it, a note with their number.
const MAX_LEGEND: usize = 16;
/// Coordinates beyond this magnitude are skipped (axis arithmetic on them could overflow).
const LIMIT: f64 = 1e150;
/// Font of every text.
const FONT: &str = "sans-serif";

/// Line colours, in series order (repeating after the last). None is black or grey, the colours
/// of the axes and the grid.
const PALETTE: [RGBColor; 16] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0x63, 0x79, 0x39),
    RGBColor(0x8c, 0x6d, 0x31),
    RGBColor(0x84, 0x3c, 0x39),
    RGBColor(0x7b, 0x41, 0x73),
    RGBColor(0x52, 0x54, 0xa3),
    RGBColor(0x6b, 0x6e, 0xcf),
];

/// Latency CDF per operation type: x = latency in ns (log10 axis), y = fraction 0..1. `series`
/// points are (latency_ns, cumulative fraction), already sorted (see [`cdf_points`]).
///
/// The x axis spans whole decades around the data, labelled with units (`100ns`, `1us`, `10ms`).
pub fn latency_cdf(title: &str, series: &[Series<'_>]) -> Result<String> {
    let lines = prepare(series, |x| (x > 0.0).then(|| x.log10()), Some);
    let (x_lo, x_hi) = bounds(&lines, |p| p.0).unwrap_or((1.0, 3.0));
    let (y_lo, y_hi) = bounds(&lines, |p| p.1).unwrap_or((0.0, 1.0));
    let plot = Plot {
        title,
        x: log_axis(x_lo, x_hi, 10, 0.0, 12, format_ns, "latency (log scale)"),
        y: linear_axis(
            y_lo.min(0.0),
            y_hi.max(1.0),
            10,
            "cumulative fraction of operations",
        ),
        lines,
        markers: false,
        count_noun: "series",
    };
    plot.render()
}

/// Per-port utilisation over time: x = simulated time in us, y = utilisation as a fraction
/// (0..1), drawn in percent (0..100 %). One line per port; up to 16 lines get a legend, more get a
/// note "N ports" instead.
pub fn utilisation(title: &str, series: &[Series<'_>]) -> Result<String> {
    let lines = prepare(series, Some, |y| Some(y * 100.0));
    let (x_lo, x_hi) = bounds(&lines, |p| p.0).unwrap_or((0.0, 1.0));
    let (y_lo, y_hi) = bounds(&lines, |p| p.1).unwrap_or((0.0, 100.0));
    let plot = Plot {
        title,
        x: linear_axis(x_lo, x_hi, 10, "simulated time (us)"),
        y: linear_axis(y_lo.min(0.0), y_hi.max(100.0), 10, "utilisation (%)"),
        lines,
        markers: false,
        count_noun: "ports",
    };
    plot.render()
}

/// Collective bus bandwidth against message size: x = size in bytes (log2 axis, labels like
/// `4K`, `1M`, `64M`, powers of 1024), y = bus bandwidth in GB/s; one line per collective, with a
/// marker on every point.
pub fn busbw(title: &str, series: &[Series<'_>]) -> Result<String> {
    let lines = prepare(series, |x| (x > 0.0).then(|| x.log2()), Some);
    let (x_lo, x_hi) = bounds(&lines, |p| p.0).unwrap_or((10.0, 20.0));
    let (y_lo, y_hi) = bounds(&lines, |p| p.1).unwrap_or((0.0, 1.0));
    let plot = Plot {
        title,
        x: log_axis(
            x_lo,
            x_hi,
            2,
            0.3,
            16,
            format_bytes,
            "message size (bytes, log scale)",
        ),
        y: linear_axis(y_lo.min(0.0), y_hi.max(0.0), 8, "bus bandwidth (GB/s)"),
        lines,
        markers: true,
        count_noun: "series",
    };
    plot.render()
}

/// Helper for the CDF: turns unsorted latency samples into (value, fraction) points, at most
/// `max_points` of them.
///
/// The points are evenly spaced quantiles of the sorted samples: the sample of rank `r` (0-based)
/// becomes (sample, (r + 1) / n). The minimum (rank 0) and the maximum (rank n - 1, fraction
/// exactly 1.0) are always included, except that `max_points == 1` gives the maximum alone.
/// Values never decrease and fractions strictly increase. No samples or `max_points == 0` give
/// no points.
pub fn cdf_points(samples: &[u64], max_points: usize) -> Vec<(f64, f64)> {
    let n = samples.len();
    if n == 0 || max_points == 0 {
        return Vec::new();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let point = |rank: usize| (sorted[rank] as f64, (rank + 1) as f64 / n as f64);
    let k = max_points.min(n);
    if k == 1 {
        return vec![point(n - 1)];
    }
    // Rank of the i-th point: round(i * (n - 1) / (k - 1)). As k <= n, ranks strictly increase.
    let (last, steps) = ((n - 1) as u128, (k - 1) as u128);
    (0..k as u128)
        .map(|i| point(((i * last + steps / 2) / steps) as usize))
        .collect()
}

/// A series with its points mapped to plot coordinates.
struct Line<'a> {
    name: &'a str,
    points: Vec<(f64, f64)>,
}

/// Maps every point through `fx` and `fy` (a value they reject, or a non-finite or too large
/// one, drops the point).
fn prepare<'a>(
    series: &[Series<'a>],
    fx: impl Fn(f64) -> Option<f64>,
    fy: impl Fn(f64) -> Option<f64>,
) -> Vec<Line<'a>> {
    let usable = |v: f64| v.is_finite() && v.abs() <= LIMIT;
    let map = |v: f64, f: &dyn Fn(f64) -> Option<f64>| {
        if usable(v) {
            f(v).filter(|m| usable(*m))
        } else {
            None
        }
    };
    series
        .iter()
        .map(|s| Line {
            name: s.name,
            points: s
                .points
                .iter()
                .filter_map(|&(x, y)| Some((map(x, &fx)?, map(y, &fy)?)))
                .collect(),
        })
        .collect()
}

/// The smallest and the largest coordinate over all points, if there is a point.
fn bounds(lines: &[Line<'_>], coord: impl Fn(&(f64, f64)) -> f64) -> Option<(f64, f64)> {
    lines
        .iter()
        .flat_map(|l| l.points.iter())
        .map(coord)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// One axis: its range in plot coordinates, labelled ticks, unlabelled grid lines and title.
struct Axis {
    range: Range<f64>,
    ticks: Vec<(f64, String)>,
    minor: Vec<f64>,
    desc: &'static str,
}

impl Axis {
    /// The plotters coordinate: the range with our ticks as its key points.
    fn coord(&self) -> Scale {
        let bold: Vec<f64> = self.ticks.iter().map(|t| t.0).collect();
        let mut light = bold.clone();
        light.extend(&self.minor);
        Scale {
            range: self.range.clone(),
            bold,
            light,
        }
    }

    /// The label of the tick at `v` (plotters hands back the very values of `ticks`).
    fn label(&self, v: f64) -> String {
        self.ticks
            .iter()
            .find(|t| t.0.to_bits() == v.to_bits())
            .map_or_else(|| format_number(v, 6), |t| t.1.clone())
    }
}

/// A linear plotters coordinate with given grid lines: `bold` ones (labelled) and `light` ones.
struct Scale {
    range: Range<f64>,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for Scale {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let fraction = (value - self.range.start) / (self.range.end - self.range.start);
        let pixels = f64::from(limit.1 - limit.0) * fraction;
        limit.0 + pixels.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A step of 1, 2 or 5 times a power of ten, about `raw` or more.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let f = raw / magnitude;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A linear axis covering `lo..=hi` with at most about `target` ticks at round values (widened
/// when `lo == hi`).
fn linear_axis(lo: f64, hi: f64, target: u32, desc: &'static str) -> Axis {
    // Equal bounds (or nearly: ticks need distinct values) are widened around them.
    let (lo, hi) = if hi - lo > lo.abs().max(hi.abs()) * 1e-9 {
        (lo, hi)
    } else if lo == 0.0 && hi == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
    };
    let step = nice_step((hi - lo) / f64::from(target));
    let (first, last) = ((lo / step).floor(), (hi / step).ceil());
    let decimals = (-step.log10().floor()).clamp(0.0, 15.0) as usize;
    let count = ((last - first) as usize).min(1000);
    let ticks = (0..=count)
        .map(|i| {
            let v = (first + i as f64) * step;
            (v, format_number(v, decimals))
        })
        .collect();
    Axis {
        range: first * step..last * step,
        ticks,
        minor: Vec::new(),
        desc,
    }
}

/// A logarithmic axis in exponents of `base` covering `lo..=hi` (exponents), extended to whole
/// powers plus `pad`. Ticks are at whole powers, every 1, 2, 5, 10, ... of them so that at most
/// `max_labels` are labelled (by `format` of the power's value); unlabelled powers (and, for
/// base 10 over at most 6 decades, the multiples 2..9) get grid lines. Decimal axes over at most
/// two decades also label the multiples 2 and 5.
fn log_axis(
    lo: f64,
    hi: f64,
    base: u32,
    pad: f64,
    max_labels: usize,
    format: fn(f64) -> String,
    desc: &'static str,
) -> Axis {
    let (mut first, mut last) = (lo.floor(), hi.ceil());
    if first == last {
        first -= 1.0;
        last += 1.0;
    }
    let base_f = f64::from(base);
    let powers = (last - first) as usize;
    let mut stride = 1;
    'search: for scale in [1, 10, 100, 1000] {
        for m in [1, 2, 5] {
            stride = m * scale;
            if powers / stride < max_labels {
                break 'search;
            }
        }
    }
    let mut ticks = Vec::new();
    let mut minor = Vec::new();
    for i in 0..=powers.min(100_000) {
        let e = first + i as f64;
        if (e as i64).rem_euclid(stride as i64) == 0 {
            ticks.push((e, format(base_f.powf(e))));
        } else {
            minor.push(e);
        }
        if base == 10 && e < last && powers <= 6 {
            for m in 2..=9 {
                let sub = e + f64::from(m).log10();
                if powers <= 2 && (m == 2 || m == 5) {
                    ticks.push((sub, format(f64::from(m) * base_f.powf(e))));
                } else {
                    minor.push(sub);
                }
            }
        }
    }
    Axis {
        range: first - pad..last + pad,
        ticks,
        minor,
        desc,
    }
}

/// `v` with `decimals` digits after the point, without a negative zero.
fn format_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// `v` scaled by `unit`, with at most three significant digits and no trailing zeros.
fn format_scaled(v: f64, unit: f64, suffix: &str) -> String {
    let scaled = v / unit;
    let decimals = (2.0 - scaled.abs().log10().floor()).clamp(0.0, 12.0) as usize;
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}

/// A latency in ns with its unit: `500ns`, `2us`, `10ms`, `1s`.
fn format_ns(v: f64) -> String {
    match v {
        v if v >= 1e9 => format_scaled(v, 1e9, "s"),
        v if v >= 1e6 => format_scaled(v, 1e6, "ms"),
        v if v >= 1e3 => format_scaled(v, 1e3, "us"),
        v => format_scaled(v, 1.0, "ns"),
    }
}

/// A size in bytes with a binary prefix: `64`, `4K`, `1M`, `2G`, `1T` (powers of 1024).
fn format_bytes(v: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1024.0 * 1024.0 * 1024.0 * 1024.0, "T"),
        (1024.0 * 1024.0 * 1024.0, "G"),
        (1024.0 * 1024.0, "M"),
        (1024.0, "K"),
    ];
    UNITS.iter().find(|(unit, _)| v >= *unit).map_or_else(
        || format_scaled(v, 1.0, ""),
        |&(unit, suffix)| format_scaled(v, unit, suffix),
    )
}

/// `text` without the control characters XML 1.0 forbids (each becomes a space).
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A name made printable and shortened to fit the legend.
fn legend_name(line: &Line<'_>) -> String {
    const MAX: usize = 28;
    let mut name: String = printable(line.name).chars().take(MAX).collect();
    if line.name.chars().count() > MAX {
        name.pop();
        name.push('…');
    }
    if line.points.is_empty() {
        name.push_str(" (no data)");
    }
    name
}

/// Everything one plot shows.
struct Plot<'a> {
    title: &'a str,
    x: Axis,
    y: Axis,
    lines: Vec<Line<'a>>,
    /// Whether every point gets a marker (single points always do).
    markers: bool,
    /// What the lines are, for the note that replaces a legend that would be too long.
    count_noun: &'static str,
}

impl Plot<'_> {
    fn render(&self) -> Result<String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE)?;
            let body = root.titled(&printable(self.title), (FONT, 24))?;
            let legend = self.lines.len() <= MAX_LEGEND && !self.lines.is_empty();
            let (chart_area, legend_area) = if legend {
                let names = self.lines.iter().map(|l| legend_name(l).chars().count());
                let width = (names.max().unwrap_or(0) as u32 * 7 + 50).clamp(110, 260);
                let (left, right) = body.split_horizontally(WIDTH - width);
                (left, Some(right))
            } else {
                (body.clone(), None)
            };
            self.draw_chart(&chart_area)?;
            if let Some(area) = legend_area {
                self.draw_legend(&area)?;
            }
            let plotted = self.lines.iter().any(|l| !l.points.is_empty());
            if self.lines.len() > MAX_LEGEND {
                let style = TextStyle::from((FONT, 14)).pos(Pos::new(HPos::Right, VPos::Top));
                let note = format!("{} {}", self.lines.len(), self.count_noun);
                body.draw(&Text::new(note, (WIDTH as i32 - 25, 2), style))?;
            }
            if !plotted {
                let (w, h) = chart_area.dim_in_pixel();
                let style = TextStyle::from((FONT, 24)).pos(Pos::new(HPos::Center, VPos::Center));
                chart_area.draw(&Text::new(
                    "no data",
                    (w as i32 / 2 + 35, h as i32 / 2),
                    style,
                ))?;
            }
            root.present()?;
        }
        Ok(svg)
    }

    fn draw_chart(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<()> {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(self.x.coord(), self.y.coord())?;
        let x_label = |v: &f64| self.x.label(*v);
        let y_label = |v: &f64| self.y.label(*v);
        chart
            .configure_mesh()
            .x_desc(self.x.desc)
            .y_desc(self.y.desc)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .bold_line_style(BLACK.mix(0.18))
            .light_line_style(BLACK.mix(0.06))
            .draw()?;
        let many = self.lines.len() > MAX_LEGEND;
        for (i, line) in self.lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let stroke = if many {
                color.mix(0.8).stroke_width(1)
            } else {
                color.stroke_width(2)
            };
            if line.points.len() >= 2 {
                chart.draw_series(LineSeries::new(line.points.iter().copied(), stroke))?;
            }
            if self.markers || line.points.len() == 1 {
                let dots = line
                    .points
                    .iter()
                    .map(|&p| Circle::new(p, 3, color.filled()));
                chart.draw_series(dots)?;
            }
        }
        Ok(())
    }

    fn draw_legend(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<()> {
        let style = TextStyle::from((FONT, 14)).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, line) in self.lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let y = 24 + 22 * i as i32;
            area.draw(&Rectangle::new([(4, y - 2), (28, y + 2)], color.filled()))?;
            if self.markers || line.points.len() == 1 {
                area.draw(&Circle::new((16, y), 3, color.filled()))?;
            }
            area.draw(&Text::new(legend_name(line), (36, y), style.clone()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One element of a document: its name and its attributes.
    #[derive(Debug)]
    struct Element {
        name: String,
        attrs: Vec<(String, String)>,
    }

    impl Element {
        fn attr(&self, key: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        }
    }

    /// Checks that `svg` is one well-formed `<svg>` element (tags nest and close, attributes are
    /// quoted, text holds no raw `<` and only known entities) and returns its elements in order.
    fn parse(svg: &str) -> Vec<Element> {
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "start: {:?}",
            &svg[..20]
        );
        assert!(svg.trim_end().ends_with("</svg>"), "end of document");
        let check_text = |text: &str| {
            assert!(!text.contains('>'), "raw '>' in {text:?}");
            let mut rest = text;
            while let Some(i) = rest.find('&') {
                rest = &rest[i..];
                let known = ["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"];
                assert!(
                    known.iter().any(|e| rest.starts_with(e)),
                    "bad entity in {text:?}"
                );
                rest = &rest[1..];
            }
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "control character"
            );
        };
        let mut elements = Vec::new();
        let mut stack: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            check_text(&rest[..open]);
            assert!(
                open == 0 || !stack.is_empty(),
                "text outside the root element"
            );
            rest = &rest[open + 1..];
            if let Some(body) = rest.strip_prefix('?') {
                rest = &body[body.find("?>").expect("unclosed declaration") + 2..];
                continue;
            }
            if let Some(name) = rest.strip_prefix('/') {
                let end = name.find('>').expect("unclosed end tag");
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(&name[..end]),
                    "mismatched end tag"
                );
                rest = &name[end + 1..];
                continue;
            }
            let name_end = rest.find(|c: char| c.is_whitespace() || c == '>' || c == '/');
            let name_end = name_end.expect("unclosed tag");
            let name = rest[..name_end].to_string();
            assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()));
            rest = &rest[name_end..];
            let mut attrs = Vec::new();
            loop {
                rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix("/>") {
                    rest = after;
                    break;
                }
                if let Some(after) = rest.strip_prefix('>') {
                    stack.push(name.clone());
                    rest = after;
                    break;
                }
                let eq = rest.find("=\"").expect("attribute without a quoted value");
                let key = rest[..eq].to_string();
                assert!(
                    key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                    "{key:?}"
                );
                let value_len = rest[eq + 2..].find('"').expect("unclosed attribute value");
                let value = &rest[eq + 2..eq + 2 + value_len];
                check_text(value);
                attrs.push((key, value.to_string()));
                rest = &rest[eq + 2 + value_len + 1..];
            }
            if elements.is_empty() {
                assert_eq!(name, "svg", "root element");
            } else {
                assert!(!stack.is_empty() || name == "svg", "second root element");
            }
            elements.push(Element { name, attrs });
        }
        check_text(rest);
        assert!(rest.trim().is_empty(), "text after the root element");
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        elements
    }

    /// The SVG spelling of a palette colour.
    fn hex(color: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2)
    }

    /// The pixel points of every polyline drawn in the colour of series `i`.
    fn series_lines(elements: &[Element], i: usize) -> Vec<Vec<(f64, f64)>> {
        let stroke = hex(PALETTE[i % PALETTE.len()]);
        elements
            .iter()
            .filter(|e| e.name == "polyline" && e.attr("stroke") == Some(stroke.as_str()))
            .map(|e| {
                let points = e.attr("points").expect("polyline points");
                points
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').expect("x,y");
                        (x.parse().expect("x"), y.parse().expect("y"))
                    })
                    .collect()
            })
            .collect()
    }

    /// Every polyline drawn in a series colour.
    fn all_series_lines(elements: &[Element]) -> usize {
        let colors: Vec<String> = PALETTE.iter().map(|c| hex(*c)).collect();
        let is_series = |e: &&Element| {
            e.name == "polyline"
                && e.attr("stroke")
                    .is_some_and(|s| colors.iter().any(|c| c == s))
        };
        elements.iter().filter(is_series).count()
    }

    /// The texts of the document, in order.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()]
                    .trim()
                    .to_string()
            })
            .collect()
    }

    /// Checks the polylines of every series with at least two points: one each, with as many
    /// points as the series has usable ones, all inside the picture.
    fn check_lines(elements: &[Element], usable: &[usize]) {
        for (i, &n) in usable.iter().enumerate() {
            let lines = series_lines(elements, i);
            if n >= 2 {
                assert_eq!(lines.len(), 1, "series {i}: one polyline");
                assert_eq!(lines[0].len(), n, "series {i}: its points");
                for &(x, y) in &lines[0] {
                    assert!((0.0..=f64::from(WIDTH)).contains(&x), "series {i}: x {x}");
                    assert!((0.0..=f64::from(HEIGHT)).contains(&y), "series {i}: y {y}");
                }
            } else {
                assert!(lines.is_empty(), "series {i}: no polyline for {n} points");
            }
        }
        assert_eq!(
            all_series_lines(elements),
            usable.iter().filter(|&&n| n >= 2).count()
        );
    }

    fn lcg(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        }
    }

    fn sample_cdfs() -> Vec<(&'static str, Vec<(f64, f64)>)> {
        let mut next = lcg(7);
        [("load", 400), ("store", 300), ("rdma write", 8000)]
            .into_iter()
            .map(|(name, base)| {
                let samples: Vec<u64> = (0..2000).map(|_| base + next() % (base * 3)).collect();
                (name, cdf_points(&samples, 100))
            })
            .collect()
    }

    fn as_series<'a>(data: &'a [(&'a str, Vec<(f64, f64)>)]) -> Vec<Series<'a>> {
        data.iter()
            .map(|(name, points)| Series { name, points })
            .collect()
    }

    fn ports(n: usize, samples: usize) -> Vec<(String, Vec<(f64, f64)>)> {
        let mut next = lcg(n as u64);
        (0..n)
            .map(|p| {
                let points = (0..samples).map(|t| (t as f64 * 0.25, (next() % 101) as f64 / 100.0));
                (format!("port {p}"), points.collect())
            })
            .collect()
    }

    fn port_series(data: &[(String, Vec<(f64, f64)>)]) -> Vec<Series<'_>> {
        data.iter()
            .map(|(name, points)| Series { name, points })
            .collect()
    }

    fn sizes(bw: f64) -> Vec<(f64, f64)> {
        (12..=26)
            .map(|e| (f64::from(1u32 << e), bw * f64::from(e - 11)))
            .collect()
    }

    #[test]
    fn latency_cdf_is_well_formed_with_a_line_per_series_and_unit_labels() {
        let data = sample_cdfs();
        let svg = latency_cdf("Latency <CDF> & more", &as_series(&data)).unwrap();
        let elements = parse(&svg);
        check_lines(&elements, &[100, 100, 100]);
        let texts = texts(&svg);
        assert!(
            texts.contains(&"Latency &lt;CDF&gt; &amp; more".to_string()),
            "{texts:?}"
        );
        for label in [
            "100ns",
            "1us",
            "10us",
            "100us",
            "load",
            "store",
            "rdma write",
            "1.0",
            "0.5",
        ] {
            assert!(
                texts.iter().any(|t| t == label),
                "label {label} in {texts:?}"
            );
        }
        assert!(
            texts.iter().any(|t| t.starts_with("latency")),
            "x axis title"
        );
        assert!(
            !svg.contains("NaN") && !svg.contains("inf"),
            "no unplaceable number"
        );
    }

    #[test]
    fn latency_axis_is_logarithmic() {
        let points = [
            (100.0, 0.25),
            (1000.0, 0.5),
            (10000.0, 0.75),
            (100000.0, 1.0),
        ];
        let svg = latency_cdf(
            "log",
            &[Series {
                name: "op",
                points: &points,
            }],
        )
        .unwrap();
        let line = &series_lines(&parse(&svg), 0)[0];
        let dx: Vec<f64> = line.windows(2).map(|w| w[1].0 - w[0].0).collect();
        let dy: Vec<f64> = line.windows(2).map(|w| w[0].1 - w[1].1).collect();
        for d in dx.iter().chain(&dy) {
            assert!(
                (d - dx[0]).abs() <= 1.0 || (d - dy[0]).abs() <= 1.0,
                "{dx:?} {dy:?}"
            );
        }
        for w in dx.windows(2).chain(dy.windows(2)) {
            assert!(
                (w[0] - w[1]).abs() <= 1.0,
                "decades and quarters equally spaced: {dx:?} {dy:?}"
            );
        }
        assert!(dx[0] > 50.0 && dy[0] > 50.0, "{dx:?} {dy:?}");
    }

    #[test]
    fn utilisation_has_a_legend_up_to_16_ports() {
        let data = ports(16, 41);
        let svg = utilisation("Utilisation", &port_series(&data)).unwrap();
        let elements = parse(&svg);
        check_lines(&elements, &[41; 16]);
        let texts = texts(&svg);
        for p in 0..16 {
            assert!(texts.contains(&format!("port {p}")), "legend entry {p}");
        }
        assert!(
            !texts.iter().any(|t| t.ends_with("ports")),
            "no note with a legend"
        );
        assert!(texts.iter().any(|t| t == "utilisation (%)"), "{texts:?}");
        assert!(
            texts.iter().any(|t| t == "simulated time (us)"),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "100"), "percent axis: {texts:?}");
    }

    #[test]
    fn utilisation_of_many_ports_has_a_note_instead_of_a_legend() {
        let data = ports(64, 21);
        let svg = utilisation("Utilisation", &port_series(&data)).unwrap();
        let elements = parse(&svg);
        assert_eq!(all_series_lines(&elements), 64, "one line per port");
        let texts = texts(&svg);
        assert!(texts.contains(&"64 ports".to_string()), "{texts:?}");
        assert!(
            !texts.iter().any(|t| t.starts_with("port ")),
            "no legend entry"
        );
    }

    #[test]
    fn utilisation_maps_fractions_to_percent_linearly() {
        let points = [(0.0, 0.0), (1.0, 1.0), (2.0, 0.5), (3.0, 0.25)];
        let svg = utilisation(
            "u",
            &[Series {
                name: "p",
                points: &points,
            }],
        )
        .unwrap();
        let line = &series_lines(&parse(&svg), 0)[0];
        let (zero, full) = (line[0].1, line[1].1);
        assert!(
            zero - full > 300.0,
            "0 % at the bottom, 100 % at the top: {line:?}"
        );
        assert!(
            (line[2].1 - (zero + full) / 2.0).abs() <= 1.0,
            "50 % midway: {line:?}"
        );
        assert!(
            (line[3].1 - (3.0 * zero + full) / 4.0).abs() <= 1.0,
            "25 %: {line:?}"
        );
        assert!(
            (line[1].0 - line[0].0 - (line[3].0 - line[2].0)).abs() <= 1.0,
            "time linear"
        );
    }

    #[test]
    fn busbw_has_size_labels_markers_and_a_log2_axis() {
        let (ring, hd) = (sizes(10.0), sizes(12.0));
        let series = [
            Series {
                name: "ring all-reduce",
                points: &ring,
            },
            Series {
                name: "halving-doubling",
                points: &hd,
            },
        ];
        let svg = busbw("Bus bandwidth", &series).unwrap();
        let elements = parse(&svg);
        check_lines(&elements, &[15, 15]);
        let texts = texts(&svg);
        for label in [
            "4K",
            "64K",
            "1M",
            "64M",
            "bus bandwidth (GB/s)",
            "ring all-reduce",
        ] {
            assert!(
                texts.iter().any(|t| t == label),
                "label {label} in {texts:?}"
            );
        }
        for (i, points) in [&ring, &hd].into_iter().enumerate() {
            let fill = hex(PALETTE[i]);
            let markers = elements
                .iter()
                .filter(|e| e.name == "circle" && e.attr("fill") == Some(fill.as_str()))
                .count();
            assert_eq!(
                markers,
                points.len() + 1,
                "a marker per point, one in the legend"
            );
        }
        let line = &series_lines(&elements, 0)[0];
        let dx: Vec<f64> = line.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(
            dx.iter().all(|d| (d - dx[0]).abs() <= 1.0 && *d > 10.0),
            "doublings: {dx:?}"
        );
    }

    #[test]
    fn same_input_gives_identical_documents() {
        let data = sample_cdfs();
        let series = as_series(&data);
        assert_eq!(
            latency_cdf("t", &series).unwrap(),
            latency_cdf("t", &series).unwrap()
        );
        let data = ports(24, 30);
        let series = port_series(&data);
        assert_eq!(
            utilisation("t", &series).unwrap(),
            utilisation("t", &series).unwrap()
        );
        let points = sizes(3.0);
        let series = [Series {
            name: "ring",
            points: &points,
        }];
        assert_eq!(busbw("t", &series).unwrap(), busbw("t", &series).unwrap());
        assert_ne!(busbw("t", &series).unwrap(), busbw("u", &series).unwrap());
    }

    type PlotFn = fn(&str, &[Series<'_>]) -> Result<String>;
    const PLOTS: [(&str, PlotFn); 3] = [
        ("cdf", latency_cdf),
        ("utilisation", utilisation),
        ("busbw", busbw),
    ];

    #[test]
    fn no_series_gives_a_plot_saying_no_data() {
        for (what, plot) in PLOTS {
            let svg = plot("empty", &[]).unwrap();
            let elements = parse(&svg);
            assert_eq!(all_series_lines(&elements), 0, "{what}");
            let texts = texts(&svg);
            assert!(texts.contains(&"no data".to_string()), "{what}: {texts:?}");
            assert!(texts.contains(&"empty".to_string()), "{what}: title");
        }
    }

    #[test]
    fn degenerate_series_are_drawn_or_skipped_without_panicking() {
        let empty: [(f64, f64); 0] = [];
        let single = [(2048.0, 0.5)];
        let equal = [(4096.0, 0.5); 5];
        let bad = [
            (f64::NAN, 0.5),
            (1024.0, f64::INFINITY),
            (f64::NEG_INFINITY, 0.1),
            (0.0, 0.2),
            (-8.0, 0.3),
            (1e200, 0.4),
            (512.0, 0.6),
            (8192.0, 0.9),
        ];
        let series = [
            Series {
                name: "empty",
                points: &empty,
            },
            Series {
                name: "single",
                points: &single,
            },
            Series {
                name: "equal",
                points: &equal,
            },
            Series {
                name: "bad\u{1}",
                points: &bad,
            },
        ];
        // On the log axes, 0 and -8 are skipped; on the linear time axis they are kept.
        for (what, plot, usable) in [
            ("cdf", latency_cdf as PlotFn, [0, 1, 5, 2]),
            ("utilisation", utilisation, [0, 1, 5, 4]),
            ("busbw", busbw, [0, 1, 5, 2]),
        ] {
            let svg = plot("edge cases", &series).unwrap();
            let elements = parse(&svg);
            check_lines(&elements, &usable);
            let texts = texts(&svg);
            assert!(
                texts.contains(&"empty (no data)".to_string()),
                "{what}: {texts:?}"
            );
            assert!(
                texts.contains(&"bad".to_string()),
                "{what}: control character as a space"
            );
            assert!(
                !texts.contains(&"no data".to_string()),
                "{what}: there is data"
            );
            let single_fill = hex(PALETTE[1]);
            let single_dots = elements
                .iter()
                .filter(|e| e.name == "circle" && e.attr("fill") == Some(single_fill.as_str()))
                .count();
            assert_eq!(
                single_dots, 2,
                "{what}: a single point gets a marker (and its legend)"
            );
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{what}");
        }
    }

    #[test]
    fn all_equal_values_widen_the_axes() {
        for (what, plot) in PLOTS {
            for v in [0.0, 1.0, 1e-6, 1e12, -3.0] {
                let points = [(v, v), (v, v), (v, v)];
                let svg = plot(
                    "",
                    &[Series {
                        name: "flat",
                        points: &points,
                    }],
                )
                .unwrap();
                let elements = parse(&svg);
                let usable = if v > 0.0 || what == "utilisation" {
                    3
                } else {
                    0
                };
                check_lines(&elements, &[usable]);
                let texts = texts(&svg);
                let numbers = texts
                    .iter()
                    .filter(|t| t.trim_start_matches('-').starts_with(char::is_numeric));
                assert!(
                    numbers.count() >= 4,
                    "{what} {v}: axes with ticks: {texts:?}"
                );
                assert!(!svg.contains("NaN") && !svg.contains("inf"), "{what} {v}");
            }
        }
    }

    #[test]
    fn only_unusable_points_give_no_data() {
        let points = [(f64::NAN, 1.0), (0.0, 0.5), (-1.0, f64::INFINITY)];
        let svg = busbw(
            "x",
            &[Series {
                name: "s",
                points: &points,
            }],
        )
        .unwrap();
        let texts = texts(&svg);
        assert!(texts.contains(&"no data".to_string()), "{texts:?}");
        assert!(texts.contains(&"s (no data)".to_string()), "{texts:?}");
    }

    /// Checks the documented properties of `cdf_points(samples, max)`.
    fn check_cdf(samples: &[u64], max: usize) {
        let points = cdf_points(samples, max);
        let ctx = format!("{} samples, max {max}: {points:?}", samples.len());
        if samples.is_empty() || max == 0 {
            assert!(points.is_empty(), "{ctx}");
            return;
        }
        assert_eq!(points.len(), max.min(samples.len()), "{ctx}");
        let (min, maxv) = (
            *samples.iter().min().unwrap(),
            *samples.iter().max().unwrap(),
        );
        assert!(
            points.windows(2).all(|w| w[0].0 <= w[1].0),
            "values never decrease: {ctx}"
        );
        assert!(
            points.windows(2).all(|w| w[0].1 < w[1].1),
            "fractions increase: {ctx}"
        );
        assert!(points[0].1 > 0.0, "{ctx}");
        assert_eq!(points.last().unwrap(), &(maxv as f64, 1.0), "{ctx}");
        if max >= 2 {
            assert_eq!(points[0], (min as f64, 1.0 / samples.len() as f64), "{ctx}");
        }
        for &(v, f) in &points {
            let below = samples.iter().filter(|&&s| (s as f64) < v).count() as f64;
            let up_to = samples.iter().filter(|&&s| s as f64 <= v).count() as f64;
            let n = samples.len() as f64;
            assert!(
                below / n < f && f <= up_to / n,
                "({v}, {f}) on the empirical CDF: {ctx}"
            );
        }
    }

    #[test]
    fn cdf_points_are_quantiles_with_min_and_max() {
        let mut next = lcg(3);
        for n in [0, 1, 2, 3, 5, 17, 100, 1001] {
            let samples: Vec<u64> = (0..n).map(|_| 100 + next() % 5000).collect();
            for max in [0, 1, 2, 3, 10, 100, 5000] {
                check_cdf(&samples, max);
            }
        }
    }

    #[test]
    fn cdf_points_of_repeated_and_extreme_values() {
        check_cdf(&[7; 50], 10);
        check_cdf(&[u64::MAX, 0, u64::MAX, 1], 3);
        check_cdf(&[5, 5, 5, 9, 9, 1], 4);
        let points = cdf_points(&[30, 10, 20, 40], 10);
        assert_eq!(
            points,
            vec![(10.0, 0.25), (20.0, 0.5), (30.0, 0.75), (40.0, 1.0)]
        );
        let points = cdf_points(&(1..=101).collect::<Vec<u64>>(), 5);
        let values: Vec<f64> = points.iter().map(|p| p.0).collect();
        assert_eq!(
            values,
            vec![1.0, 26.0, 51.0, 76.0, 101.0],
            "evenly spaced quantiles"
        );
        assert_eq!(cdf_points(&[3, 1, 2], 1), vec![(3.0, 1.0)]);
    }

    #[test]
    fn axis_labels() {
        assert_eq!(format_ns(100.0), "100ns");
        assert_eq!(format_ns(2000.0), "2us");
        assert_eq!(format_ns(1e7), "10ms");
        assert_eq!(format_ns(1e9), "1s");
        assert_eq!(format_ns(0.5), "0.5ns");
        assert_eq!(format_bytes(64.0), "64");
        assert_eq!(format_bytes(4096.0), "4K");
        assert_eq!(format_bytes(f64::from(1u32 << 20)), "1M");
        assert_eq!(format_bytes(f64::from(1u32 << 26)), "64M");
        assert_eq!(format_bytes(2.0 * f64::from(1u32 << 30)), "2G");
        assert_eq!(format_bytes(0.5), "0.5");
        assert_eq!(format_number(-0.0, 1), "0.0");
        let axis = linear_axis(0.0, 1.0, 10, "");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"
            ]
        );
        let axis = log_axis(2.5, 3.5, 10, 0.0, 12, format_ns, "");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            ["100ns", "200ns", "500ns", "1us", "2us", "5us", "10us"]
        );
        assert_eq!(axis.range, 2.0..4.0, "whole decades");
        let axis = log_axis(1.0, 7.5, 10, 0.0, 12, format_ns, "");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "10ns", "100ns", "1us", "10us", "100us", "1ms", "10ms", "100ms"
            ]
        );
        let axis = log_axis(2.0, 32.0, 2, 0.0, 16, format_bytes, "");
        assert!(axis.ticks.len() <= 16, "{:?}", axis.ticks);
        assert!(axis.ticks.iter().any(|t| t.1 == "1K") && axis.ticks.iter().any(|t| t.1 == "4G"));
    }
}
