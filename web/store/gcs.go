package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/oauth2/google"
)

// gs://bucket is served by this driver: gocloud.dev/blob's driver interface
// over Google Cloud Storage's JSON API, with Application Default Credentials
// from golang.org/x/oauth2/google (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application-default login, or the GCE/GKE metadata server), the ones
// gocloud's gcsblob uses. It replaces gcsblob because the Google Cloud
// client's package initialisation (gRPC, OpenTelemetry, protobuf
// registries) added about 25 MB to the RSS of every viewer subcommand,
// including those that never open a bucket (BENCHMARKS.md, "Start-up cost
// of each store driver"). Keys are escaped as gcsblob escapes them, so a
// bucket written by either reads the same through the other.
//
// URL parameters: anonymous=true sends no credentials (a public bucket).
// STORAGE_EMULATOR_HOST (HOST:PORT or a URL), the Cloud Storage client's
// own variable, sends requests to an emulator instead, without credentials.
func init() {
	blob.DefaultURLMux().RegisterBucket("gs", gcsOpener{})
}

const (
	gcsEndpoint = "https://storage.googleapis.com"
	gcsScope    = "https://www.googleapis.com/auth/devstorage.read_write"
)

type gcsOpener struct{}

func (gcsOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	anonymous := false
	for k, v := range u.Query() {
		switch k {
		case "anonymous":
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, fmt.Errorf("gs: anonymous=%q is not true or false", v[0])
			}
			anonymous = b
		default:
			return nil, fmt.Errorf("gs: unknown URL parameter %q (gs:// takes anonymous=true and prefix=DIR/)", k)
		}
	}
	if u.Host == "" {
		return nil, errors.New("gs: the URL names no bucket: use gs://BUCKET")
	}
	endpoint, client := gcsEndpoint, http.DefaultClient
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		endpoint = host
		if !strings.Contains(host, "://") {
			endpoint = "http://" + host
		}
	} else if !anonymous {
		c, err := google.DefaultClient(ctx, gcsScope)
		if err != nil {
			return nil, fmt.Errorf("gs: no Google credentials (set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run `gcloud auth application-default login`, or run on GCP): %w", err)
		}
		client = c
	}
	return blob.NewBucket(NewGCSBucket(u.Host, endpoint, client)), nil
}

// NewGCSBucket is the gs:// driver for bucket at endpoint (such as
// https://storage.googleapis.com, or a test server), sending requests
// through client, which adds the credentials.
func NewGCSBucket(bucket, endpoint string, client *http.Client) driver.Bucket {
	return &gcsBucket{name: bucket, endpoint: strings.TrimSuffix(endpoint, "/"), client: client}
}

type gcsBucket struct {
	name     string
	endpoint string
	client   *http.Client
}

// gcsError is a request the JSON API refused or that did not reach it.
type gcsError struct {
	status int // 0: the request failed before an answer
	msg    string
}

func (e *gcsError) Error() string {
	if e.status == 0 {
		return e.msg
	}
	return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status)
}

// ErrorCode maps the JSON API's HTTP statuses to gocloud's codes.
func (b *gcsBucket) ErrorCode(err error) gcerrors.ErrorCode {
	var e *gcsError
	if !errors.As(err, &e) {
		return gcerrors.Unknown
	}
	switch e.status {
	case http.StatusNotFound:
		return gcerrors.NotFound
	case http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case http.StatusBadRequest:
		return gcerrors.InvalidArgument
	case http.StatusUnauthorized, http.StatusForbidden:
		return gcerrors.PermissionDenied
	case http.StatusTooManyRequests:
		return gcerrors.ResourceExhausted
	case http.StatusConflict:
		return gcerrors.AlreadyExists
	case http.StatusNotImplemented:
		return gcerrors.Unimplemented
	}
	return gcerrors.Unknown
}

func (b *gcsBucket) As(any) bool             { return false }
func (b *gcsBucket) ErrorAs(error, any) bool { return false }
func (b *gcsBucket) Close() error            { return nil }

