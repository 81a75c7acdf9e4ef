//! The admin commands and their options, as clap parses them.

use clap::Subcommand;

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
}
