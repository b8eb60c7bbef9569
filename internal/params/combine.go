package params

import "fmt"

// Combine returns the announcements a plugin makes for an application: the
// static ones (from plugin.yaml) followed by the dynamic ones (from the
// parameters command), each in its order, one per name. On a clash the
// static announcement wins and a warning names the dynamic one dropped;
// within one list the first of a name wins. The inputs are not changed.
//
// Combine does not validate; decode both lists with ParseAnnouncements or
// DecodeAnnouncements first.
func Combine(static, dynamic []Announcement) ([]Announcement, []Warning) {
	out := make([]Announcement, 0, len(static)+len(dynamic))
	var warnings []Warning
	type origin struct {
		static bool
		index  int
	}
	seen := make(map[string]origin, len(static)+len(dynamic))
	add := func(a Announcement, isStatic bool, i int) {
		first, dup := seen[a.Name]
		if !dup {
			seen[a.Name] = origin{isStatic, i}
			out = append(out, a)
			return
		}
		list := "dynamic"
		if isStatic {
			list = "static"
		}
		var msg string
		switch {
		case first.static && !isStatic:
			msg = fmt.Sprintf("the dynamic announcement [%d] is ignored: static announcement [%d] has the same name and wins; rename one of them", i, first.index)
		default:
			msg = fmt.Sprintf("the %s announcement [%d] is ignored: %s announcement [%d] has the same name; rename one of them", list, i, list, first.index)
		}
		warnings = append(warnings, Warning{Kind: "announcement", Index: -1, Name: a.Name, Msg: msg})
	}
	for i, a := range static {
		add(a, true, i)
	}
	for i, a := range dynamic {
		add(a, false, i)
	}
	return out, warnings
}