func (b *gcsBucket) objectURL(key string) string {
	return b.endpoint + "/storage/v1/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(gcsEscapeKey(key))
}

// gcsObject is the JSON API's object resource, the fields viewer reads.
type gcsObject struct {
	Name               string            `json:"name"`
	Size               int64             `json:"size,string"`
	Updated            time.Time         `json:"updated"`
	TimeCreated        time.Time         `json:"timeCreated"`
	ContentType        string            `json:"contentType,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	MD5Hash            string            `json:"md5Hash,omitempty"`
	ETag               string            `json:"etag,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

// do sends the request make builds, retrying idempotent ones (every
// request but an upload) twice with a backoff when the service answers
// 429 or 5xx or cannot be reached, as the Cloud Storage client does. A
// non-2xx answer becomes a *gcsError carrying the service's message.
func (b *gcsBucket) do(ctx context.Context, retry bool, make func() (*http.Request, error)) (*http.Response, error) {
	wait := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := make()
		if err != nil {
			return nil, err
		}
		resp, err := b.client.Do(req)
		if err == nil && resp.StatusCode/100 == 2 {
			return resp, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			err = &gcsError{msg: err.Error()}
		} else {
			err = gcsResponseError(resp)
		}
		var e *gcsError
		transient := errors.As(err, &e) && (e.status == 0 || e.status == http.StatusTooManyRequests || e.status >= 500)
		if !retry || !transient || attempt == 2 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 4
	}
}

// gcsResponseError reads the JSON API's error body ({"error": {"message"}})
// and closes it.
func gcsResponseError(resp *http.Response) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &gcsError{status: resp.StatusCode, msg: msg}
}

func (b *gcsBucket) getJSON(ctx context.Context, method, u string, body []byte, v any) error {
	resp, err := b.do(ctx, true, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err == nil && body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return &gcsError{msg: "gs: bad answer from " + b.endpoint + ": " + err.Error()}
	}
	return nil
}

func (b *gcsBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	var o gcsObject
	if err := b.getJSON(ctx, http.MethodGet, b.objectURL(key), nil, &o); err != nil {
		return nil, err
	}
	md5, _ := base64.StdEncoding.DecodeString(o.MD5Hash)
	// The JSON API's etag is bare; gocloud's is an HTTP ETag ("…"), as
	// gcsblob restores it.
	etag := o.ETag
	if !strings.HasPrefix(etag, `W/"`) && !strings.HasPrefix(etag, `"`) {
		etag = strconv.Quote(etag)
	}
	return &driver.Attributes{
		CacheControl:       o.CacheControl,
		ContentDisposition: o.ContentDisposition,
		ContentEncoding:    o.ContentEncoding,
		ContentLanguage:    o.ContentLanguage,
		ContentType:        o.ContentType,
		Metadata:           o.Metadata,
		CreateTime:         o.TimeCreated,
		ModTime:            o.Updated,
		Size:               o.Size,
		MD5:                md5,
		ETag:               etag,
		AsFunc:             func(any) bool { return false },
	}, nil
}

