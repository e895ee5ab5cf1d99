// Package ondemand runs on-demand symbolization of uploaded profiles: a bounded
// queue and a worker pool, one job per profile, each binary's state (found
// locally, being fetched from a debuginfod server, not found...) streamed to
// the page over server-sent events, Skip/Disable/Retry, and the symbolized
// profile stored next to the original so later visits serve it.
package ondemand

import (
	"path"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
)

// RunState is where a profile's job stands, the one set of values its
// Status, its lease record and the status endpoint use.
type RunState string

const (
	RunNone    RunState = "none"   // no job and no outcome stored
	RunQueued  RunState = "queued" // waiting for a worker
	RunRunning RunState = "running"
	RunDone    RunState = "done"
	// RunInterrupted: the server stopped mid-run (the outcome record holds
	// rows but is not done); opening the page or Retry resumes.
	RunInterrupted RunState = "interrupted"
	// RunAbandoned: the owner of a replicated job stopped before finishing
	// (shutdown, a full queue); another replica takes it over at once.
	RunAbandoned RunState = "abandoned"
)

// Active reports whether a job in state s is still to end.
func (s RunState) Active() bool { return s == RunQueued || s == RunRunning }

// Binary is one mapping's row in the page's symbolization panel and the
// payload of its "binary" events.
type Binary struct {
	Key     string          `json:"key"` // build ID, or "file:" + path when there is none
	Name    string          `json:"name"`
	File    string          `json:"file"`
	BuildID string          `json:"build_id"`
	State   symbolize.State `json:"state"`
	// Source is where the debug info came from (a local path or a server
	// URL), or the server it is being fetched from.
	Source string `json:"source,omitempty"`
	Server string `json:"server,omitempty"`
	Phase  string `json:"phase,omitempty"` // the fetch's phase while fetching
	Bytes  int64  `json:"bytes,omitempty"`
	Total  int64  `json:"total,omitempty"` // -1 when unknown
	Reason string `json:"reason,omitempty"`
	// Help is the next step for a binary with no symbols (NoSymbolsHelp,
	// symbolize.PerfMapHelp).
	Help string `json:"help,omitempty"`
}

// NoSymbolsHelp is the next step the panel gives for a binary left with no
// symbols.
const NoSymbolsHelp = "To name it: upload its debug file (viewer upload-debuginfo; names follow on their own), " +
	"or give the server its debug info: the unstripped binary at the path it was mapped from (read on loopback), " +
	"a --debug-dir directory, its -dbgsym (or -dbg) package installed, or a debuginfod server that has its build ID " +
	"(DEBUGINFOD_URLS, without --no-debuginfod or debuginfod=0); then press Retry."

// Progress is the payload of "progress" events, at most ten a second per
// fetch.
type Progress struct {
	Key     string `json:"key"`
	BuildID string `json:"build_id"`
	File    string `json:"file"`
	Server  string `json:"server"`
	Phase   string `json:"phase"`
	Bytes   int64  `json:"bytes"`
	Total   int64  `json:"total"`
}

// Status is the payload of the "job" event and of the final "symbolized"
// event: the job's own state and what the page says about debuginfod.
type Status struct {
	State RunState `json:"state"`
	// Debuginfod is false when this upload or the server said not to ask.
	Debuginfod bool `json:"debuginfod"`
	// Servers are the debuginfod servers build IDs may be sent to; Asked
	// the ones that were actually sent one by this job.
	Servers  []string `json:"servers"`
	Asked    []string `json:"asked"`
	Resolved int      `json:"resolved"`
	Missed   int      `json:"missed"`
	// Disabled is set once the user pressed Disable.
	Disabled bool   `json:"disabled,omitempty"`
	Error    string `json:"error,omitempty"`
	// Binaries is the final state of every binary, in the final event.
	Binaries []Binary `json:"binaries,omitempty"`
}

// unsymbolized returns the mappings that hold locations without names, in
// the profile's order, one per binary.
func unsymbolized(p *profile.Profile) []*profile.Mapping {
	need := map[*profile.Mapping]bool{}
	for _, l := range p.Location {
		if !symbolize.NeedsName(l) {
			continue
		}
		need[l.Mapping] = true
	}
	var ms []*profile.Mapping
	seen := map[string]bool{}
	for _, m := range p.Mapping {
		if !need[m] || seen[symbolize.BinaryKey(m)] {
			continue
		}
		seen[symbolize.BinaryKey(m)] = true
		ms = append(ms, m)
	}
	return ms
}

// binaryName is what the panel shows for a mapping's file.
func binaryName(file string) string {
	if file == "" {
		return "(anonymous)"
	}
	return path.Base(file)
}
