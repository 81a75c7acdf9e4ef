//! The table shape of one `scale` point and the simulated brokers that register it: a master and
//! a slave per broker group, each on its own connection, each round one REGISTER_BROKER or, split
//! as a 5.x broker with `enableSplitRegistration` sends it, several.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::codec::encode_frame;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_tools::broker::FakeBroker;
use rmq_transport::client::ClientStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::broker::{broker_port, CLUSTER};
use crate::wire;
use crate::BenchError;

/// The client's (and Java's) frame limit, 16 MiB.
pub const FRAME_LIMIT: usize = 16 * 1024 * 1024;

/// Which topics each broker group carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub groups: usize,
    /// Topics on each group.
    pub per_group: usize,
    /// Each topic is on this many groups (`groups`: every topic on every group).
    pub spread: usize,
    pub prefix: String,
}

impl Shape {
    /// `spread` 0 means every topic on every group.
    pub fn new(
        groups: usize,
        per_group: usize,
        spread: usize,
        prefix: &str,
    ) -> Result<Self, BenchError> {
        let spread = if spread == 0 { groups } else { spread };
        if groups == 0 || per_group == 0 {
            return Err(BenchError::Usage(
                "groups and topics must be positive".into(),
            ));
        }
        if spread > groups || (spread < groups && per_group % spread != 0) {
            return Err(BenchError::Usage(format!(
                "--spread {spread} must be at most --groups {groups} and divide --topics {per_group}"
            )));
        }
        Ok(Self {
            groups,
            per_group,
            spread,
            prefix: prefix.to_owned(),
        })
    }

    /// Distinct topics: `per_group` when every topic is on every group; else every group's window
    /// of `per_group` topics starts `per_group / spread`
    /// after the previous one, so each topic is on exactly `spread` groups.
    pub fn distinct(&self) -> usize {
        if self.spread == self.groups {
            return self.per_group;
        }
        self.groups * self.per_group / self.spread
    }

    /// Topic-broker-group entries of the route table (a slave adds none).
    pub fn entries(&self) -> usize {
        self.groups * self.per_group
    }

    pub fn topic(&self, index: usize) -> String {
        format!("{}Topic-{index:07}", self.prefix)
    }

    pub fn group_name(&self, group: usize) -> String {
        format!("{}Group-{group:04}", self.prefix)
    }

    /// The topics of `group`.
    pub fn topics_of(&self, group: usize) -> Vec<String> {
        if self.spread == self.groups {
            return (0..self.per_group).map(|i| self.topic(i)).collect();
        }
        let step = self.per_group / self.spread;
        let total = self.distinct();
        (0..self.per_group)
            .map(|i| self.topic((group * step + i) % total))
            .collect()
    }

    /// The data itself: the distinct topic names' bytes plus 16 bytes of queue data (four i32s)
    /// per entry.
    pub fn floor_bytes(&self) -> usize {
        let names: usize = (0..self.distinct()).map(|i| self.topic(i).len()).sum();
        names + 16 * self.entries()
    }
}

/// How registration rounds are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Split {
    /// Split when one body would not fit a 16 MiB frame, as an operator turns it on.
    Auto,
    Always,
    Never,
}

/// One simulated broker: its round of pre-encoded frames (opaque, frame) and its connection.
pub struct Member {
    pub name: String,
    pub frames: Arc<Vec<(i32, Bytes)>>,
    pub stream: Option<ClientStream>,
    pub buf: BytesMut,
}

/// The frames of one broker's round.
fn round_frames(
    broker: &FakeBroker,
    split: Option<usize>,
    first_opaque: i32,
) -> Result<Vec<(i32, Bytes)>, BenchError> {
    let commands: Vec<RemotingCommand> = match split {
        Some(chunk) => broker.register_split(chunk),
        None => vec![broker.register()],
    };
    commands
        .into_iter()
        .zip(first_opaque..)
        .map(|(cmd, opaque)| {
            let mut frame = BytesMut::new();
            encode_frame(&cmd.with_opaque(opaque), &mut frame)
                .map_err(|e| BenchError::Protocol(format!("cannot encode registration: {e}")))?;
            Ok((opaque, frame.freeze()))
        })
        .collect()
}

/// Whether a plain registration of `topics` would pass the frame limit (estimated from the first
/// 800 topics' body).
fn needs_split(shape: &Shape, topics: &[String], queues: i32) -> bool {
    let sample = &topics[..topics.len().min(800)];
    let mut broker = FakeBroker::new(CLUSTER, &shape.group_name(0), 0, 20_000, sample.to_vec());
    broker.queues = queues;
    let per_topic = broker.body_json().len() as f64 / sample.len().max(1) as f64;
    per_topic * topics.len() as f64 + 4096.0 > FRAME_LIMIT as f64
}

