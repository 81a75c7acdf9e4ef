//! Adversarial input over TCP: hostile frames, hostile sizes, odd timing and broken sockets.
//!
//! Every case checks two things. The connection that sent the input is either answered (with the
//! code and remark docs/protocol.md specifies, where it specifies one) or closed by the server,
//! within a few seconds: nothing may hang. And every other connection keeps working: a witness
//! opened before the case and one opened after it get their normal answers, the route of a topic
//! a FakeBroker registered at the start stays visible, and the broker's own connection still
//! answers. `tests/malformed.rs` has the basic malformed frames; this file has the rest of the
//! issue's list and more of the same kind.
//!
//! Raw frames are written with tokio: the listener and the KV store of a test server run on the
//! test's own thread, so nothing here may block it.
//!
//! The cases are grouped by kind, one file each under `tests/adversarial/wire/`, beside the
//! harness they share (a server, a witness broker, witness connections), raw connections, frame
//! builders and the log capture.

mod support;

#[path = "adversarial/wire/frames.rs"]
mod frames;
#[path = "adversarial/wire/harness.rs"]
mod harness;
#[path = "adversarial/wire/logs.rs"]
mod logs;
#[path = "adversarial/wire/raw.rs"]
mod raw;

#[path = "adversarial/wire/bodies.rs"]
mod bodies;
#[path = "adversarial/wire/framing.rs"]
mod framing;
#[path = "adversarial/wire/header_fields.rs"]
mod header_fields;
#[path = "adversarial/wire/header_sizes.rs"]
mod header_sizes;
#[path = "adversarial/wire/requests.rs"]
mod requests;
#[path = "adversarial/wire/sockets.rs"]
mod sockets;

// The surfaces added after the first hostile suite, one module each (tests/adversarial/).
#[path = "adversarial/mod.rs"]
mod surfaces;
