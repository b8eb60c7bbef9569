package cli

import (
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/operator"
)

// bindWebhookFlags binds shell-operator's flags of the webhook servers
// (and strata's --*-webhook-url) onto s.Webhooks.
func bindWebhookFlags(fs *pflag.FlagSet, s *operator.Settings) {
	v, c := &s.Webhooks.Validating, &s.Webhooks.Conversion
	fs.StringVar(&v.ConfigurationName, "validating-webhook-configuration-name", v.ConfigurationName, "the ValidatingWebhookConfiguration is <this>-hooks ($VALIDATING_WEBHOOK_CONFIGURATION_NAME)")
	fs.StringVar(&v.ServiceName, "validating-webhook-service-name", v.ServiceName, "Service of the validating webhook server, in --namespace ($VALIDATING_WEBHOOK_SERVICE_NAME)")
	fs.StringVar(&v.ServerCert, "validating-webhook-server-cert", v.ServerCert, "server certificate of the validating webhook server, read again when it changes ($VALIDATING_WEBHOOK_SERVER_CERT)")
	fs.StringVar(&v.ServerKey, "validating-webhook-server-key", v.ServerKey, "its private key ($VALIDATING_WEBHOOK_SERVER_KEY)")
	fs.StringVar(&v.CA, "validating-webhook-ca", v.CA, "CA of the server certificate: the caBundle of the ValidatingWebhookConfiguration ($VALIDATING_WEBHOOK_CA)")
	fs.StringSliceVar(&v.ClientCA, "validating-webhook-client-ca", v.ClientCA, "CA of the client certificates the server requires; repeatable ($VALIDATING_WEBHOOK_CLIENT_CA, comma-separated)")
	fs.StringVar(&s.Webhooks.FailurePolicy, "validating-webhook-failure-policy", s.Webhooks.FailurePolicy, "failurePolicy of validating bindings that give none: Fail or Ignore ($VALIDATING_WEBHOOK_FAILURE_POLICY)")
	fs.StringVar(&v.ListenPort, "validating-webhook-listen-port", v.ListenPort, "port of the validating webhook server ($VALIDATING_WEBHOOK_LISTEN_PORT)")
	fs.StringVar(&v.ListenAddress, "validating-webhook-listen-address", v.ListenAddress, "address of the validating webhook server ($VALIDATING_WEBHOOK_LISTEN_ADDRESS)")
	fs.StringVar(&v.URL, "validating-webhook-url", v.URL, "strata: https base URL the API server calls instead of the Service, for an operator outside the cluster ($STRATA_VALIDATING_WEBHOOK_URL)")
	fs.StringVar(&c.ServiceName, "conversion-webhook-service-name", c.ServiceName, "Service of the conversion webhook server, in --namespace ($CONVERSION_WEBHOOK_SERVICE_NAME)")
	fs.StringVar(&c.ServerCert, "conversion-webhook-server-cert", c.ServerCert, "server certificate of the conversion webhook server, read again when it changes ($CONVERSION_WEBHOOK_SERVER_CERT)")
	fs.StringVar(&c.ServerKey, "conversion-webhook-server-key", c.ServerKey, "its private key ($CONVERSION_WEBHOOK_SERVER_KEY)")
	fs.StringVar(&c.CA, "conversion-webhook-ca", c.CA, "CA of the server certificate: the caBundle set in the CRDs' conversion ($CONVERSION_WEBHOOK_CA)")
	fs.StringSliceVar(&c.ClientCA, "conversion-webhook-client-ca", c.ClientCA, "CA of the client certificates the server requires; repeatable ($CONVERSION_WEBHOOK_CLIENT_CA, comma-separated)")
	fs.StringVar(&c.ListenPort, "conversion-webhook-listen-port", c.ListenPort, "port of the conversion webhook server ($CONVERSION_WEBHOOK_LISTEN_PORT)")
	fs.StringVar(&c.ListenAddress, "conversion-webhook-listen-address", c.ListenAddress, "address of the conversion webhook server ($CONVERSION_WEBHOOK_LISTEN_ADDRESS)")
	fs.StringVar(&c.URL, "conversion-webhook-url", c.URL, "strata: https base URL the API server calls instead of the Service ($STRATA_CONVERSION_WEBHOOK_URL)")
}
