//! include/ethlink.h is what cbindgen generates from the crate: the test fails when they
//! differ, and writes the header when ETHLINK_WRITE_HEADER=1.

use std::path::Path;

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml is readable");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("../include/ethlink.h");
    if std::env::var_os("ETHLINK_WRITE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("include/ethlink.h is writable");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/ethlink.h differs from what cbindgen generates from ffi/src; regenerate it \
         with: ETHLINK_WRITE_HEADER=1 cargo test -p ethlink-ffi --test header"
    );
}
