package sampling

import (
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// CallSiteMark is the profile comment that says its caller addresses are
// call sites already (symbolize.CallSites ran, or a reader wrote them so),
// so that a second pass, a re-upload of viewer's own output or a stored
// converted profile is not shifted again.
const CallSiteMark = "viewer: caller addresses are call sites"

// HasCallSites reports whether p carries CallSiteMark.
func HasCallSites(p *profile.Profile) bool { return slices.Contains(p.Comments, CallSiteMark) }

// CacheLineComment starts the profile comment that gives the recording
// machine's L1 data cache line size in bytes (perf's CACHE header feature).
const CacheLineComment = "cache line size: "

// WarningPrefix starts the profile comments that report what a reader
// skipped, cut or could not do ("warning: skipped 3 unreadable lines");
// every page of the profile shows them (Warnings).
const WarningPrefix = "warning: "

// CountOf is n and the plural noun phrase plural, made singular for one, as
// warnings count what they skipped: CountOf(1, "unreadable lines") is
// "1 unreadable line", CountOf(3, ...) "3 unreadable lines".
func CountOf(n int, plural string) string {
	if n == 1 {
		plural = strings.TrimSuffix(plural, "s")
	}
	return strconv.Itoa(n) + " " + plural
}

// Warnings returns p's WarningPrefix comments, without the prefix.
func Warnings(p *profile.Profile) []string {
	var w []string
	for _, c := range p.Comments {
		if rest, ok := strings.CutPrefix(c, WarningPrefix); ok {
			w = append(w, rest)
		}
	}
	return w
}

// TruncatedName is the name of the frame that stands for the n root-most
// frames cut from a stack deeper than the depth limit (--max-stack-depth):
// every reader that cuts a stack names what it cut alike.
func TruncatedName(n int) string { return "[truncated " + strconv.Itoa(n) + " frames]" }

// DeepStacksWarning is the warning of a profile whose stacks deeper than
// the depth-frame limit were cut (cut of them, the deepest of deepest
// frames), each to its leaf-most frames under a TruncatedName frame.
func DeepStacksWarning(cut, depth, deepest int) string {
	return WarningPrefix + strconv.Itoa(cut) + " stacks were deeper than the " + strconv.Itoa(depth) + "-frame limit (the deepest had " + strconv.Itoa(deepest) +
		" frames); each keeps its leaf-most frames under a \"[truncated N frames]\" frame (restart the server with a larger --max-stack-depth to see them whole)"
}
