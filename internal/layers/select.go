package layers

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoApp and ErrSeveralApps are the errors SelectApp wraps when it finds
// no App or cannot choose one.
var (
	ErrNoApp       = errors.New("no App")
	ErrSeveralApps = errors.New("several Apps")
)

// SelectApp picks the App to render from the Apps of one file (ReadApps),
// as `strata layers render --app` does. want is "NAMESPACE/NAME" or a bare
// NAME; empty picks the file's only App. source names the file in errors,
// and how says how the user names an App (for the command line,
// "--app NAMESPACE/NAME"). An App whose name matches in two namespaces, or
// an empty want with several Apps, is an error listing them.
func SelectApp(apps []AppDoc, source, want, how string) (AppDoc, error) {
	var names []string
	var match []AppDoc
	for _, a := range apps {
		name := AppName(a.App)
		names = append(names, name)
		if want == "" || want == name || want == a.App.Name {
			match = append(match, a)
		}
	}
	switch {
	case len(apps) == 0:
		return AppDoc{}, fmt.Errorf("%s holds %w (apiVersion application.giantswarm.io/v1alpha1, kind App)", source, ErrNoApp)
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return AppDoc{}, fmt.Errorf("%s holds %w %q; it holds %s", source, ErrNoApp, want, strings.Join(names, ", "))
	}
	return AppDoc{}, fmt.Errorf("%s holds %w (%s): choose one with %s", source, ErrSeveralApps, strings.Join(names, ", "), how)
}
