package perftext

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

const peers = "../../../testdata/peers"

// collapsedPid reads a *.collapsed-pid.txt: "stack count" per line.
func collapsedPid(t *testing.T, file string) map[string]int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		i := strings.LastIndexByte(l, ' ')
		n, err := strconv.ParseInt(l[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", file, l)
		}
		out[unknownFrames(l[:i])] += n
	}
	return out
}

// unknownFrames names every frame of a folded stack that has no symbol
// "[unknown]": stackcollapse-perf.pl names perf's "addr  (dso)" " " and
// its "[unknown] (dso)" "[dso]"; viewer names both "[unknown]".
func unknownFrames(stack string) string {
	fs := strings.Split(stack, ";")
	for i, f := range fs {
		if strings.TrimSpace(f) == "" || strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			fs[i] = "[unknown]"
		}
	}
	return strings.Join(fs, ";")
}

var goMethod = regexp.MustCompile(`\.\(.*\)\.`)

// tidy names a frame as stackcollapse-perf.pl does by default (its
// $tidy_generic rules), from perf's raw symbol and DSO.
func tidy(sym, dso string) string {
	f := sym
	if f == "[unknown]" {
		if dso != "" && dso != "[unknown]" {
			return "[" + filepath.Base(dso) + "]"
		}
		return "[unknown]"
	}
	f = strings.ReplaceAll(f, ";", ":")
	if !goMethod.MatchString(f) {
		for i := 0; i < len(f); i++ {
			if f[i] == '(' && !strings.HasPrefix(f[i:], "(anonymous namespace)") {
				f = f[:i]
				break
			}
		}
	}
	// The references keep Java's leading "L" ($tidy_java's s/^L// was not
	// applied when they were made).
	return strings.NewReplacer(`"`, "", `'`, "").Replace(f)
}

// folded renders p's samples of value index vi as stackcollapse-perf.pl
// --pid would: "comm-pid;root;...;leaf".
func folded(p *profile.Profile, vi int) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if s.Value[vi] == 0 {
			continue
		}
		pid := "?"
		if v := s.NumLabel["pid"]; len(v) == 1 {
			pid = strconv.FormatInt(v[0], 10)
		}
		pname := strings.ReplaceAll(s.Label["comm"][0]+"-"+pid, " ", "_")
		fs := []string{pname}
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			dso := ""
			if l.Mapping != nil {
				dso = l.Mapping.File
			}
			for j := len(l.Line) - 1; j >= 0; j-- {
				if sym := l.Line[j].Function.SystemName; !strings.HasPrefix(sym, "(") {
					fs = append(fs, tidy(sym, dso))
				}
			}
		}
		out[unknownFrames(strings.Join(fs, ";"))] += s.Value[vi]
	}
	return out
}

// firstEvent is the value index stackcollapse-perf.pl sums: the first
// event's period, or its sample count when the input has no period.
func firstEvent(p *profile.Profile) int {
	if st := p.SampleType; len(st) > 1 && st[0].Type == st[1].Type+"_count" {
		return 1
	}
	return 0
}

// TestFlameGraphPerfInputs reads each perf script text of FlameGraph's test
// suite and checks the folded stacks and counts equal what
// stackcollapse-perf.pl --pid made of it (the *.collapsed-pid.txt beside
// it). stackcollapse-perf.pl drops a last sample with no blank line after
// it; viewer keeps it, which the test checks too.
func TestFlameGraphPerfInputs(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join(peers, "flamegraph", "perf-*[0-9a-z].txt"))
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".collapsed-pid.txt") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			text, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if !SniffScript(text[:min(len(text), 4096)]) {
				t.Error("not sniffed as perf script")
			}
			full, err := ParseScript(text, 0)
			if err != nil {
				t.Fatal(err)
			}
			if w := sampling.Warnings(full); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			terminated := text
			if !bytes.HasSuffix(bytes.TrimRight(text, " \t"), []byte("\n\n")) {
				terminated = text[:bytes.LastIndex(text, []byte("\n\n"))+2]
			}
			p, err := ParseScript(terminated, 0)
			if err != nil {
				t.Fatal(err)
			}
			vi := firstEvent(p)
			diff(t, collapsedPid(t, strings.TrimSuffix(in, ".txt")+".collapsed-pid.txt"), folded(p, vi))
			if len(terminated) < len(text) {
				var all, cut int64
				for _, s := range full.Sample {
					all += s.Value[0]
				}
				for _, s := range p.Sample {
					cut += s.Value[0]
				}
				if all != cut+1 {
					t.Errorf("the unterminated last sample: %d samples with it, %d without", all, cut)
				}
			}
		})
	}
	if n != 13 {
		t.Errorf("%d FlameGraph perf inputs, want 13", n)
	}
}

