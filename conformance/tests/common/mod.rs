//! What the tests of the suite share.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

/// The shared library of `ethlink-ffi` beside the test's executable (target/<profile>/deps) or
/// one level up (target/<profile>).
pub fn library() -> PathBuf {
    let name = format!(
        "{}ethlink_ffi{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let exe = std::env::current_exe().expect("the test knows its executable");
    let deps = exe.parent().expect("the executable is in a directory");
    [deps.join(&name), deps.join("..").join(&name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} not found in {} or its parent: build it with cargo build -p ethlink-ffi",
                deps.display()
            )
        })
}
