//go:build linux

package clustertest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// announcement is one entry of the parameters the repo-server returns.
type announcement struct {
	Name           string            `json:"name"`
	Title          string            `json:"title"`
	ItemType       string            `json:"itemType"`
	CollectionType string            `json:"collectionType"`
	String         string            `json:"string"`
	Array          []string          `json:"array"`
	Map            map[string]string `json:"map"`
}

// announced reads GetAppDetails' answer: its type and the plugin's
// announcement by name.
func announced(t *testing.T, res map[string]any) (string, map[string]announcement) {
	t.Helper()
	var r struct {
		Type   string `json:"type"`
		Plugin struct {
			ParametersAnnouncement []announcement `json:"parametersAnnouncement"`
		} `json:"plugin"`
	}
	data, _ := json.Marshal(res)
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("GetAppDetails answered %s: %v", data, err)
	}
	byName := map[string]announcement{}
	for _, a := range r.Plugin.ParametersAnnouncement {
		byName[a.Name] = a
	}
	return r.Type, byName
}

// TestAppDetails asks the repo-server for the parameters the Argo CD UI
// shows (GetAppDetails through Argo CD's own client): strata's test plugin
// announces its static and dynamic parameters with their defaults, and the
// built-in Helm plugin the values of the Application.
func TestAppDetails(t *testing.T) {
	t.Parallel()
	e := setup(t)
	query := func(app, path string, plugin map[string]any) map[string]any {
		return map[string]any{
			"repo":    map[string]any{"repo": e.repo.url},
			"appName": app,
			"source": map[string]any{
				"repoURL": e.repo.url, "targetRevision": "main", "path": path, "plugin": plugin,
			},
		}
	}

	typ, got := announced(t, e.appDetails(t, query("details-cmp", "cmp", map[string]any{
		"name":       e2ePlugin,
		"parameters": []any{map[string]any{"name": "greeting", "string": "hi"}},
	})))
	if typ != "Plugin" {
		t.Errorf("type %q, want Plugin", typ)
	}
	want := map[string]announcement{
		"greeting": {Name: "greeting", Title: "Greeting", String: "hello"},
		"replicas": {Name: "replicas", Title: "Replicas", ItemType: "number", String: "1"},
		"zones":    {Name: "zones", CollectionType: "array", Array: []string{"a"}},
		"labels":   {Name: "labels", CollectionType: "map", Map: map[string]string{"tier": "bronze"}},
		"region":   {Name: "region", Title: "Region", String: "eu-west-1"},
		"fail":     {Name: "fail", ItemType: "boolean", String: "false"},
	}
	for name, w := range want {
		g, ok := got[name]
		// Argo CD's types default itemType and collectionType as the
		// plugin sends them; compare what the plugin.yaml sets.
		if w.ItemType == "" {
			g.ItemType = ""
		}
		if w.CollectionType == "" {
			g.CollectionType = ""
		}
		if !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("strata-e2e announces %s = %+v (present %v), want %+v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("strata-e2e announces %d parameters, want %d: %+v", len(got), len(want), got)
	}

	typ, got = announced(t, e.appDetails(t, query("details-helm", "chart", map[string]any{
		"name": helmPlugin,
		"parameters": []any{
			map[string]any{"name": "values-files", "array": []any{"values-prod.yaml"}},
			map[string]any{"name": "helm-parameters", "map": map[string]any{"replicaCount": "3"}},
		},
	})))
	if typ != "Plugin" {
		t.Errorf("type %q, want Plugin", typ)
	}
	if a := got["values-files"]; !reflect.DeepEqual(a.Array, []string{"values-prod.yaml"}) || a.CollectionType != "array" {
		t.Errorf("values-files announced as %+v, want the Application's [values-prod.yaml]", a)
	}
	hp := got["helm-parameters"].Map
	for k, v := range map[string]string{"greeting": "hello from prod", "tier": "gold", "replicaCount": "3"} {
		if hp[k] != v {
			t.Errorf("helm-parameters announces %s=%q, want %q (the chart's values with the Application's): %v", k, hp[k], v, hp)
		}
	}
	if a := got["release-name"]; a.String != "details-helm" {
		t.Errorf("release-name announced as %+v, want the Application's name as its default", a)
	}
}
