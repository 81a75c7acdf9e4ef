//! The Apache RocketMQ remoting protocol as a NameServer speaks it: frames, commands, both header
//! serializations, typed headers and the JSON bodies, compatible byte for byte with the Java
//! implementation (see docs/protocol.md).
//!
//! No actors and no I/O beyond the tokio-util [`codec::RemotingCodec`]: the crate is shared by the
//! server, its tests, the admin CLI and load tools.
//!
//! ```
//! use bytes::BytesMut;
//! use rmq_protocol::codec::RemotingCodec;
//! use rmq_protocol::command::RemotingCommand;
//! use rmq_protocol::code::RequestCode;
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
//!     .with_opaque(1)
//!     .with_ext("topic", "TopicTest");
//! let mut codec = RemotingCodec::default();
//! let mut wire = BytesMut::new();
//! codec.encode(&request, &mut wire).unwrap();
//! assert_eq!(codec.decode(&mut wire).unwrap(), Some(request));
//! ```

pub mod body;
pub mod code;
pub mod codec;
pub mod command;
pub mod controller;
pub mod custom_headers;
pub mod fastjson;
pub mod header_codec;
mod header_scan;
pub mod properties;
pub mod signature;

pub use code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
pub use codec::{FrameError, RemotingCodec};
pub use command::{ExtFields, RemotingCommand};

#[cfg(test)]
mod golden {
    //! The golden byte vectors (docs/protocol.md#golden-vectors).
    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    use crate::code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
    use crate::codec::{encode_frame, FrameError, RemotingCodec};
    use crate::command::{RemotingCommand, FLAG_ONEWAY};

    /// Parses hex dumps ("0000  00 00 ..." lines).
    fn hex(dump: &str) -> Vec<u8> {
        dump.lines()
            .flat_map(|line| line.split_whitespace().skip(1))
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    fn decode(bytes: &[u8]) -> Result<Option<RemotingCommand>, FrameError> {
        RemotingCodec::default().decode(&mut BytesMut::from(bytes))
    }

    fn encode(cmd: &RemotingCommand) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode_frame(cmd, &mut out).unwrap();
        out.to_vec()
    }

    const V1: &str = "\
0000  00 00 00 87 00 00 00 83 7b 22 63 6f 64 65 22 3a
0010  31 30 35 2c 22 65 78 74 46 69 65 6c 64 73 22 3a
0020  7b 22 74 6f 70 69 63 22 3a 22 54 6f 70 69 63 54
0030  65 73 74 22 7d 2c 22 66 6c 61 67 22 3a 30 2c 22
0040  6c 61 6e 67 75 61 67 65 22 3a 22 4a 41 56 41 22
0050  2c 22 6f 70 61 71 75 65 22 3a 31 2c 22 73 65 72
0060  69 61 6c 69 7a 65 54 79 70 65 43 75 72 72 65 6e
0070  74 52 50 43 22 3a 22 4a 53 4f 4e 22 2c 22 76 65
0080  72 73 69 6f 6e 22 3a 34 37 39 7d";

    const V2: &str = "\
0000  00 00 00 2d 01 00 00 29 00 69 00 01 df 00 00 00
0010  01 00 00 00 00 00 00 00 00 00 00 00 14 00 05 74
0020  6f 70 69 63 00 00 00 09 54 6f 70 69 63 54 65 73
0030  74";

    const V3: &str = "\
0000  00 00 00 f9 00 00 00 f5 7b 22 63 6f 64 65 22 3a
0010  31 37 2c 22 66 6c 61 67 22 3a 31 2c 22 6c 61 6e
0020  67 75 61 67 65 22 3a 22 4a 41 56 41 22 2c 22 6f
0030  70 61 71 75 65 22 3a 31 2c 22 72 65 6d 61 72 6b
0040  22 3a 22 4e 6f 20 74 6f 70 69 63 20 72 6f 75 74
0050  65 20 69 6e 66 6f 20 69 6e 20 6e 61 6d 65 20 73
0060  65 72 76 65 72 20 66 6f 72 20 74 68 65 20 74 6f
0070  70 69 63 3a 20 54 6f 70 69 63 54 65 73 74 5c 6e
0080  53 65 65 20 68 74 74 70 73 3a 2f 2f 72 6f 63 6b
0090  65 74 6d 71 2e 61 70 61 63 68 65 2e 6f 72 67 2f
00a0  64 6f 63 73 2f 62 65 73 74 50 72 61 63 74 69 63
00b0  65 2f 30 36 46 41 51 20 66 6f 72 20 66 75 72 74
00c0  68 65 72 20 64 65 74 61 69 6c 73 2e 22 2c 22 73
00d0  65 72 69 61 6c 69 7a 65 54 79 70 65 43 75 72 72
00e0  65 6e 74 52 50 43 22 3a 22 4a 53 4f 4e 22 2c 22
00f0  76 65 72 73 69 6f 6e 22 3a 34 37 39 7d";

