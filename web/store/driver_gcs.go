//go:build !nogcs

package store

// gs://bucket. The Google Cloud Storage client is the largest driver (about
// 20 MB of the binary); build with -tags nogcs to leave it out.
import _ "gocloud.dev/blob/gcsblob"