// blocks counts the samples of a perf script text independently of the
// parser: runs of non-blank, non-comment lines.
func blocks(text string) int64 {
	var n int64
	in := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.TrimSpace(l) == "":
			in = false
		case !in:
			in = true
			n++
		}
	}
	return n
}

// TestSpeedscopePerfInputs reads speedscope's perf script samples (with a
// header, with pid, forks, system-wide, Rust v0 mangled names) and checks
// the sample total against the text's own blocks, and that the mangled
// names were demangled.
func TestSpeedscopePerfInputs(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join(peers, "speedscope", "linux-perf-*.txt"))
	if len(inputs) != 7 {
		t.Fatalf("%d speedscope perf inputs, want 7", len(inputs))
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			text, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if !SniffScript(text[:min(len(text), 4096)]) {
				t.Error("not sniffed as perf script")
			}
			p, err := ParseScript(text, 0)
			if err != nil {
				t.Fatal(err)
			}
			if w := sampling.Warnings(p); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			var total int64
			for _, s := range p.Sample {
				for i, st := range p.SampleType {
					if st.Unit == "count" && (st.Type == "samples" || strings.HasSuffix(st.Type, "_count")) {
						total += s.Value[i]
					}
				}
			}
			if want := blocks(string(text)); total != want {
				t.Errorf("%d samples, the text has %d", total, want)
			}
			mangled := 0
			for _, f := range p.Function {
				if strings.HasPrefix(f.Name, "_R") || strings.HasPrefix(f.Name, "_ZN") {
					mangled++
				}
			}
			if mangled > 0 {
				t.Errorf("%d function names are still mangled", mangled)
			}
			if strings.Contains(in, "rust-mangled") {
				demangled := false
				for _, f := range p.Function {
					if f.Name != f.SystemName && strings.Contains(f.Name, "::") {
						demangled = true
					}
				}
				if !demangled {
					t.Error("no Rust name was demangled")
				}
			}
		})
	}
}

// utf8Text converts a UTF-16 file to UTF-8 with iconv, independently of
// DecodeText.
func utf8Text(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0xff, 0xfe}) && !bytes.HasPrefix(b, []byte{0xfe, 0xff}) {
		return string(b)
	}
	out, err := exec.Command("iconv", "-f", "UTF-16", "-t", "UTF-8", file).Output()
	if err != nil {
		t.Fatalf("iconv (package libc-bin): %v", err)
	}
	return string(out)
}

// TestSpeedscopeFolded reads speedscope's folded samples (CRLF, UTF-16 LE
// and BE with a BOM, comments and an invalid line, recursion, tall stacks)
// and compares stacks and counts with a plain reading of each line; lines
// that are not "stack count" are the warnings' count.
func TestSpeedscopeFolded(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join(peers, "speedscope", "stackcollapse-*.txt"))
	if len(inputs) != 9 {
		t.Fatalf("%d speedscope folded inputs, want 9", len(inputs))
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			want := map[string]int64{}
			invalid := 0
			for _, l := range strings.Split(utf8Text(t, in), "\n") {
				l = strings.TrimRight(l, "\r")
				if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") {
					continue
				}
				i := strings.LastIndexAny(l, " \t")
				n, err := strconv.ParseInt(l[i+1:], 10, 64)
				if i <= 0 || err != nil {
					invalid++
					continue
				}
				var fs []string
				for _, f := range strings.Split(l[:i], ";") {
					if f != "" {
						fs = append(fs, f)
					}
				}
				want[unknownFrames(strings.Join(fs, ";"))] += n
			}
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if !SniffFolded(data[:min(len(data), 4096)]) {
				t.Error("not sniffed as folded stacks")
			}
			p, err := ParseFolded(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, s := range p.Sample {
				var fs []string
				for i := len(s.Location) - 1; i >= 0; i-- {
					fs = append(fs, s.Location[i].Line[0].Function.Name)
				}
				got[unknownFrames(strings.Join(fs, ";"))] += s.Value[0]
			}
			diff(t, want, got)
			w := strings.Join(sampling.Warnings(p), "")
			if invalid > 0 && !strings.Contains(w, "skipped "+sampling.CountOf(invalid, "unreadable lines")) || invalid == 0 && w != "" {
				t.Errorf("%d invalid lines; warnings %q", invalid, w)
			}
		})
	}
}