    const V4: &str = "\
0000  00 00 00 8d 00 00 00 89 7b 22 63 6f 64 65 22 3a
0010  33 2c 22 66 6c 61 67 22 3a 31 2c 22 6c 61 6e 67
0020  75 61 67 65 22 3a 22 4a 41 56 41 22 2c 22 6f 70
0030  61 71 75 65 22 3a 37 2c 22 72 65 6d 61 72 6b 22
0040  3a 22 20 72 65 71 75 65 73 74 20 74 79 70 65 20
0050  31 30 20 6e 6f 74 20 73 75 70 70 6f 72 74 65 64
0060  22 2c 22 73 65 72 69 61 6c 69 7a 65 54 79 70 65
0070  43 75 72 72 65 6e 74 52 50 43 22 3a 22 4a 53 4f
0080  4e 22 2c 22 76 65 72 73 69 6f 6e 22 3a 34 37 39
0090  7d";

    const V5: &str = "\
0000  00 00 00 63 01 00 00 27 00 00 00 01 df 00 00 00
0010  09 00 00 00 01 00 00 00 00 00 00 00 12 00 07 63
0020  68 61 6e 67 65 64 00 00 00 05 66 61 6c 73 65 7b
0030  22 63 6f 75 6e 74 65 72 22 3a 33 2c 22 73 74 61
0040  74 65 56 65 72 73 69 6f 6e 22 3a 30 2c 22 74 69
0050  6d 65 73 74 61 6d 70 22 3a 31 37 30 30 30 30 30
0060  30 30 30 30 30 30 7d";

    const V7: &str = "\
0000  00 00 00 70 00 00 00 6c 7b 22 63 6f 64 65 22 3a
0010  31 30 35 2c 22 6c 61 6e 67 75 61 67 65 22 3a 22
0020  47 4f 22 2c 22 76 65 72 73 69 6f 6e 22 3a 33 31
0030  37 2c 22 6f 70 61 71 75 65 22 3a 31 2c 22 66 6c
0040  61 67 22 3a 30 2c 22 72 65 6d 61 72 6b 22 3a 22
0050  22 2c 22 65 78 74 46 69 65 6c 64 73 22 3a 7b 22
0060  74 6f 70 69 63 22 3a 22 54 6f 70 69 63 54 65 73
0070  74 22 7d 7d";

    const V8: &str = "\
0000  00 00 00 6f 01 00 00 6b 03 88 00 01 df 00 00 00
0010  2a 00 00 00 02 00 00 00 00 00 00 00 56 00 0b 63
0020  6c 75 73 74 65 72 4e 61 6d 65 00 00 00 0e 44 65
0030  66 61 75 6c 74 43 6c 75 73 74 65 72 00 0a 62 72
0040  6f 6b 65 72 41 64 64 72 00 00 00 0f 31 32 37 2e
0050  30 2e 30 2e 31 3a 31 30 39 31 31 00 0a 62 72 6f
0060  6b 65 72 4e 61 6d 65 00 00 00 08 62 72 6f 6b 65
0070  72 2d 61";

    fn route_request(serialize_type: SerializeType) -> RemotingCommand {
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_opaque(1)
            .with_ext("topic", "TopicTest")
            .with_serialize_type(serialize_type)
    }

    #[test]
    fn v1_json_route_request() {
        let bytes = hex(V1);
        assert_eq!(bytes.len(), 139);
        assert_eq!(encode(&route_request(SerializeType::Json)), bytes);
        assert_eq!(
            decode(&bytes).unwrap().unwrap(),
            route_request(SerializeType::Json)
        );
    }

    #[test]
    fn v2_binary_route_request() {
        let bytes = hex(V2);
        assert_eq!(bytes.len(), 49);
        assert_eq!(encode(&route_request(SerializeType::RocketMq)), bytes);
        assert_eq!(
            decode(&bytes).unwrap().unwrap(),
            route_request(SerializeType::RocketMq)
        );
    }

