package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	// The drivers behind the URL schemes --store accepts; gs:// and
	// azblob:// are in driver_gcs.go and driver_azure.go.
	_ "gocloud.dev/blob/fileblob" // file:///dir
	_ "gocloud.dev/blob/s3blob"   // s3://bucket?region=…&endpoint=…
)

// ErrUnavailable is matched (errors.Is) by errors from an object store that
// could not be reached or refused the request for reasons other than a
// missing key: the server answers 503 and the client may retry.
var ErrUnavailable = errors.New("object store unavailable")

// Blob stores each key as an object in a gocloud.dev bucket: S3 and
// S3-compatible servers (MinIO, Ceph…), Google Cloud Storage, Azure Blob
// Storage or a local directory through fileblob. Objects are written whole:
// a bucket only shows an object once its writer closed without error, and a
// failed write is aborted, so readers never see part of one.
type Blob struct {
	b      *blob.Bucket
	prefix string
	desc   string
	// bucket names an s3:// URL's bucket (AbortUploads), with prefix
	// its prefix= parameter.
	bucket string
}

// OpenURL opens the bucket a URL names, such as
//
//	s3://bucket?region=eu-west-1
//	s3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true&disable_https=true&region=us-east-1
//	gs://bucket
//	azblob://container
//	file:///var/lib/viewer
//
// A prefix=PATH/ query parameter (gocloud's) keeps every key under PATH/.
// Credentials come from each cloud's usual environment (AWS_ACCESS_KEY_ID,
// GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_ACCOUNT…). OpenURL does not
// contact the store: call Check to find out whether it answers.
func OpenURL(ctx context.Context, rawURL string) (*Blob, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: bad --store URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "s3", "gs", "azblob", "file":
	case "":
		return nil, fmt.Errorf("store: --store %q is not a URL: use s3://BUCKET, gs://BUCKET, azblob://CONTAINER or file:///DIR (a plain directory goes in --data)", rawURL)
	default:
		return nil, fmt.Errorf("store: --store scheme %q is not supported: use s3://, gs://, azblob:// or file://", u.Scheme)
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", redact(u), err)
	}
	if tune := bucketTuning[u.Scheme]; tune != nil {
		tune(b)
	}
	bl := &Blob{b: b, desc: redact(u)}
	if u.Scheme == "s3" {
		bl.bucket, bl.prefix = u.Host, u.Query().Get("prefix")
	}
	return bl, nil
}

// bucketTuning adjusts a freshly opened bucket's client per URL scheme
// (driver_gcs.go bounds the Cloud Storage client's retries).
var bucketTuning = map[string]func(*blob.Bucket){}

// redact drops the query (it may carry an endpoint's credentials) from a
// URL shown in messages.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

// String names the bucket for logs, without its query parameters.
func (s *Blob) String() string { return s.desc }

// Close releases the bucket's resources.
func (s *Blob) Close() error { return s.b.Close() }

// Check reports whether the bucket can be written and read, by writing and
// reading back a small object (.viewer-check): a clear error at startup
// beats one on the first upload. (Reading a missing key cannot tell a
// missing bucket from a missing object, and listing needs a permission
// viewer otherwise does without.)
func (s *Blob) Check(ctx context.Context) error {
	const key = ".viewer-check"
	if err := s.Put(ctx, key, strings.NewReader("viewer can write here\n")); err != nil {
		return err
	}
	if _, err := s.b.Attributes(ctx, key); err != nil {
		return &UnavailableError{Op: "reading back", Key: key, Bucket: s.desc, Err: err}
	}
	return nil
}

// Put writes r to key. The object appears only once the whole body was
// uploaded; any error (from r, ctx or the bucket) aborts the write so no
// partial object is ever visible.
func (s *Blob) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType(key)})
	if err != nil {
		return s.wrap("writing", key, err)
	}
	if _, err := io.Copy(w, ctxReader{ctx, r}); err != nil {
		cancel() // a writer whose context ends before Close is aborted
		w.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("store: writing %s: %w", key, ctx.Err())
		}
		return s.wrap("writing", key, err)
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			// A write finds no object missing: the bucket is.
			return &UnavailableError{Op: "writing", Key: key, Bucket: s.desc, Err: fmt.Errorf("the bucket does not exist (%w)", err)}
		}
		return s.wrap("writing", key, err)
	}
	return nil
}

// Get opens key for reading.
func (s *Blob) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, s.wrap("reading", key, err)
	}
	return blobReader{r, s, key}, nil
}

// Stat returns key's size and modification time.
func (s *Blob) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	a, err := s.b.Attributes(ctx, key)
	if err != nil {
		return Info{}, s.wrap("reading", key, err)
	}
	return Info{Size: a.Size, ModTime: a.ModTime, ETag: a.ETag}, nil
}

// PutIfAbsent writes key only if no object has that key yet, using the
// bucket's conditional write (S3 If-None-Match: *, GCS and Azure
// preconditions, an exclusive create for fileblob). It reports false when
// the key existed. Stores that ignore the precondition (some S3 clones)
// make this an ordinary Put: callers must read back what they wrote.
func (s *Blob) PutIfAbsent(ctx context.Context, key string, r io.Reader) (bool, error) {
	if err := ValidKey(key); err != nil {
		return false, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType(key), IfNotExist: true})
	if err != nil {
		return false, s.wrap("writing", key, err)
	}
	if _, err := io.Copy(w, r); err != nil {
		cancel()
		w.Close()
		return false, s.wrap("writing", key, err)
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return false, nil
		}
		return false, s.wrap("writing", key, err)
	}
	return true, nil
}

// wrap turns a bucket error into ErrNotFound for a missing key and
// ErrUnavailable for everything else, naming the bucket and the key.
func (s *Blob) wrap(op, key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store: %s %s in %s: %w", op, key, s.desc, err)
	}
	return &UnavailableError{Op: op, Key: key, Bucket: s.desc, Err: err}
}

// UnavailableError is a failed request to the object store.
type UnavailableError struct {
	Op, Key, Bucket string
	Err             error
}

func (e *UnavailableError) Error() string {
	msg := e.Err.Error()
	// gocloud prefixes "blob (key …) (code=…): "; keep the driver's words.
	if i := strings.LastIndex(msg, "): "); i >= 0 && strings.HasPrefix(msg, "blob (") {
		msg = msg[i+3:]
	}
	return fmt.Sprintf("object store unavailable: %s %s in %s: %s", e.Op, e.Key, e.Bucket, msg)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// blobReader names the object in read errors (a connection dropped mid-body).
type blobReader struct {
	r   *blob.Reader
	s   *Blob
	key string
}

// Size is the blob's size, for ReadAll's array.
func (b blobReader) Size() int64 { return b.r.Size() }

func (b blobReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = b.s.wrap("reading", b.key, err)
	}
	return n, err
}

func (b blobReader) Close() error { return b.r.Close() }

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".gz"):
		return "application/gzip"
	}
	return "application/octet-stream"
}