func (b *gcsBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	q := url.Values{}
	if opts.Prefix != "" {
		q.Set("prefix", gcsEscapeKey(opts.Prefix))
	}
	if opts.Delimiter != "" {
		q.Set("delimiter", gcsEscapeKey(opts.Delimiter))
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	q.Set("maxResults", strconv.Itoa(pageSize))
	if len(opts.PageToken) > 0 {
		q.Set("pageToken", string(opts.PageToken))
	}
	if opts.BeforeList != nil {
		if err := opts.BeforeList(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	var page struct {
		Items         []gcsObject `json:"items"`
		Prefixes      []string    `json:"prefixes"`
		NextPageToken string      `json:"nextPageToken"`
	}
	u := b.endpoint + "/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	if err := b.getJSON(ctx, http.MethodGet, u, nil, &page); err != nil {
		return nil, err
	}
	out := &driver.ListPage{NextPageToken: []byte(page.NextPageToken)}
	for _, o := range page.Items {
		md5, _ := base64.StdEncoding.DecodeString(o.MD5Hash)
		out.Objects = append(out.Objects, &driver.ListObject{Key: gcsUnescapeKey(o.Name), ModTime: o.Updated, Size: o.Size, MD5: md5, AsFunc: func(any) bool { return false }})
	}
	for _, p := range page.Prefixes {
		out.Objects = append(out.Objects, &driver.ListObject{Key: gcsUnescapeKey(p), IsDir: true, AsFunc: func(any) bool { return false }})
	}
	slices.SortFunc(out.Objects, func(a, b *driver.ListObject) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (b *gcsBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if length == 0 {
		// No bytes wanted: the attributes alone (a Range cannot ask for 0).
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, err
		}
		if opts.BeforeRead != nil {
			if err := opts.BeforeRead(func(any) bool { return false }); err != nil {
				return nil, err
			}
		}
		return &gcsReader{body: io.NopCloser(strings.NewReader("")), attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size}}, nil
	}
	resp, err := b.do(ctx, true, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.objectURL(key)+"?alt=media", nil)
		if err != nil {
			return nil, err
		}
		switch {
		case length > 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
		case offset > 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		}
		return req, nil
	})
	if err != nil {
		var e *gcsError
		if errors.As(err, &e) && e.status == http.StatusRequestedRangeNotSatisfiable {
			// Reading from at or past the end gives no bytes, as for
			// gocloud's other drivers.
			a, aerr := b.Attributes(ctx, key)
			if aerr != nil {
				return nil, aerr
			}
			return &gcsReader{body: io.NopCloser(strings.NewReader("")), attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size}}, nil
		}
		return nil, err
	}
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(func(any) bool { return false }); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	r := &gcsReader{body: resp.Body, attrs: driver.ReaderAttributes{ContentType: resp.Header.Get("Content-Type"), Size: resp.ContentLength}}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		r.attrs.ModTime = t
	}
	// The whole object's size: after the slash of a partial answer's
	// Content-Range, else GCS's stored length.
	if cr := resp.Header.Get("Content-Range"); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				r.attrs.Size = n
			}
		}
	} else if n, err := strconv.ParseInt(resp.Header.Get("X-Goog-Stored-Content-Length"), 10, 64); err == nil {
		r.attrs.Size = n
	}
	return r, nil
}

type gcsReader struct {
	body  io.ReadCloser
	attrs driver.ReaderAttributes
}

func (r *gcsReader) Read(p []byte) (int, error)           { return r.body.Read(p) }
func (r *gcsReader) Close() error                         { return r.body.Close() }
func (r *gcsReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *gcsReader) As(any) bool                          { return false }

