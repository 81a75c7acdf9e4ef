//! The Java properties parser (rmq_protocol::properties::parse) on the body of an
//! UPDATE_NAMESRV_CONFIG, and what the server does next with what it parsed: the black list and
//! rmq_namesrv::java_props::apply_update on the default configuration, and both writers' round
//! trip. The body is read as the server reads it (lossy UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_namesrv::config::Config;
use rmq_namesrv::java_props::{apply_update, BlackList};
use rmq_protocol::properties;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(props) = properties::parse(&text) else {
        return;
    };
    // What either writer writes (GET_NAMESRV_CONFIG's body, the config store file) reads back
    // as exactly what it was written from: parse -> write -> parse is the identity.
    let entries = || props.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    for text in [properties::format(entries()), properties::store(entries())] {
        assert_eq!(properties::parse(&text).as_ref(), Ok(&props), "{text:?}");
    }
    let black_list = BlackList::new("configBlackList;configStorePath;kvConfigPath");
    if props.keys().any(|k| black_list.contains(k)) {
        return;
    }
    let _ = apply_update(&Config::default(), &props);
});