/// The master and slave of every group, frames encoded, not connected. Returns them and whether
/// the rounds are split.
pub fn members(
    shape: &Shape,
    queues: i32,
    split: Split,
    chunk: usize,
) -> Result<(Vec<Member>, bool), BenchError> {
    let first = shape.topics_of(0);
    let split = match split {
        Split::Always => true,
        Split::Never => false,
        Split::Auto => needs_split(shape, &first, queues),
    };
    let mut out = Vec::with_capacity(2 * shape.groups);
    for group in 0..shape.groups {
        let topics = if group == 0 {
            first.clone()
        } else {
            shape.topics_of(group)
        };
        let name = shape.group_name(group);
        let port = broker_port(group)?;
        for id in 0..2 {
            let mut broker = FakeBroker::new(
                CLUSTER,
                &name,
                id,
                port.saturating_add(2 * id as u16),
                topics.clone(),
            );
            broker.queues = queues;
            let frames = round_frames(&broker, split.then_some(chunk), 1)?;
            out.push(Member {
                name: format!("{name}/{id}"),
                frames: Arc::new(frames),
                stream: None,
                buf: BytesMut::with_capacity(4096),
            });
        }
    }
    Ok((out, split))
}

/// Requests and bytes of one round of every member.
pub fn round_size(members: &[Member]) -> (usize, usize) {
    members.iter().fold((0, 0), |(n, b), m| {
        (
            n + m.frames.len(),
            b + m.frames.iter().map(|(_, f)| f.len()).sum::<usize>(),
        )
    })
}

/// One member's round on its connection (connecting first if it has none); any answer but
/// SUCCESS is an error naming the member.
async fn register_member(
    mut member: Member,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Member, BenchError> {
    if member.stream.is_none() {
        member.stream = Some(wire::connect_stream(addr, None, timeout).await?);
    }
    let frames = Arc::clone(&member.frames);
    let Member { stream, buf, .. } = &mut member;
    let stream = stream
        .as_mut()
        .ok_or_else(|| BenchError::Protocol("no connection".into()))?;
    for (opaque, frame) in frames.iter() {
        let reply = wire::call(stream, frame, *opaque, buf, timeout).await?;
        if reply.code != ResponseCode::SUCCESS.0 {
            return Err(BenchError::Protocol(format!(
                "registration of {} (request {opaque} of {}) answered code {}",
                member.name,
                frames.len(),
                reply.code
            )));
        }
    }
    Ok(member)
}

/// One round of every member, at most `concurrency` at a time; returns them (connections kept
/// open: closing one unregisters its broker) in their order and how long it took.
pub async fn round(
    members: Vec<Member>,
    addr: SocketAddr,
    concurrency: usize,
    timeout: Duration,
) -> Result<(Vec<Member>, Duration), BenchError> {
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for (i, member) in members.into_iter().enumerate() {
        let permits = Arc::clone(&permits);
        tasks.spawn(async move {
            let _permit = permits
                .acquire()
                .await
                .map_err(|_| BenchError::Protocol("round cancelled".into()))?;
            Ok::<_, BenchError>((i, register_member(member, addr, timeout).await?))
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        done.push(joined.map_err(|e| BenchError::Protocol(format!("round task: {e}")))??);
    }
    done.sort_by_key(|(i, _)| *i);
    Ok((
        done.into_iter().map(|(_, m)| m).collect(),
        started.elapsed(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_puts_each_topic_on_that_many_groups() {
        let shape = Shape::new(4, 6, 2, "S").unwrap();
        assert_eq!(shape.distinct(), 12);
        assert_eq!(shape.entries(), 24);
        let mut count = std::collections::HashMap::new();
        for g in 0..4 {
            for t in shape.topics_of(g) {
                *count.entry(t).or_insert(0) += 1;
            }
        }
        assert_eq!(count.len(), 12);
        assert!(count.values().all(|&c| c == 2));
        let every = Shape::new(3, 5, 0, "S").unwrap();
        assert_eq!(every.distinct(), 5);
        assert_eq!(every.topics_of(2), every.topics_of(0));
        assert_eq!(every.floor_bytes(), 5 * "STopic-0000000".len() + 16 * 15);
        assert!(Shape::new(3, 5, 2, "S").is_err());
        assert!(Shape::new(2, 4, 3, "S").is_err());
    }
}
