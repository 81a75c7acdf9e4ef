//! The module ladders of the server's crates: a file may name (`crate::x`) only modules on a lower
//! rung, so imports point one way and no file depends on one that depends on it. Adding a module
//! means giving it a rung here. docs/actors.md draws the actors' ladder.

use std::path::Path;

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
            "outbound",
            "etcd_call",
        ],
        &["settings"],
        &["messages"],
        &["registry", "response", "route_cache", "limits"],
        &[
            "kv",
            "housekeeping",
            "tls_reload",
            "metrics",
            "access",
            "controller",
        ],
        &["dispatch"],
        &["worker", "registration"],
        &["connection", "collect"],
        &["listener"],
    ],
};

const DAEMON: Ladder = Ladder {
    src: "src",
    rungs: &[
        &["java_keys", "health", "notify", "controller_config"],
        &["config"],
        &["java_props", "logging"],
        &["runtime_config", "product_env", "http", "controller_port"],
        &["server"],
    ],
};

const TOOLS: Ladder = Ladder {
    src: "tools/src",
    rungs: &[
        &["client", "broker", "tls_args", "credentials"],
        &["sim", "admin"],
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
