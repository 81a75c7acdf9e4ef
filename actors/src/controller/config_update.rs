//! UPDATE_CONTROLLER_CONFIG (1009), checked and prepared without changing anything: the
//! settings it leads to and the text of the controller's config store file, which Java writes
//! after every update (`Configuration.update` then `persist`, to `configStorePath`).
//!
//! The file holds what Java's holds: every property the server started with (the NameServer's
//! too, when the controller is embedded: Java registers its whole `-c` file) and the
//! controller's own. Beyond Java, a start takes back from it the settings 1009 changes at once
//! ([`restore`]), so they are kept across a restart whatever file the server starts with. It is
//! written only
//! if it reads back exactly as it was written and leaves every black-listed key as it is, so no
//! update can plant a line (a path, a black-listed key) for the next start.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rmq_protocol::controller::remark;
use rmq_protocol::properties;

use super::ControllerSettings;

/// Keys refused whatever `configBlackList` says (Java's fixed ones, and `rocketmqHome`).
const ALWAYS_REFUSED: [&str; 3] = ["configBlackList", "configStorePath", "rocketmqHome"];

/// Where and what the controller persists (`configStorePath`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigStore {
    /// The file 1009 writes; `None`: updates are not persisted.
    pub path: Option<PathBuf>,
    /// The properties written beside the controller's own (Java names): the NameServer's, when
    /// the controller is embedded.
    pub with: BTreeMap<String, String>,
}

/// Why an update is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The body is not a properties text (Java: SYSTEM_ERROR "string2Properties error").
    Unparsable,
    /// A black-listed key (Java: NO_PERMISSION).
    BlackListed { key: String },
    /// A key or value that may not be stored (line breaks, sizes) or a file that would not read
    /// back as written: SYSTEM_ERROR with the reason.
    Invalid(String),
}

/// An accepted update: the settings it leads to and, when the controller persists, the file.
#[derive(Debug)]
pub struct Accepted {
    pub settings: ControllerSettings,
    /// The keys that changed a known setting (unknown keys are ignored, as Java ignores them).
    pub applied: Vec<(String, String)>,
    /// (path, text) of the config store file.
    pub file: Option<(PathBuf, String)>,
}

impl Refused {
    /// The remark of the answer.
    pub fn remark(&self) -> String {
        match self {
            Refused::Unparsable => "string2Properties error".to_owned(),
            Refused::BlackListed { .. } => remark::CONFIG_BLACK_LIST.to_owned(),
            Refused::Invalid(why) => why.clone(),
        }
    }
}

/// Checks `body` against `current` and builds the update it leads to.
pub fn prepare(current: &ControllerSettings, body: &[u8]) -> Result<Accepted, Refused> {
    let text = std::str::from_utf8(body).map_err(|_| Refused::Unparsable)?;
    let props = properties::parse(text).map_err(|_| Refused::Unparsable)?;
    if let Some(key) = props.keys().find(|k| refused_key(current, k)) {
        return Err(Refused::BlackListed { key: key.clone() });
    }
    crate::settings::check_update(&props).map_err(Refused::Invalid)?;
    let mut settings = current.clone();
    let mut applied = Vec::new();
    for (key, value) in props {
        if !settings.properties.contains_key(&key) {
            continue;
        }
        apply_at_once(&mut settings, &key, &value);
        settings.properties.insert(key.clone(), value.clone());
        applied.push((key, value));
    }
    let file = match &current.config_store.path {
        Some(path) => Some((path.clone(), checked_file(current, &settings)?)),
        None => None,
    };
    Ok(Accepted {
        settings,
        applied,
        file,
    })
}

/// The settings 1009 changes at once (the others are shown by 1010 and written, and take effect
/// at a start from the file). Whether `key` is one of them.
const AT_ONCE: [&str; 3] = [
    "enableElectUncleanMaster",
    "notifyBrokerRoleChanged",
    "electMasterMaxRetryCount",
];

fn apply_at_once(settings: &mut ControllerSettings, key: &str, value: &str) {
    let on = value.trim().eq_ignore_ascii_case("true");
    match key {
        "enableElectUncleanMaster" => settings.elect_unclean = on,
        "notifyBrokerRoleChanged" => settings.notify_role_changed = on,
        "electMasterMaxRetryCount" => {
            if let Ok(n) = value.trim().parse() {
                settings.elect_max_retry = n;
            }
        }
        _ => {}
    }
}

/// At start: the settings an earlier run's 1009 changed at once are taken back from the config
/// store file, so an update is kept across a restart whatever file the server starts with.
/// Answers what was taken (key, value); a missing file takes nothing, an unreadable one is the
/// error's text (the caller logs it and starts with its configuration).
pub fn restore(settings: &mut ControllerSettings) -> Result<Vec<(String, String)>, String> {
    let Some(path) = settings.config_store.path.clone() else {
        return Ok(Vec::new());
    };
    let text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if text.len() > crate::stored::MAX_SETTING_BYTES * 256 {
        return Err(format!("{}: too large for a configuration", path.display()));
    }
    let text =
        String::from_utf8(text).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
    let stored = properties::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::settings::check_update(&stored).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut taken = Vec::new();
    for key in AT_ONCE {
        let Some(value) = stored.get(key) else {
            continue;
        };
        if settings.properties.get(key) == Some(value) {
            continue;
        }
        apply_at_once(settings, key, value);
        settings.properties.insert(key.to_owned(), value.clone());
        taken.push((key.to_owned(), value.clone()));
    }
    Ok(taken)
}

