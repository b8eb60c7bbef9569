package cmpserver

import (
	"slices"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/params"
)

// An encoded message is a response in its wire form already, which the
// server's codec sends as it is.
type encoded []byte

// codec is gRPC's protobuf codec, except that it sends an *encoded as it
// is: a large announcement is encoded directly (appendAnnouncements), in
// a fraction of the time the generic, reflective map encoding takes.
type codec struct{ encoding.CodecV2 }

func newCodec() codec { return codec{encoding.GetCodecV2("proto")} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*encoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(*e)}, nil
	}
	return c.CodecV2.Marshal(v)
}

// announcementResponse is the response announcing anns.
func announcementResponse(anns []params.Announcement) *pluginpb.ParametersAnnouncementResponse {
	resp := &pluginpb.ParametersAnnouncementResponse{ParameterAnnouncements: make([]*pluginpb.ParameterAnnouncement, 0, len(anns))}
	for _, a := range anns {
		resp.ParameterAnnouncements = append(resp.ParameterAnnouncements, &pluginpb.ParameterAnnouncement{
			Name: a.Name, Title: a.Title, Tooltip: a.Tooltip, Required: a.Required,
			ItemType: string(a.ItemType), CollectionType: string(a.CollectionType),
			String_: a.String, Array: a.Array, Map: a.Map,
		})
	}
	return resp
}

// appendAnnouncements appends the wire form of announcementResponse(anns)
// to b: what proto.Marshal gives, but for the order of map entries, which
// protobuf leaves free (proto.Marshal takes Go's map order). It returns
// false when a string is not valid UTF-8, which proto.Marshal refuses
// (the caller then lets it say so).
//
// The fields are those of ParameterAnnouncement in plugin.proto: 1 name,
// 2 title, 3 tooltip, 4 required, 5 itemType, 6 collectionType, 7 string,
// 8 array (repeated), 9 map (entries of key 1, value 2); proto3, so
// empty strings and false are left out, but not list items or map
// entries' fields.
func appendAnnouncements(b []byte, anns []params.Announcement) ([]byte, bool) {
	sizes := make([]int, len(anns))
	total := 0
	for i, a := range anns {
		sizes[i] = announcementSize(a)
		total += 1 + protowire.SizeBytes(sizes[i])
	}
	b = slices.Grow(b, total)
	for i, a := range anns {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i]))
		var ok bool
		if b, ok = appendAnnouncement(b, a); !ok {
			return nil, false
		}
	}
	return b, true
}

// stringSize is the size of a string field numbered 1 to 15.
func stringSize(s string, always bool) int {
	if s == "" && !always {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

// announcementSize is the size of a's wire form (appendAnnouncement).
func announcementSize(a params.Announcement) int {
	n := stringSize(a.Name, false) + stringSize(a.Title, false) + stringSize(a.Tooltip, false) +
		stringSize(string(a.ItemType), false) + stringSize(string(a.CollectionType), false) + stringSize(a.String, false)
	if a.Required {
		n += 2
	}
	for _, s := range a.Array {
		n += stringSize(s, true)
	}
	for k, v := range a.Map {
		n += 1 + protowire.SizeBytes(mapEntrySize(k, v))
	}
	return n
}

func mapEntrySize(k, v string) int { return stringSize(k, true) + stringSize(v, true) }

func appendAnnouncement(b []byte, a params.Announcement) ([]byte, bool) {
	ok := true
	str := func(num protowire.Number, s string, always bool) {
		if s == "" && !always {
			return
		}
		if !utf8.ValidString(s) {
			ok = false
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	str(1, a.Name, false)
	str(2, a.Title, false)
	str(3, a.Tooltip, false)
	if a.Required {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	str(5, string(a.ItemType), false)
	str(6, string(a.CollectionType), false)
	str(7, a.String, false)
	for _, s := range a.Array {
		str(8, s, true)
	}
	for k, v := range a.Map {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, false
		}
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(mapEntrySize(k, v)))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, v)
	}
	return b, ok
}
