//go:build !nogcs

package store

import (
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"gocloud.dev/blob"

	// gs://bucket, through gocloud's own Cloud Storage driver (Application
	// Default Credentials, STORAGE_EMULATOR_HOST for an emulator). Its
	// package initialisation costs every viewer subcommand some resident
	// memory (BENCHMARKS.md); build with -tags nogcs to leave it out.
	_ "gocloud.dev/blob/gcsblob"
)

// The Cloud Storage client retries a failing idempotent request until its
// context ends; a request of viewer's would then hang through an outage.
// Three attempts within about a second, then the store answers
// ErrUnavailable (503 Retry-After to the client), as S3's driver does.
func init() {
	bucketTuning["gs"] = func(b *blob.Bucket) {
		var c *storage.Client
		if b.As(&c) {
			c.SetRetry(storage.WithMaxAttempts(3), storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}))
		}
	}
}
