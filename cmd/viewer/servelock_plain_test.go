package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSecondServerOnOneDataDir starts two real servers on one --data: the
// second exits at once with an error naming the first one's PID, and
// after the first is killed (-9) a new one starts on the directory.
func TestSecondServerOnOneDataDir(t *testing.T) {
	bin := buildViewer(t)
	data := t.TempDir()
	first := startViewer(t, nil, nil, bin, "--data", data)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--no-debuginfod", "--data", data)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=", "DEBUGINFOD_CACHE_PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the second server on %s kept running:\n%s", data, out)
	}
	if err == nil || strings.Contains(string(out), "serving http") {
		t.Fatalf("the second server on %s started (%v):\n%s", data, err, out)
	}
	want := fmt.Sprintf("another viewer (PID %d) already serves the data directory %s", first.cmd.Process.Pid, data)
	if !strings.Contains(string(out), want) {
		t.Errorf("the second server's error does not say %q:\n%s", want, out)
	}

	first.kill()
	third := startViewer(t, nil, nil, bin, "--data", data)
	if code, _ := fetch(t, third.base+"/healthz"); code != 200 {
		t.Errorf("the server started after the first was killed: /healthz %d", code)
	}
}
