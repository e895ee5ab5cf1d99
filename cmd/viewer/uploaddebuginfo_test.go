package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize/debuginfod"
)

// TestUploadDebuginfoCommand: viewer upload-debuginfo stores a stripped
// binary and its debug file by build ID (kinds from their contents), with
// their sources, through serve's token; a non-ELF file is named and refused
// while the others are stored; serve then answers the debuginfod protocol.
func TestUploadDebuginfoCommand(t *testing.T) {
	dir := "../../testdata/debuginfo"
	stripped, debugFile := filepath.Join(dir, "prog.stripped"), filepath.Join(dir, "prog.debug")
	bid, err := debuginfod.FileBuildID(stripped)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEBUGINFOD_URLS", "")
	base, _, _ := startServe(t, "--data", t.TempDir(), "--auth-token", "tok", "--debuginfod-serve", "token")
	var out, errOut bytes.Buffer
	notELF := filepath.Join(dir, "prog.c")
	err = runUploadDebuginfo(t.Context(), []string{stripped, debugFile, notELF, "--server", base}, stdio{out: &out, err: &errOut})
	if err == nil || !strings.Contains(errOut.String(), "uploads to this server need its token") {
		t.Errorf("upload without the token: %v, %s", err, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	err = runUploadDebuginfo(t.Context(), []string{stripped, debugFile, notELF, "--server", base, "--token", "tok"}, stdio{out: &out, err: &errOut})
	if err == nil || !strings.Contains(err.Error(), "1 of 3 files not stored") || !strings.Contains(errOut.String(), "prog.c") {
		t.Errorf("one non-ELF file: %v, %s", err, errOut.String())
	}
	for _, want := range []string{stripped + "\t" + bid + "\texecutable", debugFile + "\t" + bid + "\tdebuginfo"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	get := func(token string) (int, []byte) {
		req, _ := http.NewRequest("GET", base+"/buildid/"+bid+"/debuginfo", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("--debuginfod-serve=token read without the token: %d", code)
	}
	want, _ := os.ReadFile(debugFile)
	if code, b := get("tok"); code != 200 || !bytes.Equal(b, want) {
		t.Errorf("read with the token: %d, %d bytes", code, len(b))
	}
}
