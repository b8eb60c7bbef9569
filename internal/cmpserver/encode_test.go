package cmpserver

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/params"
)

// TestAppendAnnouncements: the announcement's wire form reads back as the
// message proto.Marshal encodes, and a string proto.Marshal refuses is
// left to it.
func TestAppendAnnouncements(t *testing.T) {
	big := map[string]string{}
	for i := range 5000 {
		big[fmt.Sprintf("group%d.key%d", i/20, i%20)] = fmt.Sprintf("value %d", i)
	}
	long := string(make([]byte, 300)) // lengths of two varint bytes
	for _, tc := range []struct {
		name  string
		anns  []params.Announcement
		valid bool
	}{
		{"none", nil, true},
		{"empty", []params.Announcement{{}}, true},
		{"all fields", []params.Announcement{{
			Name: "n", Title: "T", Tooltip: "tip ✓", Required: true, ItemType: params.ItemString,
			CollectionType: params.CollectionMap, String: "s", Array: []string{"a", "", "ü"},
			Map: map[string]string{"": "", "k": "", "a.b[0]": "x"},
		}}, true},
		{"many", []params.Announcement{
			{Name: "a", Array: []string{long}},
			{Name: "b", Map: big, Tooltip: long},
			{Name: "c", Required: false, String: long},
		}, true},
		{"invalid key", []params.Announcement{{Name: "n", Map: map[string]string{"\xff": "v"}}}, false},
		{"invalid value", []params.Announcement{{Name: "n", Map: map[string]string{"k": "\xc3"}}}, false},
		{"invalid item", []params.Announcement{{Name: "n", Array: []string{"\xff"}}}, false},
		{"invalid name", []params.Announcement{{Name: "\xff"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := announcementResponse(tc.anns)
			_, err := proto.Marshal(want)
			if (err == nil) != tc.valid {
				t.Fatalf("proto.Marshal: %v, want valid %v", err, tc.valid)
			}
			b, ok := appendAnnouncements([]byte("prefix"), tc.anns)
			if ok != tc.valid {
				t.Fatalf("appendAnnouncements: ok %v, want %v", ok, tc.valid)
			}
			if !ok {
				return
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("appendAnnouncements did not append: %q", b[:6])
			}
			if size := len(b) - 6; size != proto.Size(want) {
				t.Errorf("%d bytes, proto.Size says %d", size, proto.Size(want))
			}
			got := &pluginpb.ParametersAnnouncementResponse{}
			if err := proto.Unmarshal(b[6:], got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(want, got) {
				t.Errorf("read back as %v, want %v", got, want)
			}
		})
	}
}
