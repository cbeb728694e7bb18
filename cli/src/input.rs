//! Reading what a command is given, bounded: a file or standard input is read up to a limit of
//! its own, and anything longer is refused with a message naming the source and the limit,
//! instead of being read until memory runs out (`--scenario /dev/zero`).

use std::io::Read;
use std::path::Path;

/// Largest scenario or sweep file read, in bytes: a scenario is a few kilobytes.
pub const SCENARIO_LIMIT: u64 = 1 << 20;

/// Reads `source` (named `name` in messages) as UTF-8 text of at most `limit` bytes.
pub fn read_limited(source: &mut dyn Read, name: &str, limit: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    source
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{name} is longer than {limit} bytes, the most this command reads"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name} is not UTF-8 text (byte {} is not)",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads the file at `path` as UTF-8 text of at most `limit` bytes.
pub fn read_file(path: &Path, limit: u64) -> Result<String, String> {
    let name = path.display().to_string();
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot read {name}: {e}"))?;
    read_limited(&mut file, &name, limit)
}

#[cfg(test)]
mod tests {
    use super::read_limited;

    #[test]
    fn input_beyond_the_limit_is_refused_and_not_read_on() {
        // An endless source: a bounded read must stop after limit + 1 bytes.
        let mut zeros = std::io::repeat(b'a');
        let err = read_limited(&mut zeros, "/dev/zero", 1000).unwrap_err();
        assert_eq!(
            err,
            "/dev/zero is longer than 1000 bytes, the most this command reads"
        );
        let mut exact: &[u8] = &[b'x'; 1000];
        assert_eq!(read_limited(&mut exact, "f", 1000).unwrap().len(), 1000);
        let mut bad: &[u8] = &[b'x', 0xff];
        assert_eq!(
            read_limited(&mut bad, "f", 1000).unwrap_err(),
            "f is not UTF-8 text (byte 1 is not)"
        );
    }
}
