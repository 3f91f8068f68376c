//! The chart: closures still running over time, one step line per run, as hand-written SVG.

use std::fmt::Write;

/// One run's line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Series<'a> {
    pub(crate) label: &'a str,
    /// A second, quieter line under the label: how the run spawned its jobs.
    pub(crate) detail: &'a str,
    pub(crate) color: &'a str,
    /// Line width; the first series is drawn widest, so a later one on top of it stays visible.
    pub(crate) width: f64,
    /// (seconds since the run's first timeout fired, closures running), in time order; the
    /// samples before the timeout have negative times.
    pub(crate) samples: &'a [(f64, usize)],
}

/// What to draw.
#[derive(Clone, Debug)]
pub(crate) struct Chart<'a> {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) series: Vec<Series<'a>>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 56.0;
const FONT: &str = "font-family=\"Helvetica, Arial, sans-serif\"";

impl Chart<'_> {
    /// The chart as a standalone SVG document.
    pub(crate) fn to_svg(&self) -> String {
        let times = || {
            self.series
                .iter()
                .flat_map(|s| s.samples.iter().map(|&(t, _)| t))
        };
        let start = times().fold(0.0, f64::min);
        let end = times().fold(0.0, f64::max).max(start + 0.001);
        let top_value = self
            .series
            .iter()
            .flat_map(|s| s.samples.iter().map(|&(_, n)| n))
            .max()
            .unwrap_or(0)
            .max(1);
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let x = |t: f64| LEFT + (t - start) / (end - start) * plot_w;
        // Headroom above the highest line, so it does not run along the frame.
        let y_span = top_value as f64 * 1.12;
        let y = |n: usize| TOP + plot_h - n as f64 / y_span * plot_h;

        let mut svg = String::new();
        // `write!` to a String cannot fail; the results are ignored on purpose.
        let _ = writeln!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
             viewBox=\"0 0 {WIDTH} {HEIGHT}\" {FONT} font-size=\"13\">"
        );
        let _ = writeln!(
            svg,
            "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"
        );
        let _ = writeln!(
            svg,
            "<text x=\"{LEFT}\" y=\"28\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">{}</text>",
            escape(&self.title)
        );
        let _ = writeln!(
            svg,
            "<text x=\"{LEFT}\" y=\"49\" fill=\"#555\">{}</text>",
            escape(&self.subtitle)
        );

        // Grid and y axis: whole numbers of closures.
        let y_step = nice_step(top_value as f64, 6).max(1.0) as usize;
        for n in (0..=top_value).step_by(y_step) {
            let _ = writeln!(
                svg,
                "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{n}</text>",
                LEFT + plot_w,
                y(n),
                y(n),
                LEFT - 8.0,
                y(n) + 4.0
            );
        }
        // x axis: seconds, with a tick at 0, the timeout.
        let x_step = nice_step(end - start, 8);
        let mut t = (start / x_step).ceil() * x_step;
        while t <= end + 1e-9 {
            let _ = writeln!(
                svg,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#999\"/>\
                 <text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\" fill=\"#555\">{4}</text>",
                x(t),
                TOP + plot_h,
                TOP + plot_h + 5.0,
                TOP + plot_h + 20.0,
                trim_seconds(t)
            );
            t += x_step;
        }
        let (right, bottom) = (LEFT + plot_w, TOP + plot_h);
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{right:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\" stroke=\"#999\"/>\
             <line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{bottom:.1}\" stroke=\"#999\"/>"
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">seconds since the timeouts fired</text>",
            LEFT + plot_w / 2.0,
            HEIGHT - 14.0
        );
        let _ = writeln!(
            svg,
            "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#555\">closures running</text>",
            TOP + plot_h / 2.0
        );

        // The moment the timeouts fired.
        let tx = x(0.0);
        let _ = writeln!(
            svg,
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"5 4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#666\">timeouts fire</text>",
            TOP + plot_h,
            tx + 5.0,
            TOP + 14.0
        );

        // The lines, then a label at each line's end, nudged apart where they would overlap.
        let mut label_ys: Vec<f64> = Vec::new();
        for series in &self.series {
            let Some(&(_, last)) = series.samples.last() else {
                continue;
            };
            let mut points = String::new();
            let mut previous: Option<usize> = None;
            for &(at, n) in series.samples {
                let px = x(at);
                if let Some(prev) = previous {
                    let _ = write!(points, "{px:.1},{:.1} ", y(prev));
                }
                let _ = write!(points, "{px:.1},{:.1} ", y(n));
                previous = Some(n);
            }
            let _ = writeln!(
                svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
                 stroke-linejoin=\"round\" stroke-opacity=\"0.9\"/>",
                points.trim_end(),
                series.color,
                series.width
            );
            let mut label_y = y(last) + 4.0;
            while label_ys.iter().any(|&other| (other - label_y).abs() < 32.0) {
                label_y -= 32.0;
            }
            label_ys.push(label_y);
            let _ = writeln!(
                svg,
                "<text x=\"{0:.1}\" y=\"{label_y:.1}\" fill=\"{1}\" font-weight=\"bold\">{2}: {last} running</text>\
                 <text x=\"{0:.1}\" y=\"{3:.1}\" fill=\"{1}\" font-size=\"12\">{4}</text>",
                LEFT + plot_w + 10.0,
                series.color,
                escape(series.label),
                label_y + 15.0,
                escape(series.detail)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// A round step (1, 2, 2.5 or 5 times a power of ten) that cuts `span` into at most `max` parts.
fn nice_step(span: f64, max: usize) -> f64 {
    let rough = span / max as f64;
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&step| step >= rough)
        .unwrap_or(10.0 * power)
}

fn trim_seconds(t: f64) -> String {
    let text = format!("{t:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".to_owned(),
        _ => text.to_owned(),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
