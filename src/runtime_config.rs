//! `RuntimeConfig`: the owner of the running configuration. Answers GET_NAMESRV_CONFIG and
//! UPDATE_NAMESRV_CONFIG, pushes live switches to the route registry and persists updates to
//! `kv.config_store_path` as Java properties.

use std::net::SocketAddr;
use std::path::PathBuf;

use actix::prelude::*;
use bytes::Bytes;
use rmq_actors::contain::{contain, Contained, Recover};
use rmq_actors::contained_actor;
use rmq_actors::logging::Clipped;
use rmq_actors::messages::{
    ApplySettings, Body, ConfigUpdateError, GetNamesrvConfig, UpdateNamesrvConfig,
};
use rmq_actors::persist::write_atomically;
use rmq_protocol::properties;
use tracing::{error, info, warn};

use crate::config::{expand_home, Config};
use crate::java_props::{apply_update, config_to_properties, BlackList};

/// The runtime-config actor.
pub struct RuntimeConfig {
    config: Config,
    bound: SocketAddr,
    black_list: BlackList,
    /// Told the new registry settings when an update changes them (the route registry).
    apply: Recipient<ApplySettings>,
    store_path: PathBuf,
    /// Handler panics contained so far.
    panics: u64,
}

impl RuntimeConfig {
    /// `bound` is the address actually listened on (reported as `listenPort`).
    pub fn new(config: Config, bound: SocketAddr, apply: Recipient<ApplySettings>) -> Self {
        Self {
            black_list: BlackList::new(&config.admin.config_black_list),
            store_path: expand_home(&config.kv.config_store_path),
            config,
            bound,
            apply,
            panics: 0,
        }
    }

    /// GET_NAMESRV_CONFIG's body.
    fn properties_text(&self) -> String {
        let props = config_to_properties(&self.config, self.bound);
        properties::format(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Checks an UPDATE_NAMESRV_CONFIG body and builds what it leads to: the new configuration
    /// and the text of the config store file. Nothing changes when it is refused.
    fn prepare(&self, body: &[u8]) -> Result<Prepared, ConfigUpdateError> {
        let text = String::from_utf8_lossy(body);
        let props = properties::parse(&text).map_err(|_| ConfigUpdateError::Unparsable)?;
        if let Err(reason) = rmq_actors::settings::check_update(&props) {
            warn!(reason = %Clipped(&reason), "config update refused");
            return Err(ConfigUpdateError::Refused(reason));
        }
        if let Some(key) = props.keys().find(|k| self.black_list.contains(k)) {
            warn!(key = %Clipped(key), "config update refused: black-listed key");
            return Err(ConfigUpdateError::BlackListed { key: key.clone() });
        }
        let (updated, restart_needed) = apply_update(&self.config, &props).map_err(|err| {
            warn!(error = %err, "config update refused");
            ConfigUpdateError::Invalid {
                key: err.key,
                reason: err.reason,
            }
        })?;
        let file = self.checked_file(&updated)?;
        Ok(Prepared {
            keys: props.into_keys().collect(),
            config: updated,
            restart_needed,
            file,
        })
    }

    /// The config store file of `updated`, checked again on what would be written: it must
    /// read back as exactly the properties it was written from, and every black-listed key
    /// must read back as it is now (so no update can plant one for the next start).
    fn checked_file(&self, updated: &Config) -> Result<String, ConfigUpdateError> {
        let wanted = config_to_properties(updated, self.bound);
        let text = properties::store(wanted.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let read_back = properties::parse(&text).map_err(|_| ConfigUpdateError::Unparsable)?;
        let now = config_to_properties(&self.config, self.bound);
        let planted = read_back
            .iter()
            .find(|(k, v)| self.black_list.contains(k) && now.get(*k) != Some(*v));
        if let Some((key, _)) = planted {
            error!(key = %Clipped(key), "config update refused: it would change a black-listed key in the store file");
            return Err(ConfigUpdateError::BlackListed { key: key.clone() });
        }
        if read_back != wanted {
            error!("config update refused: the store file would not read back as written");
            return Err(ConfigUpdateError::Invalid {
                key: "(config store)".into(),
                reason: "the configuration would not read back as written".into(),
            });
        }
        Ok(text)
    }
}

/// An update ready to take effect.
struct Prepared {
    keys: Vec<String>,
    config: Config,
    restart_needed: Vec<&'static str>,
    /// The config store file's new text.
    file: String,
}

impl Actor for RuntimeConfig {
    type Context = Context<Self>;
}

impl Supervised for RuntimeConfig {
    fn restarting(&mut self, _: &mut Self::Context) {
        warn!("runtime config restarting; it keeps the configuration it had");
    }
}

impl Recover for RuntimeConfig {
    const NAME: &'static str = "runtime config";

    /// An update is applied whole or not at all (`apply_update` builds the new configuration
    /// before it is stored), so what it has is consistent.
    fn recover(&mut self, ctx: &mut Self::Context) {
        <Self as Supervised>::restarting(self, ctx);
    }

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(RuntimeConfig);

impl Handler<GetNamesrvConfig> for RuntimeConfig {
    type Result = Contained<MessageResult<GetNamesrvConfig>>;

    fn handle(&mut self, _: GetNamesrvConfig, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetNamesrvConfig", move |this, _| {
            MessageResult(Body(Bytes::from(this.properties_text())))
        })
    }
}

impl Handler<UpdateNamesrvConfig> for RuntimeConfig {
    type Result = Contained<AtomicResponse<Self, Result<(), ConfigUpdateError>>>;

    fn handle(&mut self, msg: UpdateNamesrvConfig, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "UpdateNamesrvConfig", move |this, _| {
            let done = |result| AtomicResponse::new(Box::pin(actix::fut::ready(result)));
            let Some(body) = msg.body else {
                return done(Ok(()));
            };
            let prepared = match this.prepare(&body) {
                Ok(prepared) => prepared,
                Err(err) => return done(Err(err)),
            };
            if prepared.config.registry != this.config.registry {
                this.apply.do_send(ApplySettings {
                    settings: prepared.config.registry.clone(),
                });
            }
            info!(keys = %Clipped(&format!("{:?}", prepared.keys)), restart_needed = ?prepared.restart_needed, "configuration updated");
            this.config = prepared.config;
            // Persist while holding the actor (AtomicResponse): updates are written one at a time.
            let content = prepared.file.into_bytes();
            let path = this.store_path.clone();
            let write = rmq_actors::background::spawn(move || write_atomically(&path, &content));
            AtomicResponse::new(Box::pin(write.into_actor(this).map(|result, act, _| {
                let outcome = match result {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(err)) => Err(err.to_string()),
                    Err(join) => Err(join.to_string()),
                };
                outcome.map_err(|reason| {
                error!(path = %act.store_path.display(), error = %reason, "config store not saved");
                ConfigUpdateError::NotPersisted(reason)
            })
            })))
        })
    }
}
