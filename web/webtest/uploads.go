package webtest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web"
	"viewer/web/ingest/otlptest"
)

// UploadAPI posts a profile to /api/profiles (with an optional query) and
// returns its ID.
func UploadAPI(t testing.TB, base, query string, data []byte) string {
	t.Helper()
	resp, err := http.Post(base+"/api/profiles"+query, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&r) != nil {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload: %s %s", resp.Status, body)
	}
	return r.ID
}

// PostProfile uploads data as the form does (multipart, file name name) and
// returns the new profile's ID.
func PostProfile(t testing.TB, base, name string, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, _ := w.CreateFormFile("file", name)
	fw.Write(data)
	w.Close()
	resp, err := http.Post(base+"/api/profiles", w.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.ID == "" {
		t.Fatalf("upload %s: status %d, %v", name, resp.StatusCode, err)
	}
	return r.ID
}

// GetToken GETs u with the bearer token (none when empty).
func GetToken(t testing.TB, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return SendToken(t, req, token)
}

// SendToken sends req with the bearer token (none when empty) and returns
// the answer's status and body.
func SendToken(t testing.TB, req *http.Request, token string) (int, string) {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// SendService posts one eBPF-like profile of n samples (its time seed
// seconds after the epoch) as service svc over OTLP and returns its ID.
func SendService(t testing.TB, base, svc string, n, seed int) string {
	t.Helper()
	body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(n, seed), map[string]string{"service.name": svc, "host.name": "h"})).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+web.OTLPPath, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Viewer-Profiles")
	if resp.StatusCode != 200 || id == "" || strings.Contains(id, ",") {
		t.Fatalf("OTLP: %s, profiles %q", resp.Status, id)
	}
	return id
}

// UploadDebugFile sends path as viewer upload-debuginfo does (multipart
// POST /api/debuginfo) and checks it was stored.
func UploadDebugFile(t testing.TB, base, path string) {
	t.Helper()
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", filepath.Base(path))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	mw.Close()
	resp, err := http.Post(base+"/api/debuginfo", mw.FormDataContentType(), &mb)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload of the debug file: %d %s", resp.StatusCode, body)
	}
}
