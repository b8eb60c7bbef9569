package document

import "strings"

// Closest returns the candidate a misspelt name most likely meant: one that
// differs from s only by case, else the nearest within two edits (case
// ignored), else "". Error messages use it for "did you mean" hints.
func Closest(s string, candidates []string) string {
	return ClosestWithin(s, candidates, 2)
}

// ClosestWithin is Closest with the largest edit distance accepted.
func ClosestWithin(s string, candidates []string, maxEdits int) string {
	best, bestD := "", maxEdits+1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		if d := EditDistance(ls, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, counted in
// bytes. Names longer than 64 bytes are never close: the distance is then
// larger than any threshold a hint uses, and the cost stays bounded.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
