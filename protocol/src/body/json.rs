//! How every body is read and written: objects only, `null` as the default, fastjson's styles.

use serde::{Deserialize, Serialize};

use crate::fastjson;

/// Reads `null` as the type's default: fastjson never writes nulls, but other peers may.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Every body struct is read from a JSON object only: serde's derive would also read one from an
/// array of its field values (`[]` as an empty registration), which fastjson refuses. Each
/// derives with `remote = "Self"` and gets its trait impls from this macro.
macro_rules! json_objects {
    ($($name:ident),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $name::deserialize($crate::fastjson::ObjectOnly(deserializer))
            }
        }
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $name::serialize(self, serializer)
            }
        }
    )*};
}
pub(super) use json_objects;

/// Encodes a body in the given style. Our body types contain only strings, numbers and maps with
/// string or integer keys, which always serialize; an empty body is the fallback that cannot occur.
pub fn to_json<T: Serialize + ?Sized>(value: &T, style: fastjson::JsonStyle) -> Vec<u8> {
    fastjson::to_vec(value, style).unwrap_or_default()
}
