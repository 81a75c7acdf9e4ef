//! The Watch service: one watch per stream, its events and progress reports.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use super::pb::etcdserverpb::{
    watch_client::WatchClient as PbWatchClient, watch_request::RequestUnion, WatchCreateRequest,
    WatchProgressRequest, WatchRequest,
};
use super::{Channel, Error, KeyValue, RangeEnd};

pub use super::pb::etcdserverpb::WatchResponse;
pub use super::pb::mvccpb::Event;

/// Requests queued on a watch's stream before a sender waits for room.
const QUEUED: usize = 100;

/// Opens watches; cloning it shares its channel. (etcd checks the token when a watch is
/// created: a refused one is cancelled, which the caller handles as any cancelled watch, by
/// starting over with a new client and token.)
#[derive(Clone)]
pub struct WatchClient(PbWatchClient<Channel>);

impl WatchClient {
    pub(super) fn new(channel: Channel) -> Self {
        WatchClient(PbWatchClient::new(channel))
    }

    /// Answers of up to `limit` bytes are read (the default is 4 MiB).
    pub fn max_decoding_message_size(self, limit: usize) -> Self {
        WatchClient(self.0.max_decoding_message_size(limit))
    }

    /// A watch of `key`, or of the keys the options say, on a stream of its own.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream, Error> {
        let (sender, receiver) = mpsc::channel(QUEUED);
        let mut requests = WatchRequestSender(sender);
        requests
            .send(RequestUnion::CreateRequest(
                options.unwrap_or_default().request(key.into()),
            ))
            .await?;
        let responses = self
            .0
            .watch(ReceiverStream::new(receiver))
            .await?
            .into_inner();
        Ok(WatchStream {
            requests,
            responses: WatchResponseStream(responses),
        })
    }
}

/// Which keys a watch follows, from which revision.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    range: RangeEnd,
    start_revision: i64,
}

impl WatchOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every key starting with the key.
    pub fn with_prefix(mut self) -> Self {
        self.range = RangeEnd::Prefix;
        self
    }

    /// The changes from `revision` on (0: from now on).
    pub const fn with_start_revision(mut self, revision: i64) -> Self {
        self.start_revision = revision;
        self
    }

    pub(super) fn request(self, key: Vec<u8>) -> WatchCreateRequest {
        let (key, range_end) = self.range.of(key);
        WatchCreateRequest {
            key,
            range_end,
            start_revision: self.start_revision,
        }
    }
}

/// A watch: its request side and its answers. Dropping it ends the watch.
#[derive(Debug)]
pub struct WatchStream {
    requests: WatchRequestSender,
    responses: WatchResponseStream,
}

impl WatchStream {
    /// The next answer; `None` when etcd ended the stream.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, Error> {
        self.responses.message().await
    }

    /// Its two sides, to be used apart.
    pub fn split(self) -> (WatchRequestSender, WatchResponseStream) {
        (self.requests, self.responses)
    }
}

/// The request side of a watch's stream.
#[derive(Debug)]
pub struct WatchRequestSender(mpsc::Sender<WatchRequest>);

impl WatchRequestSender {
    async fn send(&mut self, request: RequestUnion) -> Result<(), Error> {
        let request = WatchRequest {
            request_union: Some(request),
        };
        self.0
            .send(request)
            .await
            .map_err(|e| Error::Watch(e.to_string()))
    }

    /// Asks for a progress report: an answer, with no events if nothing changed.
    pub async fn request_progress(&mut self) -> Result<(), Error> {
        self.send(RequestUnion::ProgressRequest(WatchProgressRequest {}))
            .await
    }
}

/// The answers of a watch, in revision order.
#[derive(Debug)]
pub struct WatchResponseStream(Streaming<WatchResponse>);

impl WatchResponseStream {
    /// The next answer; `None` when etcd ended the stream.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, Error> {
        Ok(self.0.message().await?)
    }
}

impl WatchResponse {
    /// etcd ended the watch (see [`cancel_reason`](Self::cancel_reason)).
    pub const fn canceled(&self) -> bool {
        self.canceled
    }

    pub fn cancel_reason(&self) -> &str {
        &self.cancel_reason
    }

    /// When the watch was cancelled because its start revision was compacted: the oldest
    /// revision left.
    pub const fn compact_revision(&self) -> i64 {
        self.compact_revision
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

impl Event {
    pub fn kv(&self) -> Option<&KeyValue> {
        self.kv.as_ref()
    }
}
