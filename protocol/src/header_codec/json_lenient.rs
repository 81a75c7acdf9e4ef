//! The lenient readers of a JSON header's fields, as fastjson reads them: numbers as strings,
//! languages as names or codes, ext values of any type (nested ones only in short headers).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::code::LanguageCode;
use crate::command::ExtFields;

/// Accepts an integer, a numeric string or `null` (0), as fastjson does for `int` properties.
pub(super) fn lenient_i32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    struct IntVisitor;
    impl Visitor<'_> for IntVisitor {
        type Value = i32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a 32-bit integer")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
            i32::try_from(v).map_err(|_| E::custom(format!("{v} does not fit in 32 bits")))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
            i32::try_from(v).map_err(|_| E::custom(format!("{v} does not fit in 32 bits")))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
            v.trim()
                .parse()
                .map_err(|_| E::custom(format!("{v:?} is not an integer")))
        }
        fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
            Ok(0)
        }
        fn visit_none<E: de::Error>(self) -> Result<i32, E> {
            Ok(0)
        }
    }
    deserializer.deserialize_any(IntVisitor)
}

/// Accepts a language name (`"JAVA"`), a language code number, or `null`.
pub(super) fn lenient_language<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<LanguageCode, D::Error> {
    struct LanguageVisitor;
    impl Visitor<'_> for LanguageVisitor {
        type Value = LanguageCode;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a language name or code")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageCode, E> {
            Ok(LanguageCode::from_name(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<LanguageCode, E> {
            Ok(u8::try_from(v).map_or(LanguageCode::Unknown(u8::MAX), LanguageCode::from_code))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageCode, E> {
            Ok(u8::try_from(v).map_or(LanguageCode::Unknown(u8::MAX), LanguageCode::from_code))
        }
        fn visit_unit<E: de::Error>(self) -> Result<LanguageCode, E> {
            Ok(LanguageCode::Unknown(u8::MAX))
        }
    }
    deserializer.deserialize_any(LanguageVisitor)
}

/// Accepts an object whose values are strings, numbers, booleans or null (null entries dropped:
/// Java's lookup of a null value and of a missing key are the same), or a `null` object.
pub(super) fn lenient_ext_fields<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ExtFields>, D::Error> {
    struct ExtVisitor;
    impl<'de> Visitor<'de> for ExtVisitor {
        type Value = Option<ExtFields>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of string values")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut fields = ExtFields::new();
            while let Some((key, value)) = map.next_entry::<Text<'de>, ExtValue<'de>>()? {
                if let Some(text) = value.0 {
                    fields.push_read(&key.0, &text);
                }
            }
            Ok(Some(fields))
        }
    }
    deserializer.deserialize_any(ExtVisitor)
}

/// A string of the header, borrowed from it when it has no escapes (no copy).
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Longest JSON header that may carry nested ext values (objects or arrays, kept as their JSON
/// text as fastjson does). Java clients never send any; reading one builds a tree of about 64
/// bytes per byte, so a header of megabytes of them would cost a gigabyte.
pub const MAX_HEADER_WITH_NESTED: usize = 64 * 1024;

thread_local! {
    /// Whether the header being read is short enough for nested ext values.
    pub(super) static NESTED_ALLOWED: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn nested_allowed<E: de::Error>() -> Result<(), E> {
    if NESTED_ALLOWED.with(std::cell::Cell::get) {
        Ok(())
    } else {
        Err(E::custom(format_args!(
            "nested ext values are read only in headers up to {MAX_HEADER_WITH_NESTED} bytes"
        )))
    }
}

/// One ext value: a string as is (borrowed when it can be), a number or boolean as its text,
/// `null` as absent, a nested value as its JSON text. No intermediate tree for plain values.
struct ExtValue<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for ExtValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = ExtValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an ext field value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Borrowed(if v {
                    "true"
                } else {
                    "false"
                }))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(ExtValue(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ExtValue(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ExtValue(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                nested_allowed()?;
                let nested =
                    serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ExtValue(Some(Cow::Owned(nested.to_string()))))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                nested_allowed()?;
                let nested =
                    serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(ExtValue(Some(Cow::Owned(nested.to_string()))))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}
