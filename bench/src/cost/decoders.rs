//! The decoders, as the server calls them, each over one input.

use std::hint::black_box;

use bytes::BytesMut;
use rmq_protocol::body::{DataVersion, RegisterBrokerBody, TopicRouteData};
use rmq_protocol::code::version;
use rmq_protocol::codec::RemotingCodec;
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{fastjson, header_codec, properties, SerializeType};
use tokio_util::codec::Decoder;

use super::case::{error_text, Input, Outcome};

pub(super) fn decode_json_header(input: &Input) -> Outcome {
    header_codec::decode(SerializeType::Json, &input.data)
        .map(|cmd| drop(black_box(cmd)))
        .map_err(error_text)
}

pub(super) fn decode_binary_header(input: &Input) -> Outcome {
    header_codec::decode(SerializeType::RocketMq, &input.data)
        .map(|cmd| drop(black_box(cmd)))
        .map_err(error_text)
}

pub(super) fn typed<H: CommandHeader>(input: &Input) -> Outcome {
    let cmd = input.cmd.as_ref().ok_or_else(|| "no command".to_owned())?;
    H::decode(cmd)
        .map(|h| drop(black_box(h)))
        .map_err(error_text)
}

pub(super) fn decode_register_plain(input: &Input) -> Outcome {
    RegisterBrokerBody::decode(Some(&input.data), false, version::V5_3_3, input.limit)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

pub(super) fn decode_register_compressed(input: &Input) -> Outcome {
    RegisterBrokerBody::decode_compressed(&input.data, true, input.limit)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

pub(super) fn decode_topic_route(input: &Input) -> Outcome {
    fastjson::from_slice::<TopicRouteData>(&input.data)
        .map(|b| drop(black_box(b)))
        .map_err(error_text)
}

pub(super) fn decode_data_version(input: &Input) -> Outcome {
    fastjson::from_slice::<DataVersion>(&input.data)
        .map(|b| {
            black_box(b);
        })
        .map_err(error_text)
}

/// As the runtime-config actor reads an UPDATE_NAMESRV_CONFIG body.
pub(super) fn decode_properties(input: &Input) -> Outcome {
    let text = String::from_utf8_lossy(&input.data);
    properties::parse(&text)
        .map(|p| drop(black_box(p)))
        .map_err(error_text)
}

/// The frame codec on a stream arriving `read` bytes at a time, every frame decoded.
pub(super) fn decode_stream(input: &Input, read: usize) -> Outcome {
    let mut codec = RemotingCodec::new(input.limit);
    let mut buf = BytesMut::with_capacity(8 * 1024);
    let mut frames = 0usize;
    for chunk in input.data.chunks(read) {
        buf.extend_from_slice(chunk);
        while let Some(cmd) = codec.decode(&mut buf).map_err(error_text)? {
            black_box(cmd);
            frames += 1;
        }
    }
    if frames == 0 || !buf.is_empty() {
        return Err("stream ended inside a frame".into());
    }
    Ok(())
}

pub(super) fn decode_stream_64k(input: &Input) -> Outcome {
    decode_stream(input, 64 * 1024)
}

pub(super) fn decode_stream_1k(input: &Input) -> Outcome {
    decode_stream(input, 1024)
}
