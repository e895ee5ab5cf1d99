package views

// TimeOrderPage is the time-order view of a profile (/p/ID/time): per
// thread, each sample's stack over time, drawn by static/timeorder.js from
// DataURL (time.json) under the timeline (static/timeline.js), whose
// range is the view's.
type TimeOrderPage struct {
	Page
	ID          string
	Name        string // original file name, if known
	SampleTypes []SampleType
	// DataURL is time.json for the selected sample type and filters,
	// without t= and the width, which the script adds.
	DataURL string
	// TimelineURL is timeline.json for the selected sample type.
	TimelineURL string
	FlameURL    string // the flame graph of the same sample type, filters and range
	// Hidden carries the filters (f, i, h, s, t) over a change of sample type.
	Hidden []HiddenParam
}

// HiddenParam is a query parameter a form keeps.
type HiddenParam struct{ Name, Value string }

// NoTimesNote is what the time-order view says for a profile whose
// samples have no times.
const NoTimesNote = "This view needs sample times, and this profile's samples have none. " +
	"perf.data, perf script output with a time column (perf script -F comm,tid,time,ip,sym), " +
	"Chrome and V8 .cpuprofile files and traces, Firefox Profiler profiles, speedscope files, " +
	"JFR recordings and stackprof dumps keep them; pprof profiles (without a \"time\" label) and folded stacks do not."

// timeOrderTitle is the page heading: the file name, else the profile ID.
func timeOrderTitle(m TimeOrderPage) string {
	return flameTitle(FlamePage{ID: m.ID, Name: m.Name})
}

// timeOrderConfig is what static/timeorder.js reads from the
// "timeorder-config" JSON script element.
type timeOrderConfig struct {
	DataURL string `json:"dataURL"`
}
