//! The quoting check of a byte range 64 bytes at a time: quotes, delimiters and line ends as bit
//! masks, the bytes inside quoted values as the running parity of the quotes. It passes a range
//! only when every quote has its place in well-formed quoting, which covers the files that
//! quote values as CSV writers do; anything else (a quote inside an unquoted value, a fault, a
//! quoted line break) is left to [`super::QuoteScan`], byte by byte. The byte scan took a core
//! 12 instructions a byte of a quoted file; the masks take about 2.

use super::RangeScan;

/// The state of a [`BlockCheck`] between blocks: what the last byte checked was.
#[derive(Debug, Clone, Copy)]
pub(super) struct BlockCheck {
    delimiter: u8,
    /// Inside a quoted value.
    inside: bool,
    /// A `"` may open a value next: the range starts, or a delimiter, a line end or a closing
    /// quote (then `""`, a quote in the value) came last.
    may_open: bool,
    /// A closing quote came last: a delimiter, a line end or a quote (`""`) must follow.
    closed: bool,
}

impl BlockCheck {
    /// The check of a range of a file separated by `delimiter`, from a record's start.
    pub(super) fn new(delimiter: u8) -> Self {
        BlockCheck {
            delimiter,
            inside: false,
            may_open: true,
            closed: false,
        }
    }

    /// Checks a block of `len` bytes whose quotes, delimiters and line ends are `m`.
    #[inline(always)]
    fn block(&mut self, m: Masks, len: usize) -> bool {
        let Masks {
            quotes,
            delimiters,
            line_ends,
        } = m;
        if quotes == 0 && !self.inside && !self.closed {
            // No quote: only whether a value may open at the next block's first byte moves on.
            let last = 1u64 << (len - 1);
            self.may_open = (delimiters | line_ends) & last != 0;
            return true;
        }
        // Bit i set where the bytes up to i leave the scan inside a quoted value: for a quote,
        // whether it opens a value (else it closes one); for any other byte, whether it is text
        // of a quoted value.
        let inside = prefix_xor(quotes) ^ if self.inside { u64::MAX } else { 0 };
        let opens = quotes & inside;
        let closes = quotes & !inside;
        if line_ends & inside != 0 {
            return false; // A line break inside a quoted value (or a quote that is text).
        }
        let separators = (delimiters | line_ends) & !inside;
        // A value opens at the start of a field only, or right after a closing quote (`""`).
        let may_open = (separators | closes) << 1 | u64::from(self.may_open);
        if opens & !may_open != 0 {
            return false;
        }
        // A closing quote is followed by a delimiter, a line end or a quote (`""`); the last
        // byte's follower is the next block's first.
        if self.closed && (delimiters | line_ends | quotes) & 1 == 0 {
            return false;
        }
        let followed = (delimiters | line_ends | quotes) >> 1;
        let last = 1u64 << (len - 1);
        if closes & !followed & !last != 0 {
            return false;
        }
        self.inside = inside & last != 0;
        self.may_open = (separators | closes) & last != 0;
        self.closed = closes & last != 0;
        true
    }
}

impl RangeScan for BlockCheck {
    /// Checks the next bytes of the range; false when some quote does not fit well-formed
    /// quoting on its line (the range is then scanned byte by byte).
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        let mut blocks = bytes.chunks_exact(64);
        for block in &mut blocks {
            let block: &[u8; 64] = block.try_into().unwrap_or(&[0; 64]);
            if !self.block(masks(block, self.delimiter), 64) {
                return false;
            }
        }
        let tail = blocks.remainder();
        tail.is_empty() || self.block(masks_of(tail, self.delimiter), tail.len())
    }

    /// Whether the range checked so far may end here: outside quotes.
    fn clean_end(&self) -> bool {
        !self.inside
    }
}

/// The quotes, delimiters and line ends (`\n`, `\r`) of a block, bit i for byte i.
#[derive(Debug, Clone, Copy)]
struct Masks {
    quotes: u64,
    delimiters: u64,
    line_ends: u64,
}

/// Bit i set where the number of set bits of `x` up to bit i is odd.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The [`Masks`] of a whole block: 16-byte compares (SSE2, which every x86-64 CPU has).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(block: &[u8; 64], delimiter: u8) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of x86-64 itself (every such CPU has it; the compiler assumes it for
    // the target), and each load reads one 16-byte part of `block`, with no alignment required.
    unsafe {
        let (d, n, r, q) = (
            _mm_set1_epi8(delimiter as i8),
            _mm_set1_epi8(b'\n' as i8),
            _mm_set1_epi8(b'\r' as i8),
            _mm_set1_epi8(b'"' as i8),
        );
        let mut m = Masks {
            quotes: 0,
            delimiters: 0,
            line_ends: 0,
        };
        for (i, part) in block.chunks_exact(16).enumerate() {
            let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
            let bits = |hit| (_mm_movemask_epi8(hit) as u16 as u64) << (16 * i);
            m.quotes |= bits(_mm_cmpeq_epi8(v, q));
            m.delimiters |= bits(_mm_cmpeq_epi8(v, d));
            m.line_ends |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, n), _mm_cmpeq_epi8(v, r)));
        }
        m
    }
}

