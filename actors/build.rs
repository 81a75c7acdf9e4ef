//! Generates the etcd v3 gRPC client's messages and stubs (`actors/src/etcd_api/`) from
//! `proto/`, with protox, a protobuf compiler written in Rust: building needs no `protoc`.

use std::io;

/// The files compiled; each imports others by their path under `proto/`.
const PROTOS: [&str; 2] = ["proto/mvccpb.proto", "proto/etcdserverpb.proto"];

fn main() -> io::Result<()> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(PROTOS, ["proto"]).map_err(io::Error::other)?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .compile_fds(descriptors)
}
