//! Hex text in and out.
//!
//! Frames are exchanged as hex text: `decode --hex`, hex on standard input, the output of `encode`
//! and the `hex` of every golden vector. Input is forgiving about the separators people paste;
//! output is always plain lower-case hex.

use std::fmt;

/// Why hex text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// The text holds no hex digits at all.
    Empty,
    /// A character that is neither a hex digit nor an accepted separator.
    BadChar {
        /// The character.
        ch: char,
        /// Its position in the input text, counting characters from 0.
        position: usize,
    },
    /// An odd number of hex digits.
    OddLength {
        /// Number of hex digits found.
        digits: usize,
    },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::Empty => f.write_str("no hex digits in the input"),
            HexError::BadChar { ch, position } => {
                write!(f, "invalid hex character {ch:?} at position {position}")
            }
            HexError::OddLength { digits } => write!(
                f,
                "odd number of hex digits ({digits}): every byte needs two digits"
            ),
        }
    }
}

impl std::error::Error for HexError {}

/// Parses hex text into bytes.
///
/// Whitespace, `:`, `-` and `,` separate digits and are ignored, and a `0x` or `0X` prefix at the
/// start of the text or of any separated group is skipped, so `01 02`, `01:02`, `0x0102` and
/// `0x01 0x02` all read as the bytes 1, 2.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let mut nibbles = Vec::with_capacity(text.len());
    let mut chars = text.chars().enumerate().peekable();
    let mut group_start = true;
    while let Some((position, ch)) = chars.next() {
        if ch.is_whitespace() || matches!(ch, ':' | '-' | ',') {
            group_start = true;
            continue;
        }
        if group_start && ch == '0' && matches!(chars.peek(), Some((_, 'x' | 'X'))) {
            chars.next();
            group_start = false;
            continue;
        }
        group_start = false;
        let value = ch.to_digit(16).ok_or(HexError::BadChar { ch, position })?;
        // A hex digit is below 16, so it fits a byte.
        nibbles.push(u8::try_from(value).unwrap_or(0));
    }
    if nibbles.is_empty() {
        return Err(HexError::Empty);
    }
    if nibbles.len() % 2 != 0 {
        return Err(HexError::OddLength {
            digits: nibbles.len(),
        });
    }
    Ok(nibbles
        .chunks_exact(2)
        .map(|pair| match pair {
            [hi, lo] => (hi << 4) | lo,
            _ => 0,
        })
        .collect())
}

/// Lower-case hex of `bytes`, without separators.
pub fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_prefixes() {
        let want = vec![0x01, 0xab, 0xff];
        for text in [
            "01abff",
            "01 ab ff",
            "01:ab:ff",
            "0x01abff",
            "0x01 0xAB 0xff",
            " 01-ab-FF\n",
            "01,ab,ff",
        ] {
            assert_eq!(parse_hex(text), Ok(want.clone()), "{text:?}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(parse_hex(""), Err(HexError::Empty));
        assert_eq!(parse_hex(" 0x "), Err(HexError::Empty));
        assert_eq!(parse_hex("abc"), Err(HexError::OddLength { digits: 3 }));
        assert_eq!(
            parse_hex("01zz"),
            Err(HexError::BadChar {
                ch: 'z',
                position: 2
            })
        );
        // `0x` only counts as a prefix at the start of a group.
        assert!(matches!(
            parse_hex("010x02"),
            Err(HexError::BadChar { ch: 'x', .. })
        ));
    }
}
