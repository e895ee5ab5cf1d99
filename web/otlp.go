package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"viewer/web/ingest"
	"viewer/web/ondemand"
	"viewer/web/profiles"
	"viewer/web/store"
)

// OTLPPath is the OTLP/HTTP path of the profiles signal (development).
const OTLPPath = "/v1development/profiles"

// OTLP/HTTP content types.
const (
	otlpProtobuf = "application/x-protobuf"
	otlpJSON     = "application/json"
)

// handleOTLP takes an OTLP profiles export request, stores each of its
// profiles as a viewer profile (queued for symbolization like any upload)
// and answers with an ExportProfilesServiceResponse in the request's
// encoding: partial success when some profiles were rejected. The IDs of
// the stored profiles are listed in the X-Viewer-Profiles header (the
// first 2 KiB of them: listedProfiles), their number in
// X-Viewer-Profiles-Count.
func (s *Server) handleOTLP(c echo.Context) error {
	req := c.Request()
	asJSON, err := otlpEncoding(req)
	if err != nil {
		return err
	}
	if err := pprofileotlp.ValidateDevelopmentVersion(req.Header.Values(pprofileotlp.DevelopmentVersionHeader)); err != nil {
		return httpError(http.StatusBadRequest, "%v", err)
	}
	if enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc != "" && enc != "gzip" && enc != "identity" {
		return httpError(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported; send the body as is or gzip-compressed", enc)
	}
	max := s.cfg.MaxUpload
	if req.ContentLength > max {
		return tooLarge(max)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, max)
	ctx := req.Context()
	res, parsed, done, err := s.parseOTLPBody(c, asJSON)
	if err != nil {
		return err
	}
	defer done()
	// The profiles are encoded while the parse slot is held (CPU work)
	// and stored once it is handed back: a slot held through the store's
	// syncs left the CPU idle while other requests waited for one.
	gz := make([]*bytes.Buffer, len(res.Profiles))
	encErr := make([]error, len(res.Profiles))
	for i, op := range res.Profiles {
		gz[i] = otlpBufs.Get().(*bytes.Buffer)
		encErr[i] = profiles.WriteGzipped(gz[i], op.Profile)
	}
	defer func() {
		for _, b := range gz {
			if b.Cap() <= maxPooledOTLP {
				b.Reset()
				otlpBufs.Put(b)
			}
		}
	}()
	parsed()
	var ids []string
	for i, op := range res.Profiles {
		id, err := "", encErr[i]
		if err == nil {
			id, err = s.storeOTLP(ctx, op, gz[i].Bytes())
		}
		if err != nil {
			if errors.Is(err, ingest.ErrBusy) || ctx.Err() != nil {
				return httpStatusError(err)
			}
			if storageFailed(err) {
				// Retryable, never a partial success (which exporters
				// drop): the client sends the request again later,
				// profiles stored already being stored once (by digest).
				s.log.Error("OTLP profiles not stored: the store failed; the client is told to retry", "request_id", reqID(c), "err", err)
				c.Response().Header().Set("Retry-After", strconv.Itoa(int(OTLPStorageRetry/time.Second)))
				why := "the server's store is unavailable"
				if diskFull(err) {
					why = "the server's disk is full"
				}
				return httpError(http.StatusServiceUnavailable, "%s, so the profiles were not stored; retry in %v", why, OTLPStorageRetry)
			}
			res.Rejected++
			res.Reasons = append(res.Reasons, ErrorMessage(err))
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) > 0 {
		h := c.Response().Header()
		h.Set("X-Viewer-Profiles", listedProfiles(ids))
		h.Set("X-Viewer-Profiles-Count", strconv.Itoa(len(ids)))
	}
	resp := pprofileotlp.NewExportResponse()
	if res.Rejected > 0 {
		resp.PartialSuccess().SetRejectedProfiles(int64(res.Rejected))
		resp.PartialSuccess().SetErrorMessage(res.Message())
	}
	if asJSON {
		b, err := resp.MarshalJSON()
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, otlpJSON, b)
	}
	b, err := resp.MarshalProto()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, otlpProtobuf, b)
}

// otlpListedBytes bounds the IDs the X-Viewer-Profiles header lists: a
// request may store --max-otlp-profiles profiles (10,000 IDs were a
// 210 KB header, which proxies refuse: nginx's default proxy_buffer_size,
// a 4 KiB page, must hold the whole header of a response).
const otlpListedBytes = 2 << 10

// listedProfiles is the X-Viewer-Profiles header: the stored profiles'
// IDs, comma-separated, as many of the first as otlpListedBytes holds;
// X-Viewer-Profiles-Count says how many were stored, and the services
// page lists them all by their resources' service.
func listedProfiles(ids []string) string {
	n := 0
	for i, id := range ids {
		if n += len(id) + min(i, 1); n > otlpListedBytes {
			return strings.Join(ids[:i], ",")
		}
	}
	return strings.Join(ids, ",")
}

// OTLPStorageRetry is the Retry-After of an OTLP request the store could
// not take (a full disk, a bucket down): OTLP/HTTP retries 503 after it.
const OTLPStorageRetry = 10 * time.Second

// storageFailed reports whether err is the store's failure rather than
// the profile's: the disk full, or the object store unavailable.
func storageFailed(err error) bool {
	return diskFull(err) || errors.Is(err, store.ErrUnavailable)
}

