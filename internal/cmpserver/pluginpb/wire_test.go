package pluginpb_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// describe lists a message's fields as "number name kind[ repeated|map]".
func describe(md protoreflect.MessageDescriptor) []string {
	var out []string
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		kind := f.Kind().String()
		if f.Kind() == protoreflect.MessageKind {
			kind = string(f.Message().FullName())
		}
		switch {
		case f.IsMap():
			kind = "map<" + f.MapKey().Kind().String() + "," + f.MapValue().Kind().String() + ">"
		case f.IsList():
			kind = "repeated " + kind
		}
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			kind += " oneof " + string(o.Name())
		}
		out = append(out, fmt.Sprintf("%d %s %s", f.Number(), f.Name(), kind))
	}
	sort.Strings(out)
	return out
}

// TestWireContract pins every message and field number of Argo CD's config
// management plugin protocol: a real repo-server must work unmodified.
func TestWireContract(t *testing.T) {
	want := map[string][]string{
		"plugin.AppStreamRequest":        {"1 metadata plugin.ManifestRequestMetadata oneof request", "2 file plugin.File oneof request"},
		"plugin.ManifestRequestMetadata": {"1 appName string", "2 appRelPath string", "3 checksum string", "4 size int64", "5 env repeated plugin.EnvEntry"},
		"plugin.EnvEntry":                {"1 name string", "2 value string"},
		"plugin.File":                    {"1 chunk bytes"},
		"plugin.ManifestResponse":        {"1 manifests repeated string", "2 sourceType string"},
		"plugin.RepositoryResponse":      {"1 isSupported bool", "2 isDiscoveryEnabled bool"},
		"plugin.ParametersAnnouncementResponse": {
			"1 parameterAnnouncements repeated repository.ParameterAnnouncement"},
		"plugin.CheckPluginConfigurationResponse": {"1 isDiscoveryConfigured bool", "2 provideGitCreds bool"},
		"repository.ParameterAnnouncement": {"1 name string", "2 title string", "3 tooltip string", "4 required bool",
			"5 itemType string", "6 collectionType string", "7 string string", "8 array repeated string", "9 map map<string,string>"},
	}
	msgs := []protoreflect.ProtoMessage{
		&pluginpb.AppStreamRequest{}, &pluginpb.ManifestRequestMetadata{}, &pluginpb.EnvEntry{}, &pluginpb.File{},
		&pluginpb.ManifestResponse{}, &pluginpb.RepositoryResponse{}, &pluginpb.ParametersAnnouncementResponse{},
		&pluginpb.CheckPluginConfigurationResponse{}, &pluginpb.ParameterAnnouncement{},
	}
	for _, m := range msgs {
		md := m.ProtoReflect().Descriptor()
		name := string(md.FullName())
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected message %s", name)
			continue
		}
		sort.Strings(w)
		if diff := cmp.Diff(w, describe(md)); diff != "" {
			t.Errorf("%s fields (-want +got):\n%s", name, diff)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("message %s missing", name)
	}

	sd := pluginpb.File_cmpserver_pluginpb_plugin_proto.Services().ByName("ConfigManagementPluginService")
	if sd == nil || sd.FullName() != "plugin.ConfigManagementPluginService" {
		t.Fatalf("service plugin.ConfigManagementPluginService missing")
	}
	var rpcs []string
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		stream := ""
		if m.IsStreamingClient() {
			stream = "stream "
		}
		rpcs = append(rpcs, fmt.Sprintf("%s(%s%s) %s", m.Name(), stream, m.Input().FullName(), m.Output().FullName()))
	}
	wantRPCs := []string{
		"GenerateManifest(stream plugin.AppStreamRequest) plugin.ManifestResponse",
		"MatchRepository(stream plugin.AppStreamRequest) plugin.RepositoryResponse",
		"GetParametersAnnouncement(stream plugin.AppStreamRequest) plugin.ParametersAnnouncementResponse",
		"CheckPluginConfiguration(google.protobuf.Empty) plugin.CheckPluginConfigurationResponse",
	}
	if diff := cmp.Diff(strings.Join(wantRPCs, "\n"), strings.Join(rpcs, "\n")); diff != "" {
		t.Errorf("RPCs (-want +got):\n%s", diff)
	}
}
