// Package webhook serves the hooks' webhook bindings, as shell-operator
// serves them: kubernetesValidating hooks answer the API server's
// AdmissionReviews, kubernetesCustomResourceConversion hooks its
// ConversionReviews. It holds the HTTPS servers (certificates read from
// files and read again when they change), the review handlers (each review
// runs the bound hook synchronously, through a Runner the engine gives,
// and its answer file becomes the response), the conversion chains across
// several hooks' rules, and the registration on the cluster: the
// ValidatingWebhookConfiguration and each CRD's spec.conversion, applied
// server-side and kept up to date.
package webhook
