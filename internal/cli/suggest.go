package cli

import (
	"strings"

	"github.com/spf13/pflag"
)

// DidYouMean is "; did you mean X?" for the one of options closest to got,
// or "" when none is close: cobra suggests misspelt commands this way (an
// edit distance of two, or a prefix), and flags and names deserve the same.
func DidYouMean(got string, options []string) string {
	if s := closest(got, options); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}

func closest(got string, options []string) string {
	got = strings.ToLower(got)
	best, bestD := "", 3
	for _, o := range options {
		lo := strings.ToLower(o)
		d := distance(got, lo)
		if len(got) >= 3 && strings.HasPrefix(lo, got) && d > 1 {
			d = 1 // a prefix of a long name: still the one meant
		}
		if d < bestD {
			best, bestD = o, d
		}
	}
	if got == "" || best == strings.ToLower(got) {
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// flagSuggestion is " (did you mean --X?)" for a flag of fs whose name is
// close to the misspelt name.
func flagSuggestion(fs *pflag.FlagSet, name string) string {
	if fs == nil {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := closest(name, names); s != "" {
		return " (did you mean --" + s + "?)"
	}
	return ""
}
