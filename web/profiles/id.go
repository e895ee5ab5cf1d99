package profiles

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// IDLen is the length of a profile ID: 20 base32 characters, 100 bits of
// the SHA-256 of the uploaded bytes.
const IDLen = 20

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID is the ID of a profile with these original bytes: the same bytes
// always get the same ID.
func NewID(data []byte) string { return IDOfSum(sha256.Sum256(data)) }

// IDOfSum is the ID of bytes whose SHA-256 is sum.
func IDOfSum(sum [sha256.Size]byte) string {
	return strings.ToLower(idEncoding.EncodeToString(sum[:]))[:IDLen]
}

// ValidID reports whether id could have come from NewID; only valid IDs are
// ever used to build store keys.
func ValidID(id string) bool {
	if len(id) != IDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// contentVersion is the short content hash Loaded.Version holds.
func contentVersion(data []byte) string { return versionOfSum(sha256.Sum256(data)) }

// versionOfSum is the contentVersion of bytes whose SHA-256 is sum.
func versionOfSum(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:8]) }