/// Beyond Java's list: any key naming a place on disk (`controllerStorePath` included).
fn refused_key(current: &ControllerSettings, key: &str) -> bool {
    ALWAYS_REFUSED.contains(&key)
        || current.black_list.iter().any(|b| b == key)
        || crate::settings::names_a_location(key)
}

/// Everything the config store file holds: the properties stored beside the controller's, then
/// the controller's own over them.
fn persisted(settings: &ControllerSettings) -> BTreeMap<String, String> {
    let mut all = settings.config_store.with.clone();
    all.extend(
        settings
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    all
}

/// The file of `updated`, checked on what would be written (module docs).
fn checked_file(
    current: &ControllerSettings,
    updated: &ControllerSettings,
) -> Result<String, Refused> {
    let wanted = persisted(updated);
    let text = properties::store(wanted.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let read_back = properties::parse(&text).map_err(|_| Refused::Unparsable)?;
    let now = persisted(current);
    if let Some((key, _)) = read_back
        .iter()
        .find(|(k, v)| refused_key(current, k) && now.get(*k) != Some(*v))
    {
        return Err(Refused::BlackListed { key: key.clone() });
    }
    if read_back != wanted {
        return Err(Refused::Invalid(
            "the configuration would not read back as written".to_owned(),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(path: Option<PathBuf>) -> ControllerSettings {
        ControllerSettings {
            group: "g".into(),
            peers: vec![("n0".into(), "127.0.0.1:9878".into())],
            self_id: "n0".into(),
            elect_unclean: false,
            notify_role_changed: true,
            scan_not_active_broker_interval: std::time::Duration::from_secs(5),
            scan_inactive_master_interval: std::time::Duration::from_secs(5),
            elect_max_retry: 3,
            properties: [
                ("enableElectUncleanMaster", "false"),
                ("electMasterMaxRetryCount", "3"),
                ("controllerStorePath", "/var/c"),
                ("configStorePath", "/var/c/controller.properties"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            black_list: vec!["configBlackList".into(), "configStorePath".into()],
            config_store: ConfigStore {
                path,
                with: [("listenPort".to_owned(), "9876".to_owned())].into(),
            },
        }
    }

    #[test]
    fn an_update_changes_the_settings_and_the_file_holds_everything() {
        let current = settings(Some(PathBuf::from("c.properties")));
        let accepted = prepare(
            &current,
            b"enableElectUncleanMaster=true\nelectMasterMaxRetryCount=5\nnoSuchKey=1\n",
        )
        .unwrap();
        assert!(accepted.settings.elect_unclean);
        assert_eq!(accepted.settings.elect_max_retry, 5);
        assert_eq!(accepted.applied.len(), 2);
        let (path, text) = accepted.file.unwrap();
        assert_eq!(path, PathBuf::from("c.properties"));
        let back = properties::parse(&text).unwrap();
        assert_eq!(back["enableElectUncleanMaster"], "true");
        assert_eq!(back["listenPort"], "9876");
        assert!(!back.contains_key("noSuchKey"));
    }

    #[test]
    fn black_listed_and_path_keys_are_refused() {
        let current = settings(None);
        for body in [
            "configStorePath=/etc/x",
            "controllerStorePath=/tmp",
            "rocketmqHome=/",
            "configBlackList=",
        ] {
            assert!(
                matches!(
                    prepare(&current, body.as_bytes()),
                    Err(Refused::BlackListed { .. })
                ),
                "{body}"
            );
        }
        assert_eq!(
            prepare(&current, &[0xff, 0xfe]).unwrap_err(),
            Refused::Unparsable
        );
    }

    #[test]
    fn a_start_takes_back_what_1009_changed_at_once_and_survives_a_bad_file() {
        let dir = std::env::temp_dir().join(format!("ctl-restore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("controller.properties");
        let mut fresh = settings(Some(path.clone()));
        assert_eq!(restore(&mut fresh).unwrap(), Vec::new(), "no file yet");
        let accepted = prepare(&fresh, b"enableElectUncleanMaster=true\n").unwrap();
        let (_, text) = accepted.file.unwrap();
        std::fs::write(&path, text).unwrap();
        let taken = restore(&mut fresh).unwrap();
        assert_eq!(
            taken,
            vec![("enableElectUncleanMaster".to_owned(), "true".to_owned())]
        );
        assert!(fresh.elect_unclean);
        std::fs::write(&path, b"enableElectUncleanMaster=tr\\u00zz").unwrap();
        let mut again = settings(Some(path.clone()));
        assert!(restore(&mut again).is_err());
        assert!(!again.elect_unclean, "a bad file takes nothing");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_value_with_a_line_break_is_refused() {
        let current = settings(Some(PathBuf::from("c.properties")));
        let refused = prepare(
            &current,
            b"enableElectUncleanMaster=true\\nconfigStorePath=/x",
        );
        assert!(matches!(refused, Err(Refused::Invalid(_))), "{refused:?}");
    }
}
