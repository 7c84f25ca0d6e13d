// Package suggest finds the word a typo most likely meant, for "did you
// mean" hints on unknown commands, keys and values.
package suggest

import "strings"

// Closest returns the candidate nearest to word (case-insensitive edit
// distance, a swap of two neighbours counting as one edit), or "" when
// none is near enough to be a plausible typo.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	best, bestDist := "", 0
	for _, c := range candidates {
		d := distance(w, strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	// About one edit in three letters, at least one: "stauts" → "status",
	// "degub" → "debug", but "bogus" suggests nothing.
	if best == "" || bestDist > max(1, (len([]rune(w))+1)/3) || bestDist >= len([]rune(best)) {
		return ""
	}
	return best
}

// distance is the optimal string alignment distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
