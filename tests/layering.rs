//! The module ladders of the server's crates: a file may name (`crate::x`) only modules on a lower
//! rung, so imports point one way and no file depends on one that depends on it. Adding a module
//! means giving it a rung here. docs/actors.md draws the actors' ladder.
//!
//! Inside a module the files have no ladder of their own, but they may not import each other in
//! a circle either (`file_circles`, the rule of `../shared/tools/modcycles.py`): a type that two
//! files both need goes to a file of its own that names neither.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rungs of one crate, lowest first; modules on one rung may not name each other.
struct Ladder {
    src: &'static str,
    rungs: &'static [&'static [&'static str]],
}

const ACTORS: Ladder = Ladder {
    src: "actors/src",
    rungs: &[
        &["logging", "stored", "etcd_api"],
        &[
            "route",
            "background",
            "outbox",
            "persist",
            "contain",
            "file_watch",
            "etcd_call",
        ],
        &["settings", "outbound", "etcd_migrate"],
        &["messages", "etcd_access"],
        &["registry", "response", "route_cache", "limits"],
        &[
            "kv",
            "housekeeping",
            "tls_reload",
            "metrics",
            "access",
            "controller",
            "registration",
        ],
        &["services"],
        &["codes"],
        &["dispatch"],
        &["worker"],
        &["connection", "collect"],
        &["listener"],
    ],
};

const DAEMON: Ladder = Ladder {
    src: "src",
    rungs: &[
        &[
            "java_keys",
            "health",
            "notify",
            "controller_config",
            "allocator",
        ],
        &["config"],
        &["java_props", "logging", "fleet"],
        &[
            "runtime_config",
            "product_env",
            "http",
            "controller_port",
            "migrate",
        ],
        &["server"],
    ],
};

const TOOLS: Ladder = Ladder {
    src: "tools/src",
    rungs: &[
        &["client", "broker", "tls_args", "credentials"],
        &["outcome", "sim"],
        &["fleet"],
        &["admin"],
    ],
};

const TRANSPORT: Ladder = Ladder {
    src: "transport/src",
    rungs: &[
        &["settings"],
        &["pem", "proxy"],
        &["server"],
        &["client", "front_door"],
    ],
};

/// The module a file belongs to: its first path segment under `src` (`route/tables.rs` ->
/// `route`), `None` for the crate root.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// The modules a file names with `crate::`, outside comments and its test module.
fn named_modules(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let mut named = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            named.push(name);
        }
    }
    named
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("readable source dir")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn check(ladder: &Ladder) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(ladder.src);
    let rung = |module: &str| ladder.rungs.iter().position(|r| r.contains(&module));
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src");
        let Some(module) = module_of(rel) else {
            continue;
        };
        // Test-only files (route/tests/) may name anything.
        if rel.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        let Some(own) = rung(&module) else {
            wrong.push(format!("{}: module `{module}` has no rung", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        for named in named_modules(&text) {
            if named == module {
                continue;
            }
            match rung(&named) {
                Some(theirs) if theirs < own => {}
                Some(_) => wrong.push(format!(
                    "{}: `{module}` names `crate::{named}`, which is not below it",
                    rel.display()
                )),
                None => wrong.push(format!(
                    "{}: names `crate::{named}`, which has no rung",
                    rel.display()
                )),
            }
        }
    }
    wrong
}

#[test]
fn actors_imports_point_down_the_ladder() {
    let wrong = check(&ACTORS);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn daemon_imports_point_down_the_ladder() {
    let wrong = check(&DAEMON);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn tools_imports_point_down_the_ladder() {
    let wrong = check(&TOOLS);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn transport_imports_point_down_the_ladder() {
    let wrong = check(&TRANSPORT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_an_import_pointing_up() {
    let named = named_modules("use crate::connection::Connection;\n// crate::listener\n");
    assert_eq!(named, vec!["connection".to_owned()]);
}

// ---------------------------------------------------------------------------------------------
// Import circles between files, in every crate of the repository.

/// The path roots that name a module of the same crate.
const ROOTS: [&str; 3] = ["crate", "super", "self"];

/// One product source file: where it is, its module path under `src` (`controller/replicas.rs`
/// -> `["controller", "replicas"]`, `controller/mod.rs` -> `["controller"]`, `lib.rs` -> `[]`)
/// and its code without comments and test module.
struct Source {
    label: String,
    module: Vec<String>,
    code: String,
}

impl Source {
    fn new(label: String, module: &[&str], text: &str) -> Self {
        let module = module.iter().map(|m| (*m).to_owned()).collect();
        Source {
            label,
            module,
            code: product_code(text),
        }
    }
}

/// Every crate's `src` under `dir` (a folder with a Cargo.toml and a src/), leaving out build
/// output and the fuzz targets, as modcycles.py does.
fn crate_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
        out.push(dir.join("src"));
    }
    let skipped = ["target", ".git", "node_modules", ".cache", "fuzz"];
    for entry in std::fs::read_dir(dir).expect("readable dir").flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !skipped.iter().any(|s| entry.file_name() == *s) {
            crate_sources(&entry.path(), out);
        }
    }
}

/// The product files of one crate: every .rs file under `src` but test files (`tests.rs`,
/// `tests/`) and binaries of `bin/`.
fn crate_files(src: &Path, repo: &Path) -> Vec<Source> {
    let mut paths = Vec::new();
    rs_files(src, &mut paths);
    // Sorted, so that `lib.rs` is the crate root `crate::` names when `main.rs` is there too.
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(src).expect("under src");
        let mut module: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        if module
            .iter()
            .any(|c| *c == "tests" || *c == "tests.rs" || *c == "bin")
        {
            continue;
        }
        let last = module.pop().unwrap_or_default().trim_end_matches(".rs");
        if !matches!(last, "lib" | "main" | "mod") {
            module.push(last);
        }
        let label = path
            .strip_prefix(repo)
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).expect("readable source");
        files.push(Source::new(label, &module, &text));
    }
    files
}

/// The code of a file that imports: everything before its `#[cfg(test)] mod tests`, without
/// `//` comments (doc comments name paths to link them, not to import them).
fn product_code(text: &str) -> String {
    let mut end = text.len();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod tests") {
            end = at;
            break;
        }
    }
    let mut code = String::new();
    for line in text[..end].lines() {
        let comment = line
            .match_indices("//")
            .map(|(at, _)| at)
            .find(|&at| at == 0 || line[..at].ends_with(char::is_whitespace));
        code.push_str(&line[..comment.unwrap_or(line.len())]);
        code.push('\n');
    }
    code
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_ident(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && word.chars().all(is_ident_char)
}

