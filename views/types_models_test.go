package views

import (
	"strings"
	"testing"
)

func TestCollapsedMembers(t *testing.T) {
	// struct task { int pid; char comm[16]; struct { long a[2]; } s[1]; }
	rows := []MemberRow{
		{Field: "pid", Depth: 1, Accessed: true},
		{Field: "comm", Type: "char[16]", Depth: 1},
	}
	for i := range 16 {
		rows = append(rows, MemberRow{Field: "[" + string(rune('0'+i%10)) + "]", Depth: 2})
	}
	rows = append(rows,
		MemberRow{Field: "s", Depth: 1, Accessed: true},
		MemberRow{Field: "[0]", Depth: 2, Accessed: true},
		MemberRow{Field: "a", Depth: 3, Accessed: true},
		MemberRow{Field: "[0]", Depth: 4},
		MemberRow{Field: "[1]", Depth: 4, Accessed: true},
		MemberRow{Field: "next", Depth: 1},
	)
	var got []string
	for _, r := range collapsedMembers(rows) {
		got = append(got, strings.Repeat(".", r.Depth)+r.Field)
	}
	want := ".pid .comm .s ..[0] ...a ....[0] ....[1] .next"
	if strings.Join(got, " ") != want {
		t.Errorf("collapsed layout %q, want %q", strings.Join(got, " "), want)
	}
	if Plural(1, "reason") != "1 reason" || Plural(0, "reason") != "0 reasons" || Plural(2, "reason") != "2 reasons" {
		t.Error("plural")
	}
}
