package ondemand

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/profiles"
	"viewer/web/store"
)

// TestOldOutcomeKernelRowsKeyed: an outcome stored before the kernel's rows
// were keyed by symbolize.BinaryKey (its bare build ID, or file: for a
// kernel without one) is read with the kernel's key, so a new run updates
// that row instead of adding a second one, and Skip by the page's key finds it.
func TestOldOutcomeKernelRowsKeyed(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := `{"done":true,"binaries":[
		{"key":"abcd","name":"[kernel.kallsyms]_text","file":"[kernel.kallsyms]_text","build_id":"abcd","state":"symbolized"},
		{"key":"file:[kernel.kallsyms]","name":"[kernel.kallsyms]","file":"[kernel.kallsyms]","state":"no symbols"},
		{"key":"1234","name":"libc.so.6","file":"/usr/lib/libc.so.6","build_id":"1234","state":"symbolized"}]}`
	if err := st.Put(ctx, profiles.Key("p1", profiles.KeyOutcome), bytes.NewReader([]byte(old))); err != nil {
		t.Fatal(err)
	}
	rec, _, err := ReadOutcome(ctx, st, "p1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		symbolize.BinaryKey(&profile.Mapping{File: "[kernel.kallsyms]_text", BuildID: "abcd"}),
		symbolize.BinaryKey(&profile.Mapping{File: "[kernel.kallsyms]"}),
		"1234",
	}
	if len(rec.Binaries) != len(want) {
		t.Fatalf("%d rows, want %d", len(rec.Binaries), len(want))
	}
	for i, b := range rec.Binaries {
		if b.Key != want[i] {
			t.Errorf("row %d (%s): key %q, want %q", i, b.File, b.Key, want[i])
		}
	}
	if want[0] != "kernel:abcd" {
		t.Errorf("the kernel's BinaryKey is %q, want kernel:abcd", want[0])
	}
}

// TestRecordStatusCounts: /p/ID/symbolization read from the stored record
// (after a restart, or on another replica) counts the binaries and gives
// the help of a binary without symbols, as the job's final event did; it
// said "resolved":0,"missed":0 with no help for every such profile.
func TestRecordStatusCounts(t *testing.T) {
	rec := Outcome{Done: true, Asked: []string{server}, Binaries: []Binary{
		{Key: "aa", Name: "app", BuildID: "aa", State: symbolize.StateNotFound, Reason: "stripped"},
		{Key: "bb", Name: "libc.so.6", BuildID: "bb", State: symbolize.StateSymbolized},
		{Key: "cc", Name: "libm.so.6", BuildID: "cc", State: symbolize.StateSymbolized},
	}}
	st := recordStatus(rec, []string{server})
	if st.State != RunDone || st.Resolved != 2 || st.Missed != 1 || !st.Debuginfod {
		t.Errorf("status %+v; want done, 2 resolved, 1 missed", st)
	}
	if st.Binaries[0].Help != NoSymbolsHelp || st.Binaries[1].Help != "" {
		t.Errorf("help %q, %q; want the next step for the binary without symbols only", st.Binaries[0].Help, st.Binaries[1].Help)
	}
	if rec.Binaries[0].Help != "" {
		t.Error("the record's rows were changed")
	}
}
