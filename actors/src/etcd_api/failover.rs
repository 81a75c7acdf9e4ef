//! The channel a client's requests go out on: one channel per etcd endpoint (the first current
//! one connected by `Client::connect`, the others on their first request), all requests to the
//! current one, and the next endpoint current as soon as one fails at the transport level (it
//! could not be connected, or its connection broke).
//!
//! tonic's balanced channel keeps choosing an endpoint whose connection fails: a member killed
//! out of three failed a third of the requests, and every watch opened on it, until it came back.
//! Here one request fails (the caller retries it, `etcd_call`) and the rest go to a member that
//! answers. An answer from etcd, whatever its gRPC status, is not a failure of the endpoint.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http;
use tonic::codegen::Service;
use tonic::transport::Channel;

/// One channel per endpoint, the current one first in line. Clones share which is current: the
/// one piece of state a client's clones share besides the connections themselves.
#[derive(Clone)]
pub(super) struct Failover {
    channels: Arc<[Channel]>,
    current: Arc<AtomicUsize>,
    /// The channel `poll_ready` was asked of, so `call` uses the same one.
    ready: Option<(usize, Channel)>,
}

impl Failover {
    /// Requests go to `channels[current]` first; `channels` must not be empty.
    pub(super) fn new(channels: Vec<Channel>, current: usize) -> Self {
        Self {
            current: Arc::new(AtomicUsize::new(current)),
            channels: channels.into(),
            ready: None,
        }
    }

    /// The endpoint after `failed` becomes current, unless another request moved on already.
    fn failed(channels: usize, current: &AtomicUsize, failed: usize) {
        let next = (failed + 1) % channels;
        let _ = current.compare_exchange(failed, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Which of `count` endpoints a new client tries first, drawn at random: the clients made one
/// after the other (a store starting over) do not all begin with the same member, which may be
/// the one that is down. Zero when `count` is.
pub(super) fn first_choice(count: usize) -> usize {
    // Each RandomState is seeded afresh: its hash of anything is a random number.
    let drawn = RandomState::new().hash_one(count) as usize;
    drawn % count.max(1)
}

impl Service<http::Request<Body>> for Failover {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let at = self.current.load(Ordering::Relaxed) % self.channels.len();
        let (index, channel) = match &mut self.ready {
            Some((index, channel)) if *index == at => (*index, channel),
            ready => {
                let channel = self.channels[at].clone();
                let (index, channel) = ready.insert((at, channel));
                (*index, channel)
            }
        };
        match channel.poll_ready(cx) {
            Poll::Ready(Err(err)) => {
                Self::failed(self.channels.len(), &self.current, index);
                self.ready = None;
                Poll::Ready(Err(err))
            }
            other => other,
        }
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let (index, mut channel) = match self.ready.take() {
            Some(ready) => ready,
            // Called without poll_ready (tower's contract forbids it): the channel buffers.
            None => {
                let at = self.current.load(Ordering::Relaxed) % self.channels.len();
                (at, self.channels[at].clone())
            }
        };
        let answer = channel.call(request);
        let (channels, current) = (self.channels.len(), Arc::clone(&self.current));
        Box::pin(async move {
            let answer = answer.await;
            if answer.is_err() {
                Self::failed(channels, &current, index);
            }
            answer
        })
    }
}
