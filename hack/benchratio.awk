# benchratio.awk: reads `go test -bench` output and prints, for each pair
# "strata benchmark = peer benchmark" given in PAIRS (semicolon-separated),
# the median ns/op of both and how many times faster strata is.
#   go test -bench ... | awk -v PAIRS='Merge/provenance=false=HelmMergeMaps' -f hack/benchratio.awk
{ print }
/^Benchmark/ {
	name = $1
	sub(/^Benchmark/, "", name)
	sub(/-[0-9]+$/, "", name)
	for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") { n[name]++; v[name, n[name]] = $i }
}
function median(name,    i, j, t, k) {
	k = n[name]
	for (i = 1; i <= k; i++) a[i] = v[name, i]
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	np = split(PAIRS, pairs, ";")
	print ""
	printf "%-38s %14s %-22s %14s %8s\n", "strata", "ms/op", "peer", "ms/op", "speedup"
	for (p = 1; p <= np; p++) {
		split(pairs[p], ab, "=")
		# names may contain "=", so split on the last one
		idx = 0
		for (i = length(pairs[p]); i > 0; i--) if (substr(pairs[p], i, 1) == "=") { idx = i; break }
		s = substr(pairs[p], 1, idx - 1); h = substr(pairs[p], idx + 1)
		if (!n[s] || !n[h]) { printf "%-38s missing results\n", pairs[p]; continue }
		ms = median(s) / 1e6; mh = median(h) / 1e6
		printf "%-38s %14.2f %-22s %14.2f %7.2fx\n", s, ms, h, mh, mh / ms
	}
}
