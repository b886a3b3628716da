//! File text for diagnostics that never overwhelms the renderer.
//!
//! miette's graphical renderer panics on a line longer than 65,535 columns
//! (a minified lock file, a file whose only line breaks are lone `CR`s) after
//! printing the whole line. [`ClippedText`] is the [`SourceCode`] of our
//! diagnostics: lone `CR`s count as line breaks (offsets unchanged, one byte
//! each), and when a line around the span is longer than [`MAX_COLUMNS`]
//! bytes only a window of the span's own line is shown.

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// Longest line shown whole; longer ones are clipped to a window.
pub const MAX_COLUMNS: usize = 2_000;

/// Bytes shown on each side of the span in a clipped window.
const WINDOW: usize = 160;

/// Source text for a diagnostic (see the module docs).
#[derive(Debug, Clone)]
pub struct ClippedText {
    text: String,
}

impl ClippedText {
    /// Wraps `text`, turning lone `CR`s into `LF`s.
    pub fn new(text: impl Into<String>) -> ClippedText {
        let mut text = text.into();
        if text.contains('\r') {
            let bytes = text.as_bytes();
            let lone: Vec<usize> = (0..bytes.len())
                .filter(|&i| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
                .collect();
            if !lone.is_empty() {
                let mut owned = std::mem::take(&mut text).into_bytes();
                for i in lone {
                    owned[i] = b'\n';
                }
                // Replacing one ASCII byte by another keeps the text UTF-8.
                text = String::from_utf8(owned).unwrap_or_default();
            }
        }
        ClippedText { text }
    }

    /// The (normalized) text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl SourceCode for ClippedText {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let text = self.text.as_str();
        let whole = text.read_span(span, context_lines_before, context_lines_after)?;
        let too_long = whole
            .data()
            .split(|&b| b == b'\n')
            .any(|line| line.len() > MAX_COLUMNS);
        if !too_long {
            return Ok(whole);
        }
        // One window of the span's own line, the span clipped into it.
        let offset = floor_boundary(text, span.offset());
        let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
        let start = floor_boundary(text, offset.saturating_sub(WINDOW).max(line_start));
        let span_end = offset + span.len().min(WINDOW);
        let end = ceil_boundary(text, (span_end + WINDOW).min(line_end));
        let line = text.as_bytes()[..line_start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Ok(Box::new(MietteSpanContents::new(
            &text.as_bytes()[start..end],
            SourceSpan::new(start.into(), end - start),
            line,
            start - line_start,
            1,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, NamedSource};

    #[derive(Debug, thiserror::Error, Diagnostic)]
    #[error("bad")]
    struct Bad {
        #[source_code]
        src: NamedSource<ClippedText>,
        #[label("here")]
        span: SourceSpan,
    }

    fn render(text: &str, span: SourceSpan) -> String {
        let bad = Bad {
            src: NamedSource::new("f", ClippedText::new(text)),
            span,
        };
        let mut out = String::new();
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &bad)
            .unwrap();
        out
    }

    #[test]
    fn long_lines_are_clipped() {
        let text = "x".repeat(100_000) + "!" + &"y".repeat(100_000);
        let out = render(&text, SourceSpan::new(100_000.into(), 1));
        assert!(out.contains('!'), "{out}");
        assert!(out.len() < 4 * (2 * WINDOW + 200), "{} bytes", out.len());
        // A span longer than the window, and one at the very end.
        render(&text, SourceSpan::new(10.into(), 150_000));
        render(&text, SourceSpan::new(text.len().into(), 0));
    }

    #[test]
    fn lone_carriage_returns_are_line_breaks() {
        let text = format!("a = 1\r{}\rb = ?\r", "#".repeat(70_000));
        let offset = text.find('?').unwrap();
        let out = render(&text, SourceSpan::new(offset.into(), 1));
        assert!(out.contains("b = ?"), "{out}");
        assert!(!out.contains('\r'));
        assert!(out.len() < 2_000, "{} bytes", out.len());
    }

    #[test]
    fn short_text_is_shown_as_is() {
        let out = render("a = 1\nb = ?\nc = 3\n", SourceSpan::new(10.into(), 1));
        assert!(out.contains("a = 1") && out.contains("c = 3"), "{out}");
    }
}