// NewTypedWriter streams the object in one multipart upload (metadata,
// then the bytes as they are written); GCS creates the object only when
// the whole body arrived, so an aborted write leaves nothing.
func (b *gcsBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	meta := gcsObject{
		Name:               gcsEscapeKey(key),
		ContentType:        contentType,
		CacheControl:       opts.CacheControl,
		ContentDisposition: opts.ContentDisposition,
		ContentEncoding:    opts.ContentEncoding,
		ContentLanguage:    opts.ContentLanguage,
		Metadata:           opts.Metadata,
	}
	if len(opts.ContentMD5) > 0 {
		meta.MD5Hash = base64.StdEncoding.EncodeToString(opts.ContentMD5)
	}
	mj, err := json.Marshal(struct {
		gcsObject
		// The resource's read-only fields stay out of the request.
		Size        int64      `json:"size,omitempty"`
		Updated     *time.Time `json:"updated,omitempty"`
		TimeCreated *time.Time `json:"timeCreated,omitempty"`
	}{gcsObject: meta})
	if err != nil {
		return nil, err
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	boundary := hex.EncodeToString(rnd[:])
	head := "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" + string(mj) +
		"\r\n--" + boundary + "\r\nContent-Type: " + contentType + "\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	q := url.Values{"uploadType": {"multipart"}}
	if opts.IfNotExist {
		q.Set("ifGenerationMatch", "0")
	}
	u := b.endpoint + "/upload/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	pr, pw := io.Pipe()
	w := &gcsWriter{ctx: ctx, pw: pw, done: make(chan error, 1)}
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, io.MultiReader(strings.NewReader(head), pr, strings.NewReader(tail)))
		if err == nil {
			req.Header.Set("Content-Type", "multipart/related; boundary="+boundary)
			var resp *http.Response
			resp, err = b.do(ctx, false, func() (*http.Request, error) { return req, nil })
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		pr.CloseWithError(cmpErr(err, errors.New("gs: upload ended")))
		w.done <- err
	}()
	return w, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

type gcsWriter struct {
	ctx  context.Context
	pw   *io.PipeWriter
	done chan error
}

func (w *gcsWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the body and waits for GCS's answer; after the context ended
// it aborts the upload instead, so nothing is created.
func (w *gcsWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.pw.CloseWithError(err)
		<-w.done
		return err
	}
	w.pw.Close()
	err := <-w.done
	if cerr := w.ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

func (b *gcsBucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if opts.BeforeCopy != nil {
		if err := opts.BeforeCopy(func(any) bool { return false }); err != nil {
			return err
		}
	}
	base := b.objectURL(srcKey) + "/rewriteTo/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(gcsEscapeKey(dstKey))
	token := ""
	for {
		u := base
		if token != "" {
			u += "?rewriteToken=" + url.QueryEscape(token)
		}
		var r struct {
			Done         bool   `json:"done"`
			RewriteToken string `json:"rewriteToken"`
		}
		if err := b.getJSON(ctx, http.MethodPost, u, []byte("{}"), &r); err != nil {
			return err
		}
		if r.Done {
			return nil
		}
		token = r.RewriteToken
	}
}

func (b *gcsBucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	return b.getJSON(ctx, http.MethodDelete, b.objectURL(key), nil, nil)
}

// SignedURL is not offered: viewer never hands out object URLs.
func (b *gcsBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", &gcsError{status: http.StatusNotImplemented, msg: "gs: signed URLs are not supported"}
}

// gcsEscapeKey escapes what GCS cannot store in a name (CR, LF, the slash
// of "../") and anything that reads as an escape, as "__0x2f__", the
// escaping of gocloud's gcsblob (gocloud.dev/internal/escape).
func gcsEscapeKey(key string) string {
	if !strings.ContainsAny(key, "\r\n_") && !strings.Contains(key, "../") {
		return key
	}
	r := []rune(key)
	var sb strings.Builder
	for i, c := range r {
		if c == '\n' || c == '\r' || (i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.') {
			fmt.Fprintf(&sb, "__%#x__", c)
			continue
		}
		if _, _, ok := gcsUnescapeAt(r, i); ok {
			fmt.Fprintf(&sb, "__%#x__", c)
			continue
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

// gcsUnescapeKey reverses gcsEscapeKey.
func gcsUnescapeKey(key string) string {
	if !strings.Contains(key, "__0x") {
		return key
	}
	r := []rune(key)
	var sb strings.Builder
	for i := 0; i < len(r); i++ {
		if c, end, ok := gcsUnescapeAt(r, i); ok {
			sb.WriteRune(c)
			i = end
			continue
		}
		sb.WriteRune(r[i])
	}
	return sb.String()
}

// gcsUnescapeAt parses "__0xHEX__" at r[i:], returning the rune and the
// index of the escape's last rune.
func gcsUnescapeAt(r []rune, i int) (rune, int, bool) {
	if i+4 > len(r) || r[i] != '_' || r[i+1] != '_' || r[i+2] != '0' || r[i+3] != 'x' {
		return 0, 0, false
	}
	rest := r[i+4:]
	j := 0
	for j < len(rest) && rest[j] != '_' {
		j++
	}
	if j+1 >= len(rest) || rest[j+1] != '_' {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(rest[:j]), 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), i + 4 + j + 1, true
}
