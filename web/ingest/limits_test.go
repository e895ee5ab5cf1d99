package ingest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestPerfDataRecordLimit checks a perf.data with more records than
// MaxRecords is refused as too large, naming the count and the flag.
func TestPerfDataRecordLimit(t *testing.T) {
	data, err := os.ReadFile("../../testdata/perf/flat.data")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Parse(data, Limits{MaxRecords: 1 << 20}); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
	_, _, err = Parse(data, Limits{MaxRecords: 5})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "records, over the limit of 5") || !strings.Contains(err.Error(), "--max-records") {
		t.Fatalf("over the limit: %v; want ErrTooLarge naming the count and --max-records", err)
	}
}
