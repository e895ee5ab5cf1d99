package perftext

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/ingest/perfdata"
)

const dir = "../../../testdata/perf"

func read(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// perfScriptText runs the real perf script on a recording.
func perfScriptText(t *testing.T, args ...string) []byte {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatalf("perf is not installed (package linux-perf): run make deps")
	}
	out, err := exec.Command(perf, append([]string{"script", "-f"}, args...)...).Output()
	if err != nil {
		t.Fatalf("perf script %v: %v", args, err)
	}
	return out
}

// stacks expands a profile into "labels|frame;frame..." keys counted by
// the value at index vi; frame renders one location.
func stacks(p *profile.Profile, vi int, labels bool, frame func(*profile.Location) string) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var fs []string
		for _, l := range s.Location {
			fs = append(fs, frame(l))
		}
		k := strings.Join(fs, ";")
		if labels {
			k = fmt.Sprintf("%v %v|%s", s.Label["comm"], s.NumLabel["tid"], k)
		}
		out[k] += s.Value[vi]
	}
	return out
}

func relFrame(l *profile.Location) string {
	if l.Mapping == nil {
		return fmt.Sprintf("?:%x", l.Address)
	}
	return fmt.Sprintf("%s:%x", l.Mapping.File, l.Address-l.Mapping.Start+l.Mapping.Offset)
}

func textFrame(l *profile.Location) string {
	if l.Mapping == nil {
		return fmt.Sprintf("?:%x", l.Address)
	}
	return fmt.Sprintf("%s:%x", l.Mapping.File, l.Address)
}

