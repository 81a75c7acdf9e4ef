//! RocketMQ request signatures, as the Java `AclClientRPCHook` makes them and brokers check them
//! (ACL 1.0 and 2.0 sign alike; docs/access.md#signatures):
//!
//! 1. The client adds ext field `AccessKey` (and `SecurityToken` when it has one).
//! 2. The *content* is the values of every ext field but `Signature`, in the order of their
//!    keys (Java's `TreeMap<String, String>`: UTF-16 code-unit order), concatenated as UTF-8,
//!    followed by the body bytes.
//! 3. `Signature` = Base64 (standard alphabet, padded) of HmacSHA1(secret key as UTF-8, content).
//!
//! There is no nonce or timestamp in it: whoever sees a signed request can send it again.

use std::cmp::Ordering;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::command::{ExtFields, RemotingCommand};

/// The ext field naming the signer (Java `SessionCredentials.ACCESS_KEY`).
pub const ACCESS_KEY: &str = "AccessKey";
/// The ext field carrying the signature.
pub const SIGNATURE: &str = "Signature";
/// The optional ext field of a security token; signed like any other field.
pub const SECURITY_TOKEN: &str = "SecurityToken";

/// Ext fields a signed request may carry at most: sorting them is the only step that is not
/// linear in the request's size, and real requests carry a few dozen.
pub const MAX_SIGNED_FIELDS: usize = 4096;

type HmacSha1 = Hmac<Sha1>;

/// Why a signature does not verify. Deliberately says nothing of *how* it differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Signature field")]
    Missing,
    #[error("bad signature")]
    Mismatch,
    #[error("more than {MAX_SIGNED_FIELDS} header fields to sign")]
    TooManyFields,
}

/// The bytes a signature covers: the ext-field values but `Signature`'s in Java's key order
/// (of a key sent twice, the later value, as Java's map keeps), then the body.
pub fn content(fields: &ExtFields, body: &[u8]) -> Result<Vec<u8>, SignatureError> {
    if fields.len() > MAX_SIGNED_FIELDS {
        return Err(SignatureError::TooManyFields);
    }
    let mut entries: Vec<(&str, &str)> = fields.iter().filter(|(k, _)| *k != SIGNATURE).collect();
    // A stable sort keeps arrival order among equal keys: the last of each run is the value.
    entries.sort_by(|a, b| java_order(a.0, b.0));
    let mut out =
        Vec::with_capacity(entries.iter().map(|(_, v)| v.len()).sum::<usize>() + body.len());
    for (i, (key, value)) in entries.iter().enumerate() {
        let superseded = entries.get(i + 1).is_some_and(|(next, _)| next == key);
        if !superseded {
            out.extend_from_slice(value.as_bytes());
        }
    }
    out.extend_from_slice(body);
    Ok(out)
}

/// Java's `String.compareTo`: by UTF-16 code units (differs from byte order only beyond the
/// Basic Multilingual Plane).
fn java_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// The signature of `content` with `secret_key`: Base64 of HmacSHA1.
pub fn sign(content: &[u8], secret_key: &str) -> String {
    STANDARD.encode(mac(content, secret_key).finalize().into_bytes())
}

/// Whether `signature` is the signature of `content` with `secret_key`, compared in constant
/// time.
pub fn verify(content: &[u8], secret_key: &str, signature: &str) -> Result<(), SignatureError> {
    let claimed = STANDARD
        .decode(signature.trim())
        .map_err(|_| SignatureError::Mismatch)?;
    mac(content, secret_key)
        .verify_slice(&claimed)
        .map_err(|_| SignatureError::Mismatch)
}

