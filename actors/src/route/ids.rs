//! Identifier newtypes of the route tables.
//!
//! Names are `Arc<str>`: the same broker name is a key in up to one QueueData map per topic, so
//! with thousands of topics sharing one allocation per name matters for memory, and a clone is a
//! reference-count bump.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

macro_rules! name_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub fn new(name: &str) -> Self {
                Self(Arc::from(name))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The name as a shared string (a reference-count bump).
            pub fn shared(&self) -> Arc<str> {
                Arc::clone(&self.0)
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> Self {
                Self::new(name)
            }
        }

        impl From<String> for $name {
            fn from(name: String) -> Self {
                Self(Arc::from(name))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }
    };
}

name_id! {
    /// A topic name.
    TopicName
}
name_id! {
    /// A broker group name (`brokerName`): a master and its slaves.
    BrokerName
}
name_id! {
    /// A cluster name.
    ClusterName
}
name_id! {
    /// A broker instance's `ip:port`.
    BrokerAddr
}

/// A broker id within its group: 0 is the master.
pub type BrokerId = i64;

/// The broker id of a master (`MixAll.MASTER_ID`).
pub const MASTER_ID: BrokerId = 0;

/// One TCP connection, numbered by the listener; unique for the life of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

/// A broker instance as the liveness table keys it: the same address may be registered in two
/// clusters independently (5.x `BrokerAddrInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerInstance {
    pub cluster: ClusterName,
    pub addr: BrokerAddr,
}

impl BrokerInstance {
    pub fn new(cluster: impl Into<ClusterName>, addr: impl Into<BrokerAddr>) -> Self {
        Self {
            cluster: cluster.into(),
            addr: addr.into(),
        }
    }
}

impl fmt::Display for BrokerInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.cluster, self.addr)
    }
}