    #[test]
    fn v3_topic_not_exist_response() {
        let bytes = hex(V3);
        assert_eq!(bytes.len(), 253);
        let resp = RemotingCommand::response(
            ResponseCode::TOPIC_NOT_EXIST,
            Some(
                "No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
                    .into(),
            ),
        )
        .answering(1)
        .with_version(crate::code::version::V5_3_3);
        assert_eq!(encode(&resp), bytes);
        assert_eq!(decode(&bytes).unwrap().unwrap(), resp);
    }

    #[test]
    fn v4_not_supported_response() {
        let bytes = hex(V4);
        assert_eq!(bytes.len(), 145);
        let resp = RemotingCommand::response(
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(" request type 10 not supported".into()),
        )
        .answering(7)
        .with_version(crate::code::version::V5_3_3);
        assert_eq!(encode(&resp), bytes);
    }

    #[test]
    fn v5_binary_response_with_body() {
        let bytes = hex(V5);
        assert_eq!(bytes.len(), 103);
        let resp = RemotingCommand::success()
            .answering(9)
            .with_version(crate::code::version::V5_3_3)
            .with_ext("changed", "false")
            .with_serialize_type(SerializeType::RocketMq)
            .with_body(&br#"{"counter":3,"stateVersion":0,"timestamp":1700000000000}"#[..]);
        assert_eq!(encode(&resp), bytes);
        assert_eq!(decode(&bytes).unwrap().unwrap(), resp);
        // The same response with a JSON header.
        let json = encode(&resp.clone().with_serialize_type(SerializeType::Json));
        let header = br#"{"code":0,"extFields":{"changed":"false"},"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        assert_eq!(&json[8..8 + header.len()], header);
    }

    #[test]
    fn v7_go_client_request() {
        let cmd = decode(&hex(V7)).unwrap().unwrap();
        assert_eq!(cmd.request_code(), RequestCode::GET_ROUTEINFO_BY_TOPIC);
        assert_eq!(
            (cmd.language, cmd.version, cmd.opaque),
            (LanguageCode::Go, 317, 1)
        );
        assert_eq!(cmd.ext("topic"), Some("TopicTest"));
        assert_eq!(cmd.body, None);
    }

    #[test]
    fn v8_oneway_binary_heartbeat() {
        let bytes = hex(V8);
        assert_eq!(bytes.len(), 115);
        let cmd = decode(&bytes).unwrap().unwrap();
        assert_eq!(cmd.request_code(), RequestCode::BROKER_HEARTBEAT);
        assert_eq!(cmd.opaque, 42);
        assert!(cmd.is_oneway());
        assert_eq!(cmd.flag, FLAG_ONEWAY);
        assert_eq!(cmd.ext("clusterName"), Some("DefaultCluster"));
        assert_eq!(cmd.ext("brokerAddr"), Some("127.0.0.1:10911"));
        assert_eq!(cmd.ext("brokerName"), Some("broker-a"));
        assert_eq!(encode(&cmd), bytes);
    }

    #[test]
    fn v11_malformed_frames() {
        let mut oversize = vec![0x01, 0x00, 0x00, 0x01];
        oversize.extend([0; 8]);
        assert!(matches!(
            decode(&oversize),
            Err(FrameError::TooLarge { .. })
        ));
        assert!(matches!(
            decode(&[0xff, 0xff, 0xff, 0xff, 0, 0]),
            Err(FrameError::BadLength(-1))
        ));
        assert!(matches!(
            decode(&[0, 0, 0, 2, 0, 0]),
            Err(FrameError::BadLength(2))
        ));
        assert!(matches!(
            decode(&[0, 0, 0, 8, 2, 0, 0, 4, b'{', b'}', 0, 0]),
            Err(FrameError::SerializeType(2))
        ));
        assert!(matches!(
            decode(&[0, 0, 0, 8, 0, 0, 0, 0x10, b'{', b'}', 0, 0]),
            Err(FrameError::HeaderTooLong {
                header: 16,
                available: 4
            })
        ));
        assert!(matches!(
            decode(&[0, 0, 0, 6, 0, 0, 0, 2, b'{', b'{']),
            Err(FrameError::Header(_))
        ));
        // A TLS ClientHello on a plaintext port reads as an absurd length.
        assert!(matches!(
            decode(&[0x16, 0x03, 0x01, 0x02, 0, 0]),
            Err(FrameError::TooLarge { .. })
        ));
    }
}