/// The `::a::b` segments at the start of `rest` (`["a", "b"]`) and the bytes they take.
fn segments(rest: &str) -> (Vec<String>, usize) {
    let (mut parts, mut used) = (Vec::new(), 0);
    while let Some(after) = rest[used..].strip_prefix("::") {
        let len = after.find(|c| !is_ident_char(c)).unwrap_or(after.len());
        let name = &after[..len];
        if !is_ident(name) {
            break;
        }
        parts.push(name.to_owned());
        used += 2 + len;
    }
    (parts, used)
}

/// The paths a file's code names from one of [`ROOTS`]: `crate::a::b` as `("crate", [a, b])`;
/// a group `use super::{a, b::C}` also names `super::a` and `super::b`.
fn named_paths(code: &str) -> Vec<(String, Vec<String>)> {
    let mut named = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let word_len = rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len());
        if word_len == 0 {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let word = &rest[..word_len];
        let (tail, used) = segments(&rest[word_len..]);
        if ROOTS.contains(&word) && !tail.is_empty() {
            named.push((word.to_owned(), tail));
            at += word_len + used;
            continue;
        }
        if word == "use" {
            named.extend(group_items(&rest[word_len..]));
        }
        at += word_len;
    }
    named
}

/// After a `use`: the items of a group `crate::a::{b, c::D}` as `crate::a::b`, `crate::a::c`.
fn group_items(after_use: &str) -> Vec<(String, Vec<String>)> {
    let path = after_use.trim_start();
    let root_len = path.find(|c| !is_ident_char(c)).unwrap_or(path.len());
    let root = &path[..root_len];
    if path.len() == after_use.len() || !ROOTS.contains(&root) {
        return Vec::new();
    }
    let (prefix, used) = segments(&path[root_len..]);
    let Some(group) = path[root_len + used..].strip_prefix("::{") else {
        return Vec::new();
    };
    let group = &group[..group.find(';').unwrap_or(group.len())];
    let group = &group[..group.rfind('}').unwrap_or(0)];
    let items = group.split(|c: char| c == ',' || c.is_whitespace());
    items
        .map(|item| {
            item.split("::")
                .next()
                .unwrap_or("")
                .trim_matches(['{', '}', ' '])
        })
        .filter(|item| is_ident(item))
        .map(|item| {
            let mut path = prefix.clone();
            path.push(item.to_owned());
            (root.to_owned(), path)
        })
        .collect()
}