func diff(t *testing.T, want, got map[string]int64) {
	t.Helper()
	n := 0
	for k, v := range want {
		if got[k] != v && n < 5 {
			n++
			t.Errorf("want %d× %s, got %d", v, k, got[k])
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && n < 10 {
			n++
			t.Errorf("got %d× %s, not wanted", v, k)
		}
	}
}

// TestScriptMatchesPerfData reads perf script's text for each recording and
// checks that it yields the same threads, stacks and counts as reading the
// perf.data itself, and that the frames carry perf's symbol names.
func TestScriptMatchesPerfData(t *testing.T) {
	for _, tc := range []struct{ file, fields string }{{"fp.data", ""}, {"multi.data", ""}, {"pipe.data", "+pid"}} {
		t.Run(tc.file+tc.fields, func(t *testing.T) {
			args := []string{"-i", filepath.Join(dir, tc.file)}
			if tc.fields != "" {
				args = append(args, "-F", tc.fields)
			}
			text := perfScriptText(t, args...)
			if !SniffScript(text[:min(len(text), 4096)]) {
				t.Fatal("SniffScript does not recognise perf script output")
			}
			p, err := ParseScript(text, 0)
			if err != nil {
				t.Fatal(err)
			}
			if w := sampling.Warnings(p); len(w) > 0 {
				t.Errorf("warnings on perf's own output: %v", w)
			}
			want := perfDataProfile(t, read(t, tc.file))
			if got, want := sampleTypes(p), sampleTypes(want); !slices.Equal(got, want) {
				t.Errorf("sample types %v, want %v", got, want)
			}
			for vi := range want.SampleType {
				diff(t, stacks(want, vi, true, relFrame), stacks(p, vi, true, textFrame))
			}
			if tc.fields == "+pid" {
				for _, s := range p.Sample {
					if len(s.NumLabel["pid"]) != 1 || s.NumLabel["pid"][0] <= 0 {
						t.Fatalf("-F +pid output gives no pid label: %v", s.NumLabel)
					}
				}
			}
			named := 0
			for _, l := range p.Location {
				if len(l.Line) == 1 && l.Line[0].Function.Name != "[unknown]" {
					named++
				}
			}
			if named == 0 {
				t.Error("no frame kept perf's symbol name")
			}
		})
	}
}

func sampleTypes(p *profile.Profile) []string {
	var s []string
	for _, st := range p.SampleType {
		s = append(s, st.Type+"/"+st.Unit)
	}
	return s
}

// TestScriptCheckedIn reads the checked-in perf script outputs (default
// fields and -F +pid) and checks sample totals against the text itself.
func TestScriptCheckedIn(t *testing.T) {
	for _, name := range []string{"fp.script", "pipe.pid.script"} {
		text := read(t, name)
		headers := 0
		for _, l := range strings.Split(string(text), "\n") {
			if l != "" && l[0] != '\t' && l[0] != '#' && strings.Contains(l, "-clock:") {
				headers++
			}
		}
		p, err := ParseScript(text, 0)
		if err != nil {
			t.Fatal(name, err)
		}
		var total int64
		for _, s := range p.Sample {
			total += s.Value[0]
		}
		if total != int64(headers) || headers == 0 {
			t.Errorf("%s: %d samples, the text has %d", name, total, headers)
		}
	}
}

func TestScriptWithoutCallchain(t *testing.T) {
	text := "            deep 27816   668.334305:    2000000  cpu-clock:      7f9e2e6b6aef __cos_fma+0x1f (/usr/lib/x86_64-linux-gnu/libm.so.6)\n" +
		"            deep 27816   668.334307:    2000000 task-clock:      7f9e2e6b6aef __cos_fma+0x1f (/usr/lib/x86_64-linux-gnu/libm.so.6)\n" +
		"kworker/0:1 H  12 [000]   668.334309:    2000000 cpu-clock:ppp:      ffffffff81000c82 asm_exc_page_fault+0x22 ([kernel.kallsyms])\n" +
		"            deep 27816 [001]   668.334310:          1 sched:sched_switch: prev_comm=deep prev_pid=27816 prev_prio=120 prev_state=R ==> next_comm=swapper/1\n"
	if !SniffScript([]byte(text)) {
		t.Fatal("not sniffed")
	}
	p, err := ParseScript([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleTypes(p); !slices.Equal(got, []string{"cpu-clock_count/count", "cpu-clock/nanoseconds", "task-clock_count/count", "task-clock/nanoseconds", "cpu-clock:ppp_count/count", "cpu-clock:ppp/nanoseconds", "sched:sched_switch_count/count", "sched:sched_switch/count"}) {
		t.Errorf("sample types %v", got)
	}
	// deep's cpu-clock and task-clock samples share a stack: one pprof sample, two value columns.
	if len(p.Sample) != 3 || p.Sample[0].Value[0] != 1 || p.Sample[0].Value[3] != 2000000 {
		t.Fatalf("samples %v, want deep's two events in one sample, the kworker's and the tracepoint's", p.Sample)
	}
	if tp := p.Sample[2]; tp.Value[6] != 1 || len(tp.Location) != 0 || len(sampling.Warnings(p)) != 0 {
		t.Errorf("tracepoint sample %v with %d frames; warnings %v", tp.Value, len(tp.Location), sampling.Warnings(p))
	}
	last := p.Sample[1]
	if last.Label["comm"][0] != "kworker/0:1 H" || last.NumLabel["tid"][0] != 12 {
		t.Errorf("comm with spaces: labels %v %v", last.Label, last.NumLabel)
	}
	if f := last.Location[0].Line[0].Function.Name; f != "asm_exc_page_fault" || last.Location[0].Mapping.File != "[kernel.kallsyms]" {
		t.Errorf("frame %s in %s", f, last.Location[0].Mapping.File)
	}
	if p.DurationNanos != 5000 {
		t.Errorf("duration %d ns, want 5000", p.DurationNanos)
	}
}

func TestScriptReportsBadLines(t *testing.T) {
	text := "deep 1 1.000000: 10 cpu-clock:\n\t  1000 main+0x4 (/bin/deep)\n\tnot a frame at all\n\n" +
		"garbage line\n" +
		"deep 1 1.000001: 10 cpu-clock:\n\t  1000 main+0x4 (/bin/deep)\n"
	p, err := ParseScript([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(sampling.Warnings(p), "\n")
	if !strings.Contains(w, "skipped 2 unreadable lines") || !strings.Contains(w, "line 3:") || !strings.Contains(w, "line 5:") {
		t.Errorf("warnings %q", w)
	}
	if p.Sample[0].Value[0] != 2 {
		t.Errorf("samples %v, want the two good ones merged", p.Sample[0].Value)
	}
	if _, err := ParseScript([]byte("hello\nworld\n"), 0); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("wholly unreadable input: err = %v", err)
	}
}

// TestFolded reads the checked-in folded stacks made from fp.data and
// checks them against the recording: total and leaf-most frames.
func TestFolded(t *testing.T) {
	text := read(t, "fp.folded")
	if !SniffFolded(text) {
		t.Fatal("not sniffed")
	}
	p, err := ParseFolded(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	var total, want int64
	for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		var n int64
		fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &n)
		want += n
	}
	for _, s := range p.Sample {
		total += s.Value[0]
		if root := s.Location[len(s.Location)-1].Line[0].Function.Name; root != "deep" {
			t.Errorf("root frame %q, want the comm deep", root)
		}
	}
	if total != want || total == 0 {
		t.Errorf("total %d, want %d", total, want)
	}
	if st := sampleTypes(p); !slices.Equal(st, []string{"samples/count"}) {
		t.Errorf("sample types %v", st)
	}
}

func TestFoldedDecimalsAndBadLines(t *testing.T) {
	text := "main;work;leaf 1.5\nmain;work 2\nthis line has no count\nmain;other 0.25\n"
	if !SniffFolded([]byte("main;work;leaf 1.5\nmain;work 2\n")) {
		t.Error("decimal folded not sniffed")
	}
	p, err := ParseFolded([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := stacks(p, 0, false, func(l *profile.Location) string { return l.Line[0].Function.Name })
	diff(t, map[string]int64{"leaf;work;main": 1500, "work;main": 2000, "other;main": 250}, got)
	if p.SampleType[0].Unit != "millicount" {
		t.Errorf("unit %q", p.SampleType[0].Unit)
	}
	if w := strings.Join(sampling.Warnings(p), ""); !strings.Contains(w, "skipped 1 unreadable line: line 3") {
		t.Errorf("warnings %q", w)
	}
	if _, err := ParseFolded([]byte("nothing here\n"), 0); err == nil {
		t.Error("wholly unreadable folded input parsed")
	}
}

// TestJSONMatchesPerfData reads perf data convert --to-json output of
// fp.data and checks its stacks (DSO base name + absolute address) against
// the recording read natively.
func TestJSONMatchesPerfData(t *testing.T) {
	text := read(t, "fp.json")
	if !SniffJSON(text[:4096]) {
		t.Fatal("not sniffed")
	}
	p, err := ParseJSON(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := perfDataProfile(t, read(t, "fp.data"))
	frame := func(l *profile.Location) string {
		if l.Mapping == nil {
			return fmt.Sprintf("%x", l.Address)
		}
		return fmt.Sprintf("%s:%x", path.Base(l.Mapping.File), l.Address)
	}
	// The event and its period come from the recorded command line
	// (-e cpu-clock -F 500): the same types and values as the perf.data.
	if got, want := sampleTypes(p), sampleTypes(want); !slices.Equal(got, want) {
		t.Errorf("sample types %v, want %v", got, want)
	}
	for vi := range want.SampleType {
		diff(t, stacks(want, vi, true, frame), stacks(p, vi, true, frame))
	}
	if !strings.Contains(strings.Join(p.Comments, "\n"), "hostname: ") || p.TimeNanos == 0 {
		t.Errorf("comments %v, time %d", p.Comments, p.TimeNanos)
	}
}

func TestRecordEvent(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		event  string
		period int64
	}{
		{"/usr/bin/perf record -q -e cpu-clock -F 500 -g -o fp.data ./deep 0.2", "cpu-clock", 2000000},
		{"perf record -e task-clock ./a.out -F 10", "task-clock", 250000},
		{"perf record --event=cycles -c 100003 -- ./a.out", "cycles", 100003},
		{"perf record -ecycles:u -F999 ./a.out", "cycles:u", 0},
		{"perf record -e cpu-clock -F max ./a.out", "cpu-clock", 0},
		{"perf record -e cycles,instructions ./a.out", "", 0},
		{"perf record -g ./a.out", "", 0},
	} {
		e, p, _ := recordEvent(strings.Fields(tc.cmd))
		if e != tc.event || p != tc.period {
			t.Errorf("%s: event %q period %d, want %q %d", tc.cmd, e, p, tc.event, tc.period)
		}
	}
}

func TestJSONReportsBadSamples(t *testing.T) {
	text := `{"linux-perf-json-version": 1, "samples": [
		{"pid": 1, "tid": 1, "comm": "a", "callchain": [{"ip": "0x10", "symbol": "f", "dso": "a.out"}]},
		{"pid": 1, "tid": 1, "comm": "a", "callchain": [{"ip": "zz"}]},
		{"pid": "x"}]}`
	p, err := ParseJSON([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(sampling.Warnings(p), ""); !strings.Contains(w, "skipped 2 unreadable samples: sample 1") {
		t.Errorf("warnings %q", w)
	}
	if _, err := ParseJSON([]byte(`{"linux-perf-json-version": 1, "samples": [`), 0); err == nil {
		t.Error("truncated JSON parsed")
	}
}

// TestScriptInlined reads perf script's output for the DWARF-mode recording,
// where perf prints "(inlined)" frames, and checks they become the inline
// lines of the location they were inlined into.
func TestScriptInlined(t *testing.T) {
	text := perfScriptText(t, "-i", filepath.Join(dir, "dwarf.data"))
	if !strings.Contains(string(text), "(inlined)") {
		t.Fatal("perf script printed no inlined frames for dwarf.data")
	}
	p, err := ParseScript(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w := sampling.Warnings(p); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	found := false
	for _, l := range p.Location {
		if l.Mapping != nil && l.Mapping.File == "inlined" {
			t.Errorf("an (inlined) frame became a mapping")
		}
		if len(l.Line) == 2 && l.Line[0].Function.Name == "libc_feholdsetround_sse_ctx" && l.Line[1].Function.Name == "__cos_fma" {
			found = true
		}
	}
	if !found {
		t.Error("no location holds libc_feholdsetround_sse_ctx inlined into __cos_fma")
	}
}

// TestScriptFieldSets runs perf script with field sets that keep ip and sym
// (perf 6.1's own -F comm,pid,event,ip,sym,dso, no time, no event, no
// comm, headerless ip,sym, +srcline) on recordings with and without call
// chains, and checks each yields the stacks (by address) and counts of the
// default output, with the labels and the period where the fields have them.
func TestScriptFieldSets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs perf script 28 times: make test runs it")
	}
	addrFrame := func(l *profile.Location) string { return fmt.Sprintf("%x", l.Address) }
	for _, file := range []string{"fp.data", "flat.data"} {
		ref, err := ParseScript(perfScriptText(t, "-i", filepath.Join(dir, file)), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, fields := range []string{
			"comm,pid,event,ip,sym,dso", "comm,tid,ip,sym,dso", "tid,period,event,ip,sym,dso",
			"event,ip,sym", "comm,tid,time,ip,sym", "ip,sym", "ip,sym,dso", "+srcline", "comm,pid,tid,time,period,event,ip,sym,dso", "comm,tid,ip,sym,dso,period", "ip,sym,period", "tid,ip,sym", "comm,ip,sym",
		} {
			t.Run(file+"/"+fields, func(t *testing.T) {
				text := perfScriptText(t, "-i", filepath.Join(dir, file), "-F", fields)
				if !SniffScript(text[:min(len(text), 4096)]) {
					t.Error("not sniffed as perf script")
				}
				p, err := ParseScript(text, 0)
				if err != nil {
					t.Fatal(err)
				}
				if w := sampling.Warnings(p); len(w) > 0 {
					t.Errorf("warnings on perf's own output: %v", w)
				}
				diff(t, stacks(ref, 0, false, addrFrame), stacks(p, 0, false, addrFrame))
				hasPeriod := strings.Contains(fields, "period") || fields == "+srcline"
				if got := len(p.SampleType); hasPeriod && got != 2 || !hasPeriod && got != 1 {
					t.Errorf("sample types %v", sampleTypes(p))
				}
				if hasPeriod {
					diff(t, stacks(ref, 1, false, addrFrame), stacks(p, 1, false, addrFrame))
				} else if p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" {
					t.Errorf("no period column: sample types %v, want samples/count", sampleTypes(p))
				}
				if strings.Contains(fields, "comm") && strings.Contains(fields, "id") || fields == "+srcline" {
					diff(t, stacks(ref, 0, true, addrFrame), stacks(p, 0, true, addrFrame))
				}
			})
		}
	}
}

// TestTextDemangled checks that mangled C++ and Rust (legacy and v0) names
// are demangled in every text format, and keep their raw form as the
// function's system name.
func TestTextDemangled(t *testing.T) {
	const (
		cpp     = "_ZNSt6vectorIiSaIiEE9push_backERKi"
		rustOld = "_ZN4core3ptr13drop_in_place17h4c8f9b1a2e6d7f30E"
		rustV0  = "_RNvNtCs1234_7mycrate3foo3bar"
	)
	script := "app 1 1.0: 1 cpu-clock:\n\t1000 " + cpp + "+0x10 (/bin/app)\n\t2000 " + rustOld + " (/bin/app)\n\t3000 " + rustV0 + " (/bin/app)\n\n"
	foldedText := rustV0 + ";" + rustOld + ";" + cpp + " 3\n"
	jsonText := `{"linux-perf-json-version":1,"samples":[{"pid":1,"tid":1,"comm":"app","callchain":[{"ip":"0x1000","symbol":"` + cpp + `","dso":"app"},{"ip":"0x2000","symbol":"` + rustOld + `","dso":"app"},{"ip":"0x3000","symbol":"` + rustV0 + `","dso":"app"}]}]}`
	for name, parse := range map[string]func() (*profile.Profile, error){
		"script": func() (*profile.Profile, error) { return ParseScript([]byte(script), 0) },
		"folded": func() (*profile.Profile, error) { return ParseFolded([]byte(foldedText), 0) },
		"json":   func() (*profile.Profile, error) { return ParseJSON([]byte(jsonText), 0) },
	} {
		p, err := parse()
		if err != nil {
			t.Fatal(name, err)
		}
		got := map[string]string{}
		for _, f := range p.Function {
			got[f.SystemName] = f.Name
		}
		for raw, want := range map[string]string{cpp: "std::vector<int, std::allocator<int> >::push_back", rustOld: "core::ptr::drop_in_place", rustV0: "mycrate::foo::bar"} {
			if got[raw] != want {
				t.Errorf("%s: %s demangled to %q, want %q", name, raw, got[raw], want)
			}
		}
	}
}

// TestTextLongLine checks that a line over MaxLine is refused with its
// number and the limit, as a limit error, not as an unreadable input.
func TestTextLongLine(t *testing.T) {
	long := "a;b 1\n" + strings.Repeat("frame;", 10<<20/6) + "leaf 1\n"
	for name, parse := range map[string]func([]byte, int) (*profile.Profile, error){"folded": ParseFolded, "script": ParseScript} {
		_, err := parse([]byte(long), 0)
		if !errors.Is(err, ErrLimit) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("line 2 is longer than the %d-byte limit", MaxLine)) {
			t.Errorf("%s: error %v", name, err)
		}
	}
	if !SniffFolded([]byte(long[6:])[:4096]) {
		t.Error("a folded stack longer than the sniffed head is not claimed")
	}
}

// TestFoldedEncodings checks UTF-8 with a BOM, UTF-16 LE and BE with a BOM,
// CRLF and both comment styles.
func TestFoldedEncodings(t *testing.T) {
	text := "# a comment\r\n// another\r\nmain;héllo 2\r\nmain 1\r\n"
	utf16 := func(be bool) []byte {
		var b []byte
		if be {
			b = []byte{0xfe, 0xff}
		} else {
			b = []byte{0xff, 0xfe}
		}
		for _, r := range text {
			hi, lo := byte(r>>8), byte(r)
			if be {
				b = append(b, hi, lo)
			} else {
				b = append(b, lo, hi)
			}
		}
		return b
	}
	for name, in := range map[string][]byte{"utf8": []byte(text), "utf8 bom": append([]byte{0xef, 0xbb, 0xbf}, text...), "utf16le": utf16(false), "utf16be": utf16(true)} {
		if !SniffFolded(in) {
			t.Errorf("%s: not sniffed", name)
		}
		p, err := ParseFolded(in, 0)
		if err != nil {
			t.Fatal(name, err)
		}
		got := stacks(p, 0, false, func(l *profile.Location) string { return l.Line[0].Function.Name })
		diff(t, map[string]int64{"héllo;main": 2, "main": 1}, got)
		if w := sampling.Warnings(p); len(w) > 0 {
			t.Errorf("%s: warnings %v", name, w)
		}
	}
}

// TestScriptStopsOnGarbage checks that a perf script whose lines are mostly
// unreadable is not read to its end, and says where it stopped.
func TestScriptStopsOnGarbage(t *testing.T) {
	text := "deep 1 1.000000: 10 cpu-clock:\n\t  1000 main+0x4 (/bin/deep)\n\n" + strings.Repeat("%% not perf output\n", 5000)
	p, err := ParseScript([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(sampling.Warnings(p), "\n")
	if !strings.Contains(w, "stopped reading at line 1005:") || !strings.Contains(w, "skipped 1001 unreadable lines") {
		t.Errorf("warnings %q", w)
	}
	if _, err := ParseScript([]byte(strings.Repeat("%% not perf output\n", 5000)), 0); err == nil || !strings.Contains(err.Error(), "1001 unreadable lines") {
		t.Errorf("all garbage: %v", err)
	}
}

// perfDataProfile converts a perf.data straight to a profile, without
// ingest's limits: what perf.data's own converter makes of it.
func perfDataProfile(t *testing.T, data []byte) *profile.Profile {
	t.Helper()
	f, err := perfdata.Scan(data, perfdata.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := perfdata.Convert(f, perfdata.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScriptEventModifiers: an event recorded with modifiers in slashes
// (perf record -e cpu-clock/freq=997/) keeps its clock's unit; its
// samples were counted as events, not nanoseconds.
func TestScriptEventModifiers(t *testing.T) {
	text := "              mt 4242   10.000001:    1003009 cpu-clock/freq=997/:      401136 spin+0x16 (/tmp/mt)\n" +
		"              mt 4242   10.000002:         20 page-faults/period=20/:      401150 touch+0x10 (/tmp/mt)\n"
	p, err := ParseScript([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cpu-clock/freq=997/_count/count", "cpu-clock/freq=997//nanoseconds", "page-faults/period=20/_count/count", "page-faults/period=20//count"}
	if got := sampleTypes(p); !slices.Equal(got, want) {
		t.Errorf("sample types %v, want %v", got, want)
	}
}

// TestJSONSeveralEventsWarned: perf JSON (perf 6.1) says no sample's
// event, so a recording of two events (-e cpu-clock,page-faults) is read
// as one "samples" type, with a warning naming the events and what to
// upload instead; it was read so silently.
func TestJSONSeveralEventsWarned(t *testing.T) {
	text := `{"linux-perf-json-version": 1, "headers": {"cmdline": ["/usr/bin/perf", "record", "-e", "cpu-clock,page-faults", "-F", "1000", "./mt"]}, "samples": [
		{"pid": 1, "tid": 1, "comm": "mt", "callchain": [{"ip": "0x10", "symbol": "spin", "dso": "mt"}]},
		{"pid": 1, "tid": 1, "comm": "mt", "callchain": [{"ip": "0x20", "symbol": "touch", "dso": "mt"}]}]}`
	p, err := ParseJSON([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleTypes(p); !slices.Contains(got, "samples/count") {
		t.Errorf("sample types %v, want samples", got)
	}
	want := "warning: the recording had 2 events (cpu-clock, page-faults)"
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, want) || !strings.Contains(cm, "perf.data") {
		t.Errorf("comments lack %q:\n%s", want, cm)
	}
}

// TestScriptUnknownSrcline: perf script -F +srcline prints "  :0" under a
// frame whose source it does not know; that is a source line, not an
// unreadable one.
func TestScriptUnknownSrcline(t *testing.T) {
	text := "app 10 1.000000:    1000000 cpu-clock: \n" +
		"\t    401136 spin+0x16 (/tmp/app)\n  app.c:12\n" +
		"\t7f0000001000 __libc_start_call_main+0x80 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n  :0\n\n"
	p, err := ParseScript([]byte(text), 0)
	if err != nil {
		t.Fatal(err)
	}
	if w := sampling.Warnings(p); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	if len(p.Sample) != 1 || len(p.Sample[0].Location) != 2 {
		t.Fatalf("samples %v, want one of two frames", p.Sample)
	}
}