fn mac(content: &[u8], secret_key: &str) -> HmacSha1 {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = <HmacSha1 as Mac>::new_from_slice(secret_key.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(content);
    mac
}

/// Checks the signature of a received request with the secret of its access key.
pub fn verify_command(cmd: &RemotingCommand, secret_key: &str) -> Result<(), SignatureError> {
    let fields = cmd.ext_fields.as_ref().ok_or(SignatureError::Missing)?;
    let signature = fields.get(SIGNATURE).ok_or(SignatureError::Missing)?;
    verify(&content(fields, cmd.body_bytes())?, secret_key, signature)
}

/// Signs a request as `AclClientRPCHook.doBeforeRequest` does: adds `AccessKey` (and
/// `SecurityToken`), then `Signature` over everything else and the body.
pub fn sign_command(
    cmd: &mut RemotingCommand,
    access_key: &str,
    secret_key: &str,
    security_token: Option<&str>,
) -> Result<(), SignatureError> {
    let fields = cmd.ext_fields.get_or_insert_with(ExtFields::new);
    fields.insert_str(ACCESS_KEY, access_key);
    if let Some(token) = security_token {
        fields.insert_str(SECURITY_TOKEN, token);
    }
    let body = cmd.body.as_deref().unwrap_or_default();
    let signature = sign(&content(fields, body)?, secret_key);
    fields.insert_str(SIGNATURE, &signature);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;

    #[test]
    fn the_signature_is_java_s_hmac_sha1_in_base64() {
        // javax.crypto.Mac HmacSHA1, key "12345678", data "abc": Base64 of the RFC 2104 MAC.
        assert_eq!(sign(b"abc", "12345678"), "BOigG5+Fiv0354g5bQuwOUOPMp0=");
        assert!(verify(b"abc", "12345678", "BOigG5+Fiv0354g5bQuwOUOPMp0=").is_ok());
        assert_eq!(
            verify(b"abd", "12345678", "BOigG5+Fiv0354g5bQuwOUOPMp0="),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"abc", "12345678", "not base64!"),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn content_is_the_values_in_key_order_without_the_signature_then_the_body() {
        let fields = ExtFields::new()
            .with("topic", "T")
            .with(SIGNATURE, "ignored")
            .with(ACCESS_KEY, "ak")
            .with("b", "2");
        assert_eq!(content(&fields, b"BODY").unwrap(), b"ak2TBODY");
    }

    #[test]
    fn a_repeated_key_counts_with_its_last_value() {
        let mut cmd = RemotingCommand::request(RequestCode::GET_KV_CONFIG);
        let mut fields = ExtFields::new();
        fields.push_read("k", "first");
        fields.push_read("a", "x");
        fields.push_read("k", "last");
        cmd.ext_fields = Some(fields);
        assert_eq!(
            content(cmd.ext_fields.as_ref().unwrap(), b"").unwrap(),
            b"xlast"
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units_as_java_does() {
        // U+FF21 (one UTF-16 unit, 0xFF21) sorts after U+1F600 (surrogates 0xD83D...) in Java,
        // though its UTF-8 bytes sort first.
        let fields = ExtFields::new()
            .with("\u{FF21}", "1")
            .with("\u{1F600}", "2");
        assert_eq!(content(&fields, b"").unwrap(), b"21");
    }

    #[test]
    fn a_signed_command_verifies_and_a_changed_body_does_not() {
        let mut cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "ns")
            .with_ext("key", "k")
            .with_ext("value", "v");
        sign_command(&mut cmd, "rocketmq2", "12345678", Some("token")).unwrap();
        assert_eq!(cmd.ext(ACCESS_KEY), Some("rocketmq2"));
        assert!(verify_command(&cmd, "12345678").is_ok());
        assert_eq!(verify_command(&cmd, "wrong"), Err(SignatureError::Mismatch));
        let replayed = cmd.clone().with_body(&b"changed"[..]);
        assert_eq!(
            verify_command(&replayed, "12345678"),
            Err(SignatureError::Mismatch)
        );
        let unsigned = RemotingCommand::request(RequestCode::PUT_KV_CONFIG);
        assert_eq!(
            verify_command(&unsigned, "12345678"),
            Err(SignatureError::Missing)
        );
    }

    #[test]
    fn too_many_fields_are_not_sorted() {
        let fields: ExtFields = (0..=MAX_SIGNED_FIELDS)
            .map(|i| (i.to_string(), "v"))
            .collect();
        assert_eq!(content(&fields, b""), Err(SignatureError::TooManyFields));
    }
}
