package golden

import (
	"bytes"
	"strings"
)

// The txtar format (golang.org/x/tools/txtar): a comment, then sections,
// each a marker line "-- name --" and the lines up to the next marker line.
// txtar.Parse returns the sections' bodies but not where they lie, which a
// rewrite that keeps the rest of the archive byte for byte needs; scan reads
// the archive the same way and returns the offsets. A test holds it to
// agreeing with txtar.Parse on any input.

var (
	newlineMarker = []byte("\n-- ")
	markerStart   = []byte("-- ")
	markerEnd     = []byte(" --")
)

// A span is where one part of an archive lies: a section's marker line is
// data[marker:start] and its body data[start:end]. For the comment, marker
// and start are 0 and name is empty.
type span struct {
	name               string
	marker, start, end int
}

// text is the body as txtar.Parse reads it: a final body that does not end
// in a newline gets one.
func (s span) text(data []byte) string {
	body := string(data[s.start:s.end])
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body
}

// scan splits an archive into its comment and its sections.
func scan(data []byte) (comment span, sections []span) {
	cur := span{}
	inComment := true
	flush := func(end int) {
		cur.end = end
		if inComment {
			comment, inComment = cur, false
		} else {
			sections = append(sections, cur)
		}
	}
	i := 0
	for {
		if name, n := marker(data[i:]); name != "" {
			flush(i)
			cur = span{name: name, marker: i, start: i + n}
			i += n
			continue
		}
		j := bytes.Index(data[i:], newlineMarker)
		if j < 0 {
			flush(len(data))
			return comment, sections
		}
		i += j + 1
	}
}

// marker reports whether data begins with a marker line, returning the
// section name and the length of the line with its newline; name is empty
// if it does not.
func marker(data []byte) (name string, n int) {
	if !bytes.HasPrefix(data, markerStart) {
		return "", 0
	}
	line := data
	n = len(data)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line, n = data[:i], i+1
		line = bytes.TrimSuffix(line, []byte("\r"))
	}
	if !bytes.HasSuffix(line, markerEnd) || len(line) < len(markerStart)+len(markerEnd) {
		return "", 0
	}
	return strings.TrimSpace(string(line[len(markerStart) : len(line)-len(markerEnd)])), n
}

// findSection returns the span of the first section named name.
func findSection(data []byte, name string) (span, bool) {
	_, sections := scan(data)
	for _, s := range sections {
		if s.name == name {
			return s, true
		}
	}
	return span{}, false
}

// duplicateSection returns a section name the archive holds more than once.
func duplicateSection(data []byte) (string, bool) {
	_, sections := scan(data)
	seen := make(map[string]bool, len(sections))
	for _, s := range sections {
		if seen[s.name] {
			return s.name, true
		}
		seen[s.name] = true
	}
	return "", false
}

// markerLine is the marker line of s, without its line ending.
func markerLine(data []byte, s span) string {
	return strings.TrimRight(string(data[s.marker:s.start]), "\r\n")
}
