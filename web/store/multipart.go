package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// UploadAborter is a Store whose interrupted writes can outlive the
// process that began them, unseen by List: an S3 bucket, where a write of
// more than 16 MiB is a multipart upload whose parts stay stored (and
// billed) until it is completed or aborted, so a crash in the middle of
// one leaves them. (Google Cloud Storage and Azure drop an unfinished
// upload's data themselves after a week; a directory's temporary files
// are removed by NewDir.)
type UploadAborter interface {
	// AbortUploads aborts the unfinished uploads of keys under prefix
	// that began before before, and returns how many it aborted.
	AbortUploads(ctx context.Context, prefix string, before time.Time) (int, error)
}

// AbortUploads aborts the bucket's unfinished multipart uploads of keys
// under prefix begun before before. A bucket opened other than from an
// s3:// URL has none to abort.
func (s *Blob) AbortUploads(ctx context.Context, prefix string, before time.Time) (int, error) {
	var c *s3.Client
	if s.bucket == "" || !s.b.As(&c) {
		return 0, nil
	}
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix)}
	n := 0
	for {
		out, err := c.ListMultipartUploads(ctx, in)
		if noSuchUpload(err) {
			return n, nil // some S3 clones' answer for a bucket that never had one
		}
		if err != nil {
			return n, &UnavailableError{Op: "listing the unfinished uploads of", Key: prefix, Bucket: s.desc, Err: err}
		}
		for _, u := range out.Uploads {
			if u.Initiated == nil || !u.Initiated.Before(before) {
				continue // perhaps another replica's, going on
			}
			_, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: u.Key, UploadId: u.UploadId})
			if err != nil && !noSuchUpload(err) {
				return n, &UnavailableError{Op: "aborting the unfinished upload of", Key: aws.ToString(u.Key), Bucket: s.desc, Err: err}
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// noSuchUpload reports whether err is S3's NoSuchUpload: an upload
// aborted or completed meanwhile.
func noSuchUpload(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload"
}
