package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Webhook calls an HTTP endpoint with the hook request as a JSON POST body. The fields are
// Metacontroller's: a webhook written for Metacontroller works unchanged.
//
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.service)",message="exactly one of url or service must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.authorization) && has(self.basicAuth))",message="authorization and basicAuth are mutually exclusive"
type Webhook struct {
	// URL is the full address of the hook.
	// +optional
	URL *string `json:"url,omitempty"`
	// Timeout of one request; defaults to 10s.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Path is appended to the service's address.
	// +optional
	Path *string `json:"path,omitempty"`
	// Service addresses an in-cluster Service instead of a URL.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`
	// Etag caches responses by the ETag the hook sends, and asks the hook with If-None-Match
	// whether the cached response still holds.
	// +optional
	Etag *WebhookEtag `json:"etag,omitempty"`
	// ResponseUnMarshallMode is loose (unknown top-level fields of the response are ignored,
	// a duplicated key keeps its last value) or strict (either is an error). Defaults to
	// loose for version v1 hooks and strict for version v2 hooks.
	// +optional
	// +kubebuilder:validation:Enum=loose;strict
	ResponseUnMarshallMode *ResponseUnMarshallMode `json:"responseUnMarshallMode,omitempty"`
	// WebhookConnection says how to reach and authenticate to the endpoint. When any of its
	// fields is set it replaces, as a whole, the controller's spec.endpointConfigs entry for
	// the webhook's host.
	WebhookConnection `json:",inline"`
}

// ResponseUnMarshallMode says how strictly a webhook response is decoded.
type ResponseUnMarshallMode string

const (
	ResponseUnMarshallModeLoose  ResponseUnMarshallMode = "loose"
	ResponseUnMarshallModeStrict ResponseUnMarshallMode = "strict"
)

// WebhookEtag configures the ETag cache of one webhook (RFC 7232): a 200 response carrying
// an ETag header is kept for the request that produced it; the next identical request sends
// If-None-Match, and a 304 or 412 answer reuses the kept response.
type WebhookEtag struct {
	// Enabled turns the cache on; default false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// CacheTimeoutSeconds is how long a kept response may be reused; default 600.
	// +optional
	// +kubebuilder:validation:Minimum=1
	CacheTimeoutSeconds *int32 `json:"cacheTimeoutSeconds,omitempty"`
	// CacheCleanupSeconds is how often expired responses are dropped; default 60.
	// +optional
	// +kubebuilder:validation:Minimum=1
	CacheCleanupSeconds *int32 `json:"cacheCleanupSeconds,omitempty"`
}

// WebhookConnection is how the engine connects and authenticates to a webhook endpoint:
// which CAs it trusts, which credentials it sends, which client certificate it presents.
// Referenced Secrets and ConfigMaps are read when the controller is built.
type WebhookConnection struct {
	// CABundle are the CAs that verify the server's certificate; the system roots when unset.
	// +optional
	CABundle *CABundle `json:"caBundle,omitempty"`
	// Authorization sends `Authorization: <type> <credential>` with every request.
	// Mutually exclusive with basicAuth.
	// +optional
	Authorization *WebhookAuthorization `json:"authorization,omitempty"`
	// BasicAuth sends HTTP Basic credentials with every request. Mutually exclusive with
	// authorization.
	// +optional
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`
	// ClientTLS presents a client certificate (mutual TLS).
	// +optional
	ClientTLS *ClientTLS `json:"clientTLS,omitempty"`
}

// IsSet reports whether any connection field is set.
func (c *WebhookConnection) IsSet() bool {
	return c.CABundle != nil || c.Authorization != nil || c.BasicAuth != nil || c.ClientTLS != nil
}

// CABundle gives PEM-encoded CA certificates in exactly one way.
//
// +kubebuilder:validation:XValidation:rule="(has(self.inline) ? 1 : 0) + (has(self.secretRef) ? 1 : 0) + (has(self.configMapRef) ? 1 : 0) == 1",message="exactly one of inline, secretRef or configMapRef must be set"
type CABundle struct {
	// Inline is the PEM text itself.
	// +optional
	Inline *string `json:"inline,omitempty"`
	// SecretRef reads the PEM text from a key of a Secret (default key ca.crt).
	// +optional
	SecretRef *CABundleKeyRef `json:"secretRef,omitempty"`
	// ConfigMapRef reads the PEM text from a key of a ConfigMap (default key ca.crt).
	// +optional
	ConfigMapRef *CABundleKeyRef `json:"configMapRef,omitempty"`
}

// CABundleKeyRef names one key of a Secret or ConfigMap holding CA certificates.
type CABundleKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Key defaults to ca.crt.
	// +optional
	Key string `json:"key,omitempty"`
}

// WebhookAuthorization sends a credential kept in a Secret as an Authorization header.
//
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type.lowerAscii() != 'basic'",message="authorization.type must not be Basic: use basicAuth"
type WebhookAuthorization struct {
	// Type is the scheme, e.g. Bearer or Token; default Bearer. Never Basic: use basicAuth.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	// +kubebuilder:validation:MaxLength=64
	Type string `json:"type,omitempty"`
	// SecretRef names the Secret key holding the credential.
	SecretRef SecretKeyRef `json:"secretRef"`
}

// SecretKeyRef names one key of a Secret.
type SecretKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// SecretRef names a Secret.
type SecretRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// BasicAuth reads a username and a password from one Secret.
type BasicAuth struct {
	SecretRef SecretRef `json:"secretRef"`
	// UsernameKey defaults to username.
	// +optional
	UsernameKey string `json:"usernameKey,omitempty"`
	// PasswordKey defaults to password.
	// +optional
	PasswordKey string `json:"passwordKey,omitempty"`
}

// ClientTLS reads a PEM client certificate and its private key from one Secret.
type ClientTLS struct {
	SecretRef SecretRef `json:"secretRef"`
	// CertKey defaults to tls.crt.
	// +optional
	CertKey string `json:"certKey,omitempty"`
	// PrivateKeyKey defaults to tls.key.
	// +optional
	PrivateKeyKey string `json:"privateKeyKey,omitempty"`
}

// EndpointConfig gives the connection settings of every webhook of a controller whose host
// is Host. A webhook that sets any connection field of its own ignores the entry.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.authorization) && has(self.basicAuth))",message="authorization and basicAuth are mutually exclusive"
type EndpointConfig struct {
	// Host is host or host:port, compared without case; ports 80 and 443 are the same as
	// no port. A service webhook's host is name.namespace, with :port unless it is 80.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=261
	Host              string `json:"host"`
	WebhookConnection `json:",inline"`
}

// ServiceReference addresses a Service in the cluster.
type ServiceReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Port defaults to 80.
	// +optional
	Port *int32 `json:"port,omitempty"`
	// Protocol is http (default) or https.
	// +optional
	// +kubebuilder:validation:Enum=http;https
	Protocol *string `json:"protocol,omitempty"`
}
