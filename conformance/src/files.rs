//! Files a command writes: whole or not at all.
//!
//! A report, a capture or a vector file is written under a temporary name beside its final one
//! (`.<name>.partial`), synced to the disk, and only then renamed into place: a full disk, a
//! file-size limit or an interruption leaves the final name as it was (absent, or the previous
//! whole file), never a truncated file a script would read as complete. The temporary file is
//! removed when the write fails.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under before it is renamed into place.
pub fn partial_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.partial"))
}

/// Writes `bytes` to `path` whole: under [`partial_name`] first, synced, then renamed. The error
/// is a sentence naming the file and why it could not be written.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = partial_name(path);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

#[cfg(test)]
mod tests {
    use super::{partial_name, write_whole};

    #[test]
    fn a_write_that_fails_leaves_no_file_under_either_name() {
        let dir = std::env::temp_dir().join(format!("ethlink-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("r.json");
        write_whole(&ok, b"{}\n").unwrap();
        assert_eq!(std::fs::read(&ok).unwrap(), b"{}\n");
        assert!(!partial_name(&ok).exists());
        // A final name taken by a directory: the rename fails, nothing is left behind.
        let taken = dir.join("taken");
        std::fs::create_dir_all(taken.join("inside")).unwrap();
        let err = write_whole(&taken, b"x").unwrap_err();
        assert!(
            err.starts_with(&format!("cannot write {}", taken.display())),
            "{err}"
        );
        assert!(!partial_name(&taken).exists());
        assert!(taken.is_dir());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