// parseOTLPBody reads the request's body, then waits for its turn
// (otlpQueue: done ends it) and converts its profiles, holding an upload
// slot. A body of a known length up to ingest.OTLPInMemory, not
// gzipped, is read into memory within the ingest memory budget: parsed
// hands the slot back once the profiles are encoded, and done gives the
// memory back once they are stored, so that the profiles waiting for the
// store stay within the budget. Any other body is spooled to a file first,
// as uploads are, and keeps its slot until done.
func (s *Server) parseOTLPBody(c echo.Context, asJSON bool) (res *ingest.OTLPResult, parsed, done func(), err error) {
	req, max := c.Request(), s.cfg.MaxUpload
	ctx := req.Context()
	var body io.Reader = req.Body
	spooled := func() {}
	if n := req.ContentLength; n > 0 && n <= min(max, ingest.OTLPInMemory) && req.Header.Get("Content-Encoding") == "" {
		data, give, err := ingest.ReadOTLP(ctx, req.Body, n, s.limits)
		if errors.Is(err, ingest.ErrBusy) || errors.Is(err, ingest.ErrTooLarge) || errors.Is(err, ingest.ErrCorrupt) {
			return nil, nil, nil, httpStatusError(err)
		}
		if err != nil {
			return nil, nil, nil, readError(err, max)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			end, err := s.otlp.turn(c)
			if err != nil {
				give()
				return nil, nil, nil, err
			}
			release, err := holdSlot(c)
			if err != nil {
				end()
				give()
				return nil, nil, nil, err
			}
			if res, err = ingest.ParseOTLP(ctx, data, asJSON, s.limits); err != nil {
				release()
				end()
				give()
				return nil, nil, nil, httpStatusError(err)
			}
			once := sync.OnceFunc(release)
			return res, once, func() {
				once()
				end()
				res.Release()
				give()
			}, nil
		}
		// gzip sent without its Content-Encoding: inflated from a file,
		// and data's buffer given back once it is spooled.
		body, spooled = bytes.NewReader(data), give
	}
	sp, err := s.spool(body, max)
	spooled()
	if err != nil {
		return nil, nil, nil, err
	}
	defer sp.remove()
	end, err := s.otlp.turn(c)
	if err != nil {
		return nil, nil, nil, err
	}
	release, err := holdSlot(c)
	if err != nil {
		end()
		return nil, nil, nil, err
	}
	if res, err = ingest.ParseOTLPFile(ctx, sp.f, asJSON, s.limits); err != nil {
		release()
		end()
		return nil, nil, nil, httpStatusError(err)
	}
	return res, func() {}, func() {
		release()
		end()
		res.Release()
	}, nil
}

// storeOTLP stores one converted OTLP profile, gz its gzipped pprof
// (profiles.WriteGzipped), named by its resource and listed under its
// service (serviceIndex, written with it), and queues its symbolization. It is stored once, as the converted copy every load
// reads (no second encoding of the same profile), and not parsed again.
func (s *Server) storeOTLP(ctx context.Context, op ingest.OTLPProfile, gz []byte) (string, error) {
	name := op.Title
	if name == "" {
		name = "OTLP profile"
	}
	id, err := s.afterUpload(s.prof.StoreParsed(ctx, op.Profile, gz, name, "OTLP profiles", serviceIndex(op)))
	if err != nil {
		return "", err
	}
	if err := s.QueueSymbolization(ctx, id, false); err != nil {
		// The OTLP client is not told (its profile is stored): a full
		// queue leaves the profile to be symbolized when it is opened.
		var full *ondemand.QueueFullError
		if errors.As(err, &full) {
			s.log.Warn("an OTLP profile is stored unsymbolized: the symbolization queue is full (--queue); opening its page queues it", "id", id)
		} else {
			s.log.Warn("queueing symbolization of an OTLP profile", "id", id, "err", err)
		}
	}
	return id, nil
}

// otlpBufs keep handleOTLP's buffers of gzipped pprof, which the store
// has written when StoreParsed returns, up to maxPooledOTLP bytes each: a
// large merge's is not kept.
var otlpBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledOTLP = 4 << 20

// otlpEncoding reads the request's Content-Type: protobuf or JSON, as
// OTLP/HTTP allows; anything else is 415.
func otlpEncoding(r *http.Request) (asJSON bool, err error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	switch mt {
	case otlpProtobuf:
		return false, nil
	case otlpJSON:
		return true, nil
	}
	return false, httpError(http.StatusUnsupportedMediaType,
		"Content-Type %q is not an OTLP encoding; send %s or %s", mt, otlpProtobuf, otlpJSON)
}

// writeOTLPStatus answers a failed OTLP request as OTLP/HTTP asks: the
// status code, and a google.rpc.Status body in the request's encoding.
// 429, 502, 503 and 504 tell the client to retry (with Retry-After when
// the server set one).
func writeOTLPStatus(c echo.Context, status int, msg string) error {
	code := rpcCode(status)
	if asJSON, _ := otlpEncoding(c.Request()); asJSON {
		b, err := json.Marshal(struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{code, msg})
		if err != nil {
			return err
		}
		return c.Blob(status, otlpJSON, b)
	}
	var b []byte
	if code != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(code))
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, msg)
	return c.Blob(status, otlpProtobuf, b)
}

// rpcCode is the google.rpc.Code that an HTTP status stands for.
func rpcCode(status int) int {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		return 3 // INVALID_ARGUMENT
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusForbidden:
		return 7 // PERMISSION_DENIED
	case http.StatusNotFound:
		return 5 // NOT_FOUND
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusInsufficientStorage:
		return 8 // RESOURCE_EXHAUSTED
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return 14 // UNAVAILABLE
	}
	if status >= 500 {
		return 13 // INTERNAL
	}
	return 2 // UNKNOWN
}

// otlpEnabled is the route's guard: 404 naming the flag when --otlp is off.
func (s *Server) otlpEnabled(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.cfg.OTLP {
			return httpError(http.StatusNotFound, "this server does not take OTLP profiles; start it with viewer serve --otlp")
		}
		return next(c)
	}
}
