package ingest

// The perf formats. (filled in by the perf inputs work)
var (
	perfDataFormat   = Format{Name: "perf.data", Sniff: func([]byte) bool { return false }}
	perfJSONFormat   = Format{Name: "perf JSON", Sniff: func([]byte) bool { return false }}
	perfScriptFormat = Format{Name: "perf script", Sniff: func([]byte) bool { return false }}
	foldedFormat     = Format{Name: "folded stacks", Sniff: func([]byte) bool { return false }}
)
