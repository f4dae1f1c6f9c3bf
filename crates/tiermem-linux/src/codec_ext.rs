//! Codecs beyond lz4 (zstd, deflate, lzo). Compiled in when their bindings are available.

use crate::codec::Codec;

pub fn available(_c: &Codec) -> bool {
    false
}
pub fn compress(_c: &Codec, _page: &[u8], _out: &mut Vec<u8>) -> Option<()> {
    None
}
pub fn decompress(_c: &Codec, _data: &[u8], _page: &mut [u8]) -> bool {
    false
}
