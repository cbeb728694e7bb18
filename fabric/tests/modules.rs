//! The fabric's files depend on one another without circles: each module's `crate::` paths
//! name only modules below it, so that each can be read (and changed) knowing only those.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Each module of fabric/src and the modules its code (not its comments) names by `crate::`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g = BTreeMap::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|_| path.extension().is_some_and(|e| e == "rs"))
        else {
            continue;
        };
        if name == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut uses = BTreeSet::new();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
                let m: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !m.is_empty() && m != name {
                    uses.insert(m);
                }
                // `use crate::{a, b::C}` names several.
                if let Some(list) = rest.strip_prefix('{') {
                    for item in list.split([',', '}']) {
                        let m: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        if !m.is_empty() && m != name {
                            uses.insert(m);
                        }
                    }
                }
            }
        }
        g.insert(name.to_owned(), uses);
    }
    g
}

#[test]
fn the_modules_form_no_circle() {
    let g = graph();
    assert!(g.len() >= 8, "fabric/src has its modules: {:?}", g.keys());
    // Depth-first search; a module met again while still on the path closes a circle.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut circle = path[at..].to_vec();
            circle.push(m.to_owned());
            panic!("the modules form a circle: {}", circle.join(" -> "));
        }
        path.push(m.to_owned());
        for next in g.get(m).into_iter().flatten() {
            if g.contains_key(next) {
                visit(next, g, path, done);
            }
        }
        path.pop();
        done.insert(m.to_owned());
    }
    let mut done = BTreeSet::new();
    for m in g.keys() {
        visit(m, &g, &mut Vec::new(), &mut done);
    }
    // The simulation core sits above the workloads, which know it only through their Host.
    assert!(g["fabric"].contains("workload"));
    assert!(!g["workload"].contains("fabric"));
    assert!(g["scenario"].is_empty(), "{:?}", g["scenario"]);
}
