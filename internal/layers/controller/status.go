package controller

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers"
)

// ConditionReady is the App condition that says whether the outputs hold
// the App's current merged values.
const ConditionReady = "Ready"

// Reasons of the Ready condition, also the reasons of the Events recorded
// with it. Kubernetes condition reasons are CamelCase: ConfigMapMergeFailed
// and SecretMergeFailed are Giant Swarm app-operator's
// configmap-merge-failed and secret-merge-failed.
const (
	// ReasonValuesMerged: the outputs hold the merged values (Ready True).
	ReasonValuesMerged = "ValuesMerged"
	// ReasonNamespaceNotAllowed: the App (or its Catalog) names a layer
	// in a namespace the App may not read; nothing of it was read. The
	// message names the field and the administrator's setting.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonInvalidSpec: the App or its Catalog lists its layers wrongly;
	// the message has one line per problem, each naming the field.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCatalogNotFound: the App's Catalog does not exist.
	ReasonCatalogNotFound = "CatalogNotFound"
	// ReasonConfigMapMergeFailed: a ConfigMap layer is missing, has no
	// (or an ambiguous) values key, or holds invalid YAML.
	ReasonConfigMapMergeFailed = "ConfigMapMergeFailed"
	// ReasonSecretMergeFailed: the same for a Secret layer.
	ReasonSecretMergeFailed = "SecretMergeFailed"
	// ReasonMergeFailed: merging failed for another reason.
	ReasonMergeFailed = "MergeFailed"
	// ReasonOutputConflict: an output's name is taken by an object the
	// App does not control.
	ReasonOutputConflict = "OutputConflict"
	// ReasonWriteFailed: the API server refused to write an output; the
	// write is retried with backoff.
	ReasonWriteFailed = "WriteFailed"
)

// ReasonValuesUpdated is the reason of the Normal Event recorded when the
// outputs change.
const ReasonValuesUpdated = "ValuesUpdated"

// Bounds of the messages written to the API server: a condition's message
// may hold 32768 bytes (the CRD's limit), an Event's note 1024.
const (
	maxConditionMessage = 8192
	maxEventNote        = 1000
)

// classify tells the reason of a Render error, or that it is transient
// (the cache could not be read): retried with backoff, status untouched.
func classify(err error) (reason string, transient bool) {
	var se *sourceError
	var le *document.LoadError
	switch {
	case errors.Is(err, layers.ErrNamespaceNotAllowed):
		return ReasonNamespaceNotAllowed, false
	case errors.Is(err, layers.ErrInvalid):
		return ReasonInvalidSpec, false
	case errors.As(err, &se):
		if se.transient {
			return "", true
		}
		return kindReason(se.Kind), false
	case errors.Is(err, layers.ErrCatalogNotFound):
		return ReasonCatalogNotFound, false
	case errors.As(err, &le):
		// The layers library names a layer's document "Kind ns/name field".
		return kindReason(firstWord(le.Source)), false
	case errors.Is(err, layers.ErrNoValuesKey), errors.Is(err, layers.ErrAmbiguousValuesKey):
		// Their messages start with the object: "Secret ns/name: ...".
		return kindReason(firstWord(err.Error())), false
	}
	return ReasonMergeFailed, false
}

func kindReason(kind string) string {
	switch kind {
	case layers.KindConfigMap:
		return ReasonConfigMapMergeFailed
	case layers.KindSecret:
		return ReasonSecretMergeFailed
	case layers.KindCatalog:
		return ReasonCatalogNotFound
	}
	return ReasonMergeFailed
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// truncate cuts s to at most n bytes on a rune boundary, saying how much
// was left out.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// The suffix for len(s) is at least as long as the one written.
	cut := max(n-len(fmt.Sprintf(" … (%d more bytes)", len(s))), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" … (%d more bytes)", len(s)-cut)
}
