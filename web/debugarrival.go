package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// afterDebugUpload wraps the debug file upload handlers (PUT
// /buildid/ID/KIND, POST /api/debuginfo): once a file is stored, the
// symbolization service is told its build ID arrived, so profiles left
// without symbols for it are symbolized again (ondemand.Service.Arrived).
// The build IDs come from the URL (PUT) or from the upload's answer (POST:
// one file's build ID is read from its note).
func (s *Server) afterDebugUpload(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.sym == nil {
			return next(c)
		}
		var reply *boundedBuffer
		if c.Request().Method == http.MethodPost {
			reply = &boundedBuffer{max: 1 << 20}
			c.Response().Writer = &teeWriter{ResponseWriter: c.Response().Writer, copy: reply}
		}
		err := next(c)
		if err != nil || c.Response().Status >= 300 && c.Response().Status != http.StatusMultiStatus {
			return err
		}
		var ids []string
		if reply == nil {
			if k := c.Param("kind"); k == "debuginfo" || k == "executable" {
				ids = append(ids, c.Param("id"))
			}
		} else {
			var r struct {
				Results []struct {
					Stored []struct {
						BuildID string `json:"build_id"`
					} `json:"stored"`
				} `json:"results"`
			}
			if json.Unmarshal(reply.Bytes(), &r) == nil {
				for _, res := range r.Results {
					for _, st := range res.Stored {
						ids = append(ids, st.BuildID)
					}
				}
			}
		}
		for _, id := range ids {
			if q := s.sym.Arrived(id); len(q) > 0 {
				s.log.Info("debug file arrived: symbolizing again", "build_id", id, "profiles", q)
			}
		}
		return nil
	}
}

// teeWriter copies what a handler writes into copy.
type teeWriter struct {
	http.ResponseWriter
	copy *boundedBuffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.copy.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
