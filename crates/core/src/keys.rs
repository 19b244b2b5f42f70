//! Ed25519 public keys as the product writes them: 64 hex digits.

use ed25519_dalek::VerifyingKey;

/// The Ed25519 public key `hex` spells (either case, surrounding blanks ignored), if it
/// spells one.
pub fn ed25519_public(hex: &str) -> Option<VerifyingKey> {
    let bytes = data_encoding::HEXLOWER_PERMISSIVE
        .decode(hex.trim().as_bytes())
        .ok()?;
    let arr: [u8; 32] = bytes.try_into().ok()?;
    VerifyingKey::from_bytes(&arr).ok()
}
