package ingest

// pprofFormat reads pprof protobuf. (filled in by the core work)
var pprofFormat = Format{Name: "pprof", Sniff: func([]byte) bool { return false }}
