package papyrus

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize/sampling"
)

// corpus is speedscope's Papyrus samples (testdata/peers/speedscope-formats).
const corpus = "../../../testdata/peers/speedscope-formats/sample/profiles/papyrus"

// TestScriptLogTimes checks the weights and times of a script profile:
// each stack weighs the milliseconds its functions ran (speedscope's
// reading: STACK 3947;exampleFunction5 750 ms of the log's 3000), and the
// samples keep when they ran: exampleFunction6 ran from 1750 to 2000 ms
// after the first line.
func TestScriptLogTimes(t *testing.T) {
	f, err := os.Open(filepath.Join(corpus, "script.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			names = append(names, s.Location[i].Line[0].Function.Name)
		}
		st := strings.Join(names, ";")
		got[st] += s.Value[0]
		total += s.Value[0]
		if strings.HasSuffix(st, "exampleFunction6") {
			if at := s.NumLabel[sampling.TimeLabel]; len(at) != 1 || at[0] < 1750e6 || at[0] >= 2000e6 {
				t.Errorf("exampleFunction6 at %v; want between 1750 and 2000 ms", at)
			}
		}
	}
	if total != 2750e6 {
		t.Errorf("total %d ns; want the 2750 ms some function ran", total)
	}
	if w := got["STACK 3947;abc_example_quest..exampleFunction5"]; w != 750e6 {
		t.Errorf("exampleFunction5 weighs %d ns itself; want 750 ms", w)
	}
}

// TestBadInput checks the errors for logs that cannot be read.
func TestBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"Script_a log opened (PC)\nLog closed\n":                                "no events",
		"Script_a log opened (PC)\nx:PUSH:1:1:None:a..f\n":                      "TIME:EVENT:STACK",
		"Script_a log opened (PC)\n5:PUSH:1:1:None:a..f\n5:POP:1:1:None:a..f\n": "no function that ran",
	} {
		if _, err := Parse(strings.NewReader(in), Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", in, err, want)
		}
	}
	deep := "Script_a log opened (PC)\n" + strings.Repeat("1:PUSH:1:1:None:a..f\n", 10)
	if _, err := Parse(strings.NewReader(deep), Options{MaxStackDepth: 5}); !errors.Is(err, ErrLimit) {
		t.Errorf("10 functions open at once with a limit of 5: %v; want ErrLimit", err)
	}
}