/// The module a path names from a file of `module`: `self` is the file's module, `super` its
/// parent, and each further leading `super` climbs one more.
fn target(module: &[String], root: &str, tail: &[String]) -> Vec<String> {
    let mut base = match root {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        _ => module[..module.len().saturating_sub(1)].to_vec(),
    };
    let mut tail = tail;
    while let Some(rest) = tail.strip_prefix(&["super".to_owned()]) {
        base.pop();
        tail = rest;
    }
    base.extend(tail.iter().cloned());
    base
}

/// Which files each file imports: file A imports file B when A names B's module, or a path
/// inside it (an item of `replicas.rs`: `super::replicas::BrokerSet`).
fn imports(files: &[Source]) -> Vec<BTreeSet<usize>> {
    let mut by_module = BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        by_module.entry(file.module.clone()).or_insert(index);
    }
    let file_of = |mut module: Vec<String>| loop {
        if let Some(index) = by_module.get(&module) {
            return Some(*index);
        }
        module.pop()?;
    };
    let mut edges = vec![BTreeSet::new(); files.len()];
    for (index, file) in files.iter().enumerate() {
        for (root, tail) in named_paths(&file.code) {
            if let Some(other) = file_of(target(&file.module, &root, &tail)) {
                if other != index {
                    edges[index].insert(other);
                }
            }
        }
    }
    edges
}

/// The files reachable from `from` by one import or more.
fn reachable(edges: &[BTreeSet<usize>], from: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<usize> = edges[from].iter().copied().collect();
    while let Some(next) = todo.pop() {
        if seen.insert(next) {
            todo.extend(edges[next].iter().copied());
        }
    }
    seen
}

/// The import circles among `files`, each as its files' labels: files that reach each other.
fn file_circles(files: &[Source]) -> Vec<String> {
    let edges = imports(files);
    let reach: Vec<BTreeSet<usize>> = (0..files.len()).map(|f| reachable(&edges, f)).collect();
    let mut placed = BTreeSet::new();
    let mut circles = Vec::new();
    for file in 0..files.len() {
        if placed.contains(&file) {
            continue;
        }
        let mut circle = BTreeSet::from([files[file].label.as_str()]);
        for &other in &reach[file] {
            if reach[other].contains(&file) {
                placed.insert(other);
                circle.insert(files[other].label.as_str());
            }
        }
        if circle.len() > 1 {
            circles.push(circle.into_iter().collect::<Vec<_>>().join(" "));
        }
    }
    circles
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    crate_sources(repo, &mut sources);
    let circles: Vec<String> = sources
        .iter()
        .flat_map(|src| file_circles(&crate_files(src, repo)))
        .collect();
    assert!(
        circles.is_empty(),
        "files importing each other in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_checker_sees_a_circle_of_files() {
    let file =
        |label: &str, module: &[&str], text: &str| Source::new(label.to_owned(), module, text);
    // The controller before its broker set record had a file of its own; what comments and the
    // test module of route.rs name does not count.
    let files = [
        file(
            "mod.rs",
            &["controller"],
            "mod elect;\nuse crate::route::ConnId;\n",
        ),
        file(
            "route.rs",
            &["route"],
            concat!(
                "/// [`Controller`](crate::controller)\npub struct ConnId;\n",
                "#[cfg(test)]\nmod tests {\n    use crate::controller::Controller;\n}\n",
            ),
        ),
        file(
            "elect.rs",
            &["controller", "elect"],
            "use super::replicas::{BrokerSet, Liveness};\n",
        ),
        file(
            "replicas.rs",
            &["controller", "replicas"],
            "pub use super::{elect::elect, store::Revision};\n",
        ),
        file(
            "store.rs",
            &["controller", "store"],
            "fn f(_: super::replicas::BrokerSet) {}\n",
        ),
        file(
            "txn.rs",
            &["controller", "store", "txn"],
            "use super::super::replicas::Change;\n",
        ),
    ];
    assert_eq!(file_circles(&files), ["elect.rs replicas.rs store.rs"]);
    assert_eq!(
        imports(&files)[5],
        BTreeSet::from([3]),
        "txn.rs names replicas.rs"
    );
}