/// The [`Masks`] of a whole block.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(block: &[u8; 64], delimiter: u8) -> Masks {
    masks_of(block, delimiter)
}

/// The [`Masks`] of at most 64 bytes, byte by byte (the end of a piece).
fn masks_of(bytes: &[u8], delimiter: u8) -> Masks {
    let mut m = Masks {
        quotes: 0,
        delimiters: 0,
        line_ends: 0,
    };
    for (i, &b) in bytes.iter().enumerate() {
        m.quotes |= u64::from(b == b'"') << i;
        m.delimiters |= u64::from(b == delimiter) << i;
        m.line_ends |= u64::from(b == b'\n' || b == b'\r') << i;
    }
    m
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::pieces;
    use super::super::{QuoteScan, RangeScan};
    use super::*;

    /// [`BlockCheck`] of `text` in the given pieces, to its end.
    fn blocks_pass(pieces: &[&[u8]]) -> bool {
        let mut check = BlockCheck::new(b';');
        pieces.iter().all(|p| check.chunk(p)) && check.clean_end()
    }

    /// [`QuoteScan`] of `text`: no fault, no quoted line break, no value open at its end.
    fn scan_passes(text: &[u8]) -> bool {
        let mut scan = QuoteScan {
            delimiter: b';',
            ..QuoteScan::default()
        };
        RangeScan::chunk(&mut scan, text) && scan.clean_end()
    }

    #[test]
    fn passes_quoting_as_writers_quote() {
        let row = "\"Male\";39;\"White\";\"a;b\";\"say \"\"hi\"\"\";\"\";\"\"\"\";x\r\n";
        let text = row.repeat(9);
        assert!(blocks_pass(&[text.as_bytes()]));
        assert!(blocks_pass(&[b"1;\"2\""]), "closed at the last byte");
        for bad in [
            &b"1;\"2\n3\";4\n"[..], // a quoted line break
            b"1;\"2\"x;3\n",        // text after a closing quote
            b"1;\"2;3\n",           // never closed
            b"5\"11;2\n",           // a quote inside an unquoted value: the byte scan's case
        ] {
            assert!(!blocks_pass(&[bad]), "{}", String::from_utf8_lossy(bad));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The masks pass only what the byte scan passes, in any pieces (so across block and
        /// piece ends), and pass every text quoted as a CSV writer quotes.
        #[test]
        fn passes_only_what_the_byte_scan_passes(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["\"", "\"\"", ";", "\n", "\r\n", "\r", "a", "bcdefghijklmnop", "\";\"", "\"x\"\n"]),
                0..80,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..4),
        ) {
            let text = parts.concat();
            let bytes = text.as_bytes();
            if blocks_pass(&pieces(bytes, cuts)) {
                prop_assert!(scan_passes(bytes), "{:?}", text);
            }
        }

        /// Records of values each unquoted or quoted as a writer quotes them (delimiters and
        /// doubled quotes inside) pass, in any pieces.
        #[test]
        fn passes_written_quoting(
            rows in proptest::collection::vec(
                proptest::collection::vec(("[a-c;\" ]{0,20}", any::<bool>()), 1..6),
                0..30,
            ),
            crlf in any::<bool>(),
            cut in 0usize..2000,
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = String::new();
            for row in &rows {
                let fields: Vec<String> = row
                    .iter()
                    .map(|(v, quote)| {
                        if *quote || v.contains(';') || v.starts_with('"') {
                            format!("\"{}\"", v.replace('"', "\"\""))
                        } else {
                            v.clone()
                        }
                    })
                    .collect();
                text.push_str(&fields.join(";"));
                text.push_str(end);
            }
            let bytes = text.as_bytes();

            // An unquoted value holding a quote is the byte scan's case, unless it starts one.
            let stray = rows.iter().flatten().any(|(v, q)| !q && !v.contains(';') && v.contains('"'));
            prop_assert!(scan_passes(bytes));
            if !stray {
                prop_assert!(blocks_pass(&pieces(bytes, vec![cut])), "{:?}", text);
            }
        }
    }
}
