//! The admin commands and their options, as clap parses them.

use clap::{ArgGroup, Subcommand};

use super::{parse_broker_ids, parse_controller_list, BrokerIds, NamesrvList};

/// The commands; names and long options are camelCase as in mqadmin (`--brokerName`).
#[derive(Debug, Clone, Subcommand)]
#[command(rename_all = "camelCase")]
pub enum AdminCommand {
    /// List clusters, broker groups and broker addresses (GET_BROKER_CLUSTER_INFO).
    ClusterList,
    /// Show a topic's route as JSON (GET_ROUTEINFO_BY_TOPIC).
    TopicRoute {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
    },
    /// List every topic, or with -c the topics of one cluster.
    TopicList {
        /// Only the topics of this cluster (GET_TOPICS_BY_CLUSTER).
        #[arg(short = 'c', long, alias = "clusterName")]
        cluster: Option<String>,
    },
    /// Print one KV config value (GET_KV_CONFIG).
    GetKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
    },
    /// Create or update a KV config value on every NameServer (PUT_KV_CONFIG).
    UpdateKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
        /// The new value.
        #[arg(short = 'v', long)]
        value: String,
    },
    /// Delete a KV config value on every NameServer (DELETE_KV_CONFIG).
    DeleteKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
    },
    /// List the keys and values of a KV namespace (GET_KVLIST_BY_NAMESPACE).
    KvList {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
    },
    /// Clear the write permission of a broker's topics on every NameServer.
    WipeWritePerm {
        /// The broker group's name.
        #[arg(short = 'b', long)]
        broker_name: String,
    },
    /// Restore the write permission of a broker's topics on every NameServer.
    AddWritePerm {
        /// The broker group's name.
        #[arg(short = 'b', long)]
        broker_name: String,
    },
    /// Delete a topic's route from every NameServer (brokers are not touched).
    DeleteTopic {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// Only the topic's queues on this cluster's brokers.
        #[arg(short = 'c', long, alias = "clusterName")]
        cluster: Option<String>,
    },
    /// Print the configuration of every NameServer (GET_NAMESRV_CONFIG).
    GetNamesrvConfig,
    /// Summarize every NameServer: clusters, broker groups, addresses and roles, topic counts,
    /// KV entries, configuration (the status page's summary, from the remoting port).
    Status {
        /// KV namespaces to show (repeatable; the protocol cannot list them).
        #[arg(
            short = 's',
            long = "namespace",
            value_name = "NAMESPACE",
            default_value = "ORDER_TOPIC_CONFIG"
        )]
        namespaces: Vec<String>,
        /// Also show the queues and permissions of the topics whose name contains this
        /// (case-insensitive; "" for every topic, at most 100).
        #[arg(short = 't', long = "topic", value_name = "FILTER")]
        topic_filter: Option<String>,
    },
    /// Update one configuration key on every NameServer (UPDATE_NAMESRV_CONFIG).
    UpdateNamesrvConfig {
        /// A Java property name, e.g. orderMessageEnable.
        #[arg(short = 'k', long)]
        key: String,
        /// Its new value.
        #[arg(short = 'v', long)]
        value: String,
    },
    /// Show the controller group, its leader and peers (CONTROLLER_GET_METADATA_INFO, from the
    /// first controller of -a that answers).
    GetControllerMetaData {
        #[command(flatten)]
        controllers: ControllerAddrs,
    },
    /// Show the SyncStateSet of broker sets (CONTROLLER_GET_SYNC_STATE_DATA, from the leader);
    /// with -c the broker names come from the NameServers of -n.
    #[command(group(ArgGroup::new("which").required(true).args(["broker_name", "cluster"])))]
    GetSyncStateSet {
        #[command(flatten)]
        controllers: ControllerAddrs,
        /// The broker set's name (several: ';'-separated).
        #[arg(short = 'b', long = "brokerName")]
        broker_name: Option<String>,
        /// Every broker set of this cluster.
        #[arg(short = 'c', long = "clusterName")]
        cluster: Option<String>,
    },
    /// Show the epoch cache of each broker of a broker set or cluster (GET_BROKER_EPOCH_CACHE,
    /// asked of the brokers, whose addresses come from the NameServers of -n).
    #[command(group(ArgGroup::new("which").required(true).args(["broker_name", "cluster"])))]
    GetBrokerEpoch {
        /// The broker set's name.
        #[arg(short = 'b', long = "brokerName")]
        broker_name: Option<String>,
        /// Every broker of this cluster.
        #[arg(short = 'c', long = "clusterName")]
        cluster: Option<String>,
    },
    /// Elect a broker master of its broker set (CONTROLLER_ELECT_MASTER, on the leader).
    ElectMaster {
        #[command(flatten)]
        controllers: ControllerAddrs,
        /// The controller id of the broker to become master.
        #[arg(short = 'b', long = "brokerId")]
        broker_id: i64,
        /// The broker set's name (mqadmin's -bn).
        #[arg(long = "brokerName")]
        broker_name: String,
        /// The broker set's cluster.
        #[arg(short = 'c', long = "clusterName")]
        cluster: String,
    },
    /// Remove brokers (or a whole broker set) from the controller's metadata (CLEAN_BROKER_DATA,
    /// on the leader).
    CleanBrokerMetadata {
        #[command(flatten)]
        controllers: ControllerAddrs,
        /// Controller ids to remove, ';'-separated, e.g. "1;2" (all when absent).
        #[arg(short = 'b', long = "brokerControllerIdsToClean", value_parser = parse_broker_ids)]
        broker_ids: Option<BrokerIds>,
        /// The broker set's name (mqadmin's -bn).
        #[arg(long = "brokerName")]
        broker_name: String,
        /// The broker set's cluster (required without -l).
        #[arg(
            short = 'c',
            long = "clusterName",
            required_unless_present = "clean_living_broker"
        )]
        cluster: Option<String>,
        /// Remove living brokers too.
        #[arg(short = 'l', long = "cleanLivingBroker")]
        clean_living_broker: bool,
    },
    /// Print the configuration of every controller of -a (GET_CONTROLLER_CONFIG).
    GetControllerConfig {
        #[command(flatten)]
        controllers: ControllerAddrs,
    },
    /// Update one configuration key on every controller of -a (UPDATE_CONTROLLER_CONFIG).
    UpdateControllerConfig {
        #[command(flatten)]
        controllers: ControllerAddrs,
        /// A Java property name, e.g. enableElectUncleanMaster.
        #[arg(short = 'k', long)]
        key: String,
        /// Its new value.
        #[arg(short = 'v', long)]
        value: String,
    },
}

/// mqadmin's `-a`: the controllers to ask.
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerAddrs {
    /// Controller addresses, ';'-separated, e.g. "10.0.0.1:9878;10.0.0.2:9878".
    #[arg(
        short = 'a',
        long = "controllerAddress",
        value_name = "HOST:PORT;...",
        value_parser = parse_controller_list
    )]
    pub addrs: NamesrvList,
}
